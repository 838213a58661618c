//! The memory-bandwidth workload, STREAM's pattern (Debian packages no
//! STREAM). Threads that start together each own a slice of three arrays
//! far larger than the LLCs, touched first by the thread itself, so that
//! its pages sit in the node it ran on then, as STREAM's parallel
//! initialisation puts them. Every run does the four kernels (copy c = a,
//! scale b = s c, add c = a + b, triad a = b + s c), each one a parallel
//! section that ends in a barrier, where the threads that finish first
//! sleep and are woken for the next kernel: a scheduler places them again
//! four times a run. Reported, as STREAM does: the best rate of each kernel
//! over the runs after the first, in MB/s (10^6 bytes); and where the
//! threads ran, which is what a scheduler decides here and what carries
//! over from a VM, whose bandwidth is not a machine's.

use std::sync::{Arc, Barrier};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use sisutil_proto::topology::Layout;

/// STREAM's scalar.
const SCALAR: f64 = 3.0;

/// STREAM's smallest default array: 10 million elements.
const STREAM_ELEMS: u64 = 10_000_000;

#[derive(Clone, Debug, clap::Args)]
pub struct Config {
    /// Threads (default: one per LLC, where each LLC can hold one stream)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Runs of the four kernels (STREAM's NTIMES); the first is not
    /// counted. At most 200: the triad multiplies the values by 15 a run,
    /// and f64 ends near 15^260.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..=200))]
    pub runs: u32,
    /// Elements of each array, all threads together (default: four times
    /// the LLCs' total size, and at least STREAM's 10 million)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1024..))]
    pub elements: Option<u64>,
    /// Print one JSON object instead of text
    #[arg(long)]
    pub json: bool,
}

/// The four kernels, in STREAM's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    Copy,
    Scale,
    Add,
    Triad,
}

const KERNELS: [Kernel; 4] = [Kernel::Copy, Kernel::Scale, Kernel::Add, Kernel::Triad];

impl Kernel {
    fn name(self) -> &'static str {
        match self {
            Kernel::Copy => "Copy",
            Kernel::Scale => "Scale",
            Kernel::Add => "Add",
            Kernel::Triad => "Triad",
        }
    }

    /// Arrays the kernel reads or writes, as STREAM counts its bytes.
    fn arrays(self) -> u64 {
        match self {
            Kernel::Copy | Kernel::Scale => 2,
            Kernel::Add | Kernel::Triad => 3,
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub copy_mbs: f64,
    pub scale_mbs: f64,
    pub add_mbs: f64,
    pub triad_mbs: f64,
    pub threads: u32,
    pub elements: u64,
    pub runs: u32,
    /// LLCs the threads started in: where fork balancing put them, before
    /// any wakeup could move one.
    #[serde(default)]
    pub start_llcs: f64,
    /// LLCs that held at least one thread, averaged over the kernels run.
    pub llcs_used: f64,
    /// The most threads in one LLC, averaged over the kernels run.
    pub llc_max: f64,
    pub nodes_used: f64,
    pub node_max: f64,
    /// Percent of a thread's kernels run outside the node where it first
    /// touched its arrays.
    pub remote_pct: f64,
    /// Percent of a thread's kernels run on another CPU than its last one.
    pub moved_pct: f64,
    pub seconds: f64,
}

/// One thread's slice of the three arrays, and where it ran.
struct Slice {
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    /// The CPU at first touch, then at the start of every kernel.
    first_cpu: usize,
    cpus: Vec<usize>,
}

fn current_cpu() -> usize {
    // SAFETY: sched_getcpu has no preconditions; -1 means it failed.
    let cpu = unsafe { libc::sched_getcpu() };
    cpu.max(0) as usize
}

fn run_kernel(k: Kernel, s: &mut Slice) {
    let (a, b, c) = (&mut s.a, &mut s.b, &mut s.c);
    match k {
        Kernel::Copy => c.copy_from_slice(a),
        Kernel::Scale => b
            .iter_mut()
            .zip(c.iter())
            .for_each(|(b, c)| *b = SCALAR * c),
        Kernel::Add => {
            for ((c, a), b) in c.iter_mut().zip(a.iter()).zip(b.iter()) {
                *c = a + b;
            }
        }
        Kernel::Triad => {
            for ((a, b), c) in a.iter_mut().zip(b.iter()).zip(c.iter()) {
                *a = b + SCALAR * c;
            }
        }
    }
}

/// When a thread ran one kernel, in seconds from the run's start.
type Span = (f64, f64);

/// One thread: it allocates and touches its slice, then runs every kernel
/// between two barriers, noting when it started and finished each.
fn worker(len: usize, runs: u32, barrier: &Barrier, t0: Instant) -> (Slice, Vec<[Span; 4]>) {
    let mut s = Slice {
        first_cpu: current_cpu(),
        a: vec![1.0; len],
        b: vec![2.0; len],
        // -0.0 is not all-zero bits: the pages are written here, not
        // mapped zeroed and left for the first kernel to touch.
        c: vec![-0.0; len],
        cpus: Vec::with_capacity(runs as usize * KERNELS.len()),
    };
    let mut spans = Vec::with_capacity(runs as usize);
    for _ in 0..runs {
        let mut row = [(0.0, 0.0); 4];
        for (i, &k) in KERNELS.iter().enumerate() {
            barrier.wait();
            let start = t0.elapsed().as_secs_f64();
            s.cpus.push(current_cpu());
            run_kernel(k, &mut s);
            row[i] = (start, t0.elapsed().as_secs_f64());
            barrier.wait();
        }
        spans.push(row);
    }
    (s, spans)
}

/// Each kernel's time in each run, as STREAM times its parallel region:
/// from the first thread's start to the last one's finish. One thread's
/// own clock would miss the head start of threads that left the barrier
/// before it woke, and overstate the rate (by 14-27% with 2 threads).
fn kernel_times(spans: &[Vec<[Span; 4]>]) -> Vec<[f64; 4]> {
    let runs = spans.iter().map(Vec::len).min().unwrap_or(0);
    (0..runs)
        .map(|run| {
            let mut row = [0.0; 4];
            for (i, t) in row.iter_mut().enumerate() {
                let first = spans
                    .iter()
                    .map(|s| s[run][i].0)
                    .fold(f64::INFINITY, f64::min);
                let last = spans.iter().map(|s| s[run][i].1).fold(0.0, f64::max);
                *t = last - first;
            }
            row
        })
        .collect()
}

/// The values every element must hold after @runs runs: a, b, c start at
/// 1, 2, 0 and each run does c = a, b = s c, c = a + b, a = b + s c.
fn expected(runs: u32) -> (f64, f64, f64) {
    let (mut a, mut b, mut c) = (1.0f64, 2.0f64, 0.0f64);
    for _ in 0..runs {
        c = a;
        b = SCALAR * c;
        c = a + b;
        a = b + SCALAR * c;
    }
    (a, b, c)
}

fn check(slices: &[Slice], runs: u32) -> Result<()> {
    let (ea, eb, ec) = expected(runs);
    let off = |v: f64, e: f64| ((v - e) / e).abs() > 1e-13;
    for (t, s) in slices.iter().enumerate() {
        for (name, arr, e) in [("a", &s.a, ea), ("b", &s.b, eb), ("c", &s.c, ec)] {
            if let Some(v) = arr.iter().find(|v| off(**v, e)) {
                bail!(
                    "thread {t}: array {name} holds {v}, expected {e}: the kernels did not all run"
                );
            }
        }
    }
    Ok(())
}

/// Bytes of all LLCs together, from sysfs (32 MiB each where it says
/// nothing).
fn llc_bytes(layout: &Layout) -> u64 {
    layout
        .llcs
        .iter()
        .map(|llc| {
            let path = format!(
                "/sys/devices/system/cpu/cpu{}/cache/index3/size",
                llc.cpus[0]
            );
            std::fs::read_to_string(path)
                .ok()
                .and_then(|s| parse_size(s.trim()))
                .unwrap_or(32 << 20)
        })
        .sum()
}

/// "32768K" -> bytes.
fn parse_size(s: &str) -> Option<u64> {
    let (num, mult) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

/// Where the threads ran, from each thread's CPU at every kernel.
fn placement(slices: &[Slice], layout: &Layout, r: &mut Report) {
    let llc_of = |cpu: usize| layout.cpu_llc.get(cpu).copied().flatten().unwrap_or(0);
    let node_of = |cpu: usize| layout.llcs[llc_of(cpu)].node;
    let steps = slices.iter().map(|s| s.cpus.len()).min().unwrap_or(0);
    let (mut llcs_used, mut llc_max, mut nodes_used, mut node_max) = (0, 0, 0, 0);
    for step in 0..steps {
        let mut per_llc = std::collections::BTreeMap::<usize, usize>::new();
        let mut per_node = std::collections::BTreeMap::<usize, usize>::new();
        for s in slices {
            *per_llc.entry(llc_of(s.cpus[step])).or_default() += 1;
            *per_node.entry(node_of(s.cpus[step])).or_default() += 1;
        }
        llcs_used += per_llc.len();
        nodes_used += per_node.len();
        llc_max += per_llc.values().max().copied().unwrap_or(0);
        node_max += per_node.values().max().copied().unwrap_or(0);
    }
    let started: std::collections::BTreeSet<usize> =
        slices.iter().map(|s| llc_of(s.first_cpu)).collect();
    r.start_llcs = started.len() as f64;
    let (mut remote, mut moved, mut total) = (0usize, 0usize, 0usize);
    for s in slices {
        let home = node_of(s.first_cpu);
        let mut last = s.first_cpu;
        for &cpu in &s.cpus {
            remote += usize::from(node_of(cpu) != home);
            moved += usize::from(cpu != last);
            last = cpu;
            total += 1;
        }
    }
    let per_step = |v: usize| v as f64 / steps.max(1) as f64;
    let pct = |v: usize| 100.0 * v as f64 / total.max(1) as f64;
    r.llcs_used = per_step(llcs_used);
    r.llc_max = per_step(llc_max);
    r.nodes_used = per_step(nodes_used);
    r.node_max = per_step(node_max);
    r.remote_pct = pct(remote);
    r.moved_pct = pct(moved);
}

/// Best rate of each kernel over the runs after the first, in MB/s.
fn best_rates(times: &[[f64; 4]], elements: u64) -> [f64; 4] {
    let mut out = [0.0; 4];
    for (i, k) in KERNELS.iter().enumerate() {
        let best = times[1..]
            .iter()
            .map(|row| row[i])
            .fold(f64::INFINITY, f64::min);
        out[i] = (k.arrays() * elements * 8) as f64 / 1e6 / best.max(1e-9);
    }
    out
}

fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb << 10)
}

pub fn run(cfg: &Config) -> Result<Report> {
    let topo = scx_utils::Topology::new().context("cannot read the CPU topology")?;
    let layout = Layout::new(&topo)?;
    let threads = cfg.threads.unwrap_or(layout.llcs.len() as u32) as usize;
    let elements = cfg
        .elements
        .unwrap_or_else(|| (4 * llc_bytes(&layout) / 8).max(STREAM_ELEMS));
    let need = 3 * elements * 8;
    if let Some(avail) = available_bytes() {
        if need > avail / 10 * 9 {
            bail!(
                "three arrays of {elements} elements need {} MiB; {} MiB are available (use --elements)",
                need >> 20,
                avail >> 20
            );
        }
    }
    let len = (elements as usize).div_ceil(threads);
    let elements = (len * threads) as u64;
    let barrier = Arc::new(Barrier::new(threads));
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|idx| {
            let barrier = Arc::clone(&barrier);
            let runs = cfg.runs;
            std::thread::Builder::new()
                .name(format!("stream-{idx}"))
                .spawn(move || worker(len, runs, &barrier, start))
                .context("cannot start a thread")
        })
        .collect::<Result<_>>()?;
    let mut slices = Vec::with_capacity(threads);
    let mut spans = Vec::with_capacity(threads);
    for h in handles {
        let (s, t) = h
            .join()
            .map_err(|_| anyhow::anyhow!("a STREAM thread panicked"))?;
        slices.push(s);
        spans.push(t);
    }
    let seconds = start.elapsed().as_secs_f64();
    check(&slices, cfg.runs)?;
    let [copy, scale, add, triad] = best_rates(&kernel_times(&spans), elements);
    let mut r = Report {
        copy_mbs: copy,
        scale_mbs: scale,
        add_mbs: add,
        triad_mbs: triad,
        threads: threads as u32,
        elements,
        runs: cfg.runs,
        seconds,
        ..Report::default()
    };
    placement(&slices, &layout, &mut r);
    Ok(r)
}

pub fn main(cfg: &Config) -> Result<()> {
    let r = run(cfg)?;
    if cfg.json {
        println!("{}", serde_json::to_string(&r)?);
        return Ok(());
    }
    println!(
        "{} thread(s), {} elements per array ({} MiB), {} runs, {:.1} s",
        r.threads,
        r.elements,
        (r.elements * 8) >> 20,
        r.runs,
        r.seconds
    );
    println!("Function    Best Rate MB/s");
    for (k, v) in KERNELS
        .iter()
        .zip([r.copy_mbs, r.scale_mbs, r.add_mbs, r.triad_mbs])
    {
        println!("{:<10} {v:>15.1}", format!("{}:", k.name()));
    }
    println!(
        "threads started in {:.0} LLC(s); per kernel: {:.1} LLCs (at most {:.1} threads in one), {:.1} nodes (at most {:.1} in one); \
         {:.1}% away from the node of their arrays, {:.1}% on another CPU than before",
        r.start_llcs,
        r.llcs_used, r.llc_max, r.nodes_used, r.node_max, r.remote_pct, r.moved_pct
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_values_follow_streams_recurrence() {
        // One run from (1, 2, 0): c = 1, b = 3, c = 4, a = 3 + 12.
        assert_eq!(expected(1), (15.0, 3.0, 4.0));
        assert_eq!(expected(2).0, 225.0);
        assert!(expected(200).0.is_finite());
    }

    #[test]
    fn kernels_compute_streams_arrays() {
        let mut s = Slice {
            a: vec![1.0; 5],
            b: vec![2.0; 5],
            c: vec![0.0; 5],
            first_cpu: 0,
            cpus: vec![],
        };
        for _ in 0..3 {
            for k in KERNELS {
                run_kernel(k, &mut s);
            }
        }
        assert!(check(&[s], 3).is_ok());
        let stale = Slice {
            a: vec![1.0; 5],
            b: vec![2.0; 5],
            c: vec![0.0; 5],
            first_cpu: 0,
            cpus: vec![],
        };
        assert!(check(&[stale], 3).is_err());
    }

    #[test]
    fn rates_count_streams_bytes() {
        // 1e6 elements of 8 bytes: copy moves 16 MB, triad 24 MB.
        let times = [[9.0; 4], [0.016, 0.016, 0.024, 0.012]];
        let r = best_rates(&times, 1_000_000);
        assert!((r[0] - 1000.0).abs() < 1e-6);
        assert!((r[2] - 1000.0).abs() < 1e-6);
        assert!((r[3] - 2000.0).abs() < 1e-6);
    }

    #[test]
    fn a_kernel_lasts_from_the_first_start_to_the_last_finish() {
        // Thread 1 left the barrier first and finished last: its whole
        // span counts, not thread 0's own.
        let t0 = vec![[(1.0, 2.0), (3.0, 4.0), (5.0, 6.0), (7.0, 8.0)]];
        let t1 = vec![[(0.5, 2.5), (3.0, 4.0), (4.0, 6.0), (7.0, 9.0)]];
        assert_eq!(kernel_times(&[t0, t1]), vec![[2.0, 1.0, 2.0, 2.0]]);
    }

    #[test]
    fn sizes_from_sysfs() {
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("big"), None);
    }

    #[test]
    fn a_run_checks_and_reports_its_threads() {
        let cfg = Config {
            threads: Some(2),
            runs: 3,
            elements: Some(1 << 14),
            json: true,
        };
        let r = run(&cfg).unwrap();
        assert_eq!((r.threads, r.runs, r.elements), (2, 3, 1 << 14));
        assert!(r.copy_mbs > 0.0 && r.triad_mbs > 0.0);
        assert!(r.llcs_used >= 1.0 && r.llc_max >= 1.0 && r.llc_max <= 2.0);
        assert!(r.start_llcs >= 1.0 && r.start_llcs <= 2.0);
        assert!((0.0..=100.0).contains(&r.remote_pct));
    }
}
