//! `sisutil-lab trace-report DIR`: what the scheduler's trace
//! (`scx_sisutil trace --out DIR`) says. The question a found-rate cannot
//! answer: when a scan gave up, how long did the wakee wait? The report
//! gives the wakeup-to-running wait's percentiles for the wakeups whose
//! scan found an idle CPU, missed one that existed, and had none to find
//! (and those placed before any scan, or sent to their waker), per rule;
//! which wakers' wakees missed most; whether the wakees that waited in a
//! busy CPU's queue waited in the order they woke (queue_order()); it
//! draws the percentiles
//! (DIR/waits.svg) and writes a Perfetto trace (DIR/trace.pftrace): a track
//! per CPU with every wakeup placed there, a track per task with its waits
//! as slices, and per LLC its utilisation and SIS_UTIL's depth as
//! counters.

pub mod perfetto;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use serde::Deserialize;

use crate::bench::plot::Chart;
use perfetto::{Builder, DebugAnnotation as Arg};
pub use sisutil_proto::trace::{LlcSample, Wakeup};

fn read_csv<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>> {
    let mut r =
        csv::Reader::from_path(path).with_context(|| format!("cannot read {}", path.display()))?;
    r.deserialize()
        .enumerate()
        .map(|(i, row)| row.with_context(|| format!("{}: row {}", path.display(), i + 2)))
        .collect()
}

/// The waits of one rule and kind.
pub struct Waits {
    pub hist: Histogram<u64>,
}

impl Waits {
    fn new() -> Self {
        Waits {
            // Microseconds, 1 us to an hour, 3 significant digits.
            hist: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
        }
    }

    fn add(&mut self, us: f64) {
        self.hist.saturating_record(us.round().max(1.0) as u64);
    }

    pub fn at(&self, q: f64) -> u64 {
        self.hist.value_at_quantile(q)
    }
}

/// The waits by (rule, kind).
pub fn waits(w: &[Wakeup]) -> BTreeMap<(String, String), Waits> {
    let mut out: BTreeMap<(String, String), Waits> = BTreeMap::new();
    for x in w {
        out.entry((x.rule.clone(), x.found.clone()))
            .or_insert_with(Waits::new)
            .add(x.wait_us);
    }
    out
}

fn kind_rank(k: &str) -> usize {
    sisutil_proto::stats::wait_rank(k)
}

/// The report's text.
pub fn report(w: &[Wakeup], llcs: &[LlcSample]) -> String {
    let mut out = String::new();
    let span_s = match (
        w.iter().map(|x| x.woke_ns).min(),
        w.iter().map(|x| x.woke_ns).max(),
    ) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e9,
        _ => 0.0,
    };
    let queued = w.iter().filter(|x| x.queued != 0).count();
    let _ = writeln!(
        out,
        "{} wakeups on record over {span_s:.1} s ({queued} queued wakeups, placed in enqueue), {} LLC samples",
        w.len(),
        llcs.len()
    );
    let _ = writeln!(
        out,
        "\nWait from the wakeup's placement to the task's first run (us), by rule and by what the placement found:"
    );
    let mut rows: Vec<_> = waits(w).into_iter().collect();
    rows.sort_by_key(|((r, k), _)| (r.clone(), kind_rank(k)));
    let _ = writeln!(
        out,
        "{:<8} {:<8} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "rule", "found", "wakeups", "p50", "p90", "p99", "max"
    );
    for ((rule, kind), ws) in &rows {
        let _ = writeln!(
            out,
            "{rule:<8} {kind:<8} {:>9} {:>9} {:>9} {:>9} {:>9}",
            ws.hist.len(),
            ws.at(0.5),
            ws.at(0.9),
            ws.at(0.99),
            ws.hist.max()
        );
    }
    // Which wakers' wakees missed most: of the wakeups that reached the
    // scan, the share that missed an idle CPU that existed.
    let mut by_waker: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for x in w
        .iter()
        .filter(|x| matches!(x.found.as_str(), "found" | "missed" | "none"))
    {
        let name = if x.waker_comm.is_empty() {
            "(idle or queued)".to_string()
        } else {
            x.waker_comm.clone()
        };
        let e = by_waker.entry(name).or_default();
        e.0 += (x.found == "missed") as u64;
        e.1 += 1;
    }
    let mut wakers: Vec<_> = by_waker.into_iter().filter(|(_, (m, _))| *m > 0).collect();
    wakers.sort_by_key(|b| std::cmp::Reverse(b.1 .0));
    if !wakers.is_empty() {
        let _ = writeln!(out, "\nWakers whose wakees' scans missed an idle CPU most:");
        let _ = writeln!(
            out,
            "{:<16} {:>8} {:>8} {:>8}",
            "waker", "missed", "scanned", "%"
        );
        for (name, (m, n)) in wakers.iter().take(10) {
            let _ = writeln!(
                out,
                "{name:<16} {m:>8} {n:>8} {:>8.1}",
                100.0 * *m as f64 / *n as f64
            );
        }
    }
    if let Some(q) = queue_order(w) {
        let _ = write!(out, "\n{q}");
    }
    out
}

/// What one LLC's wakeups that waited on a busy CPU say about the order
/// they were served in, summed over the LLCs.
#[derive(Debug, Default, PartialEq)]
pub struct QueueOrder {
    /// Wakeups placed on a busy CPU (none, missed), and their summed wait.
    pub queued: u64,
    pub wait_us: f64,
    /// Of those, the ones a later wakeup of the same LLC overtook: it first
    /// ran on another CPU before this one ran at all; and their wait.
    pub overtaken: u64,
    pub overtaken_wait_us: f64,
    /// The part of the queued wakeups' wait spent in waits over 50 ms.
    pub long_wait_us: f64,
    /// Wakeups that found an idle CPU while a wakeup of the same LLC
    /// waited on another, busy one; and all that found an idle CPU.
    pub idle_while_queued: u64,
    pub idle: u64,
}

/// Per-CPU queues serve an LLC's waiting wakees out of order: a wakee
/// stuck behind a long queue sees later wakees run first on the LLC's
/// other CPUs, where one queue per LLC would have served it first. Given
/// the moments the CPUs took a wakee, another order would not change the
/// summed wait, only how it is spread: the overtaken share and the long
/// waits show whether the tail is made of overtaken wakees. An idle CPU
/// found while another CPU's wakee waits is time a shared queue would also
/// have used. Only wakeups on record can overtake (a trace of one wakeup in
/// N counts fewer). None when no wakeup waited on a busy CPU.
pub fn queue_order(w: &[Wakeup]) -> Option<QueueOrder> {
    const LONG_US: f64 = 50_000.0;
    let mut by_llc: BTreeMap<u32, Vec<&Wakeup>> = BTreeMap::new();
    for x in w {
        if let Some(llc) = x.cpu_llc {
            by_llc.entry(llc).or_default().push(x);
        }
    }
    let mut q = QueueOrder::default();
    for xs in by_llc.values_mut() {
        xs.sort_by_key(|x| x.woke_ns);
        // Walking from the latest wakeup back, the two earliest first runs
        // so far on two different CPUs: whether any later wakeup ran
        // before @x on a CPU other than the one @x waited for is then one
        // comparison.
        let mut first: Option<(f64, i32)> = None;
        let mut second: Option<(f64, i32)> = None;
        for x in xs.iter().rev() {
            if waited(x) {
                let other = match first {
                    Some((_, cpu)) if cpu == x.cpu => second,
                    f => f,
                };
                q.queued += 1;
                q.wait_us += x.wait_us;
                if x.wait_us > LONG_US {
                    q.long_wait_us += x.wait_us;
                }
                if other.is_some_and(|(t, _)| t < first_run_ns(x)) {
                    q.overtaken += 1;
                    q.overtaken_wait_us += x.wait_us;
                }
            }
            let me = (first_run_ns(x), x.ran_cpu);
            match first {
                Some(f) if f.0 <= me.0 => {
                    if f.1 != me.1 && second.is_none_or(|s| me.0 < s.0) {
                        second = Some(me);
                    }
                }
                f => {
                    if let Some(f) = f.filter(|f| f.1 != me.1) {
                        second = Some(f);
                    }
                    first = Some(me);
                }
            }
        }
        idle_while_queued(xs, &mut q);
    }
    (q.queued > 0).then_some(q)
}

/// A wakeup placed on a busy CPU, to wait in its queue.
fn waited(x: &Wakeup) -> bool {
    matches!(x.found.as_str(), "none" | "missed")
}

/// When @x first ran, on the trace's clock.
fn first_run_ns(x: &Wakeup) -> f64 {
    x.woke_ns as f64 + x.wait_us * 1e3
}

/// Counts into @q the wakeups of one LLC (@xs) that found an idle CPU, and
/// those that found it while a wakeup waited on another of its CPUs: one
/// sweep through time, a wait counted from its wakeup to its first run.
fn idle_while_queued(xs: &[&Wakeup], q: &mut QueueOrder) {
    // At one instant a wait that ends is over, and one that starts has
    // not begun: ends, then idle finds, then starts.
    let mut events: Vec<(f64, u8, i32)> = Vec::new();
    for x in xs {
        if waited(x) {
            events.push((first_run_ns(x), 0, x.cpu));
            events.push((x.woke_ns as f64, 2, x.cpu));
        } else if matches!(x.found.as_str(), "idle" | "found") {
            events.push((x.woke_ns as f64, 1, x.cpu));
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut waiting: BTreeMap<i32, i64> = BTreeMap::new();
    let mut total = 0i64;
    for (_, kind, cpu) in events {
        match kind {
            0 => {
                *waiting.entry(cpu).or_default() -= 1;
                total -= 1;
            }
            1 => {
                q.idle += 1;
                q.idle_while_queued += (total > waiting.get(&cpu).copied().unwrap_or(0)) as u64;
            }
            _ => {
                *waiting.entry(cpu).or_default() += 1;
                total += 1;
            }
        }
    }
}

impl std::fmt::Display for QueueOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pct = |a: f64, b: f64| if b > 0.0 { 100.0 * a / b } else { 0.0 };
        writeln!(f, "The order the LLCs' queues served wakees in:")?;
        writeln!(
            f,
            "{} wakeups waited on a busy CPU; {:.1}% of them were overtaken (a later wakeup of their LLC first ran on another CPU before they ran), with {:.1}% of the wait; {:.1}% of the wait was in waits over 50 ms",
            self.queued,
            pct(self.overtaken as f64, self.queued as f64),
            pct(self.overtaken_wait_us, self.wait_us),
            pct(self.long_wait_us, self.wait_us)
        )?;
        writeln!(
            f,
            "{} of {} wakeups that found an idle CPU found it while a wakeup of the same LLC waited on another CPU",
            self.idle_while_queued, self.idle
        )
    }
}

/// The percentiles as a chart: a group per rule and kind, a bar per quantile.
pub fn chart(w: &[Wakeup]) -> Chart {
    let mut rows: Vec<_> = waits(w).into_iter().collect();
    rows.sort_by_key(|((r, k), _)| (r.clone(), kind_rank(k)));
    Chart {
        title: "Wakeup to first run".into(),
        subtitle: format!(
            "{} wakeups on record, by rule and by what the placement found",
            w.len()
        ),
        y_label: "wait (us)".into(),
        groups: rows.iter().map(|((r, k), _)| format!("{r}: {k}")).collect(),
        series: vec!["p50".into(), "p90".into(), "p99".into()],
        values: rows
            .iter()
            .map(|(_, ws)| {
                [0.5, 0.9, 0.99]
                    .iter()
                    .map(|&q| (ws.at(q) as f64, 0.0))
                    .collect()
            })
            .collect(),
    }
}

/// Track ids: CPUs from 1, tasks from 1 << 32, LLCs' counters and auto's
/// rule from 1 << 48, three to an LLC.
const CPU_TRACK: u64 = 1;
const TASK_TRACK: u64 = 1 << 32;
const LLC_TRACK: u64 = 1 << 48;

/// The Perfetto trace of @w and @llcs.
pub fn perfetto_trace(w: &[Wakeup], llcs: &[LlcSample]) -> Builder {
    let mut b = Builder::default();
    let mut cpus: Vec<i32> = w
        .iter()
        .flat_map(|x| [x.cpu, x.ran_cpu])
        .filter(|&c| c >= 0)
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    for &c in &cpus {
        b.track(
            CPU_TRACK + c as u64,
            &format!("CPU {c}: wakeups placed"),
            None,
            None,
        );
    }
    let mut tasks: BTreeMap<i32, String> = BTreeMap::new();
    for x in w {
        tasks
            .entry(x.wakee_pid)
            .or_insert_with(|| x.wakee_comm.clone());
    }
    b.track(TASK_TRACK, "waits, by task", None, None);
    for (pid, comm) in &tasks {
        b.track(
            TASK_TRACK + 1 + *pid as u64,
            &format!("{comm} {pid}"),
            Some(TASK_TRACK),
            None,
        );
    }
    let mut llc_ids: Vec<(u32, u32)> = llcs.iter().map(|l| (l.llc, l.width)).collect();
    llc_ids.sort_unstable();
    llc_ids.dedup();
    let adaptive = llcs.iter().any(|l| !l.auto_rule.is_empty());
    for &(l, width) in &llc_ids {
        let base = LLC_TRACK + 3 * l as u64;
        b.track(
            base,
            &format!("LLC {l} ({width} CPUs) util %"),
            None,
            Some("%"),
        );
        b.track(
            base + 1,
            &format!("LLC {l} SIS_UTIL depth"),
            None,
            Some("CPUs"),
        );
        if adaptive {
            b.track(base + 2, &format!("LLC {l} auto's rule"), None, None);
        }
    }
    let mut rules: BTreeMap<u32, String> = BTreeMap::new();
    // Events in time order, as a sequence wants them.
    let mut events: Vec<(u64, u8, usize)> = Vec::new();
    for (i, x) in w.iter().enumerate() {
        events.push((x.woke_ns, 0, i));
        events.push((x.woke_ns + (x.wait_us * 1000.0) as u64, 1, i));
    }
    for (i, l) in llcs.iter().enumerate() {
        events.push((l.t_ns, 2, i));
    }
    events.sort_unstable();
    for (ts, what, i) in events {
        match what {
            0 => {
                let x = &w[i];
                let mut args = vec![
                    Arg::text("wakee", &format!("{} {}", x.wakee_comm, x.wakee_pid)),
                    Arg::text("waker", &format!("{} {}", x.waker_comm, x.waker_pid)),
                    Arg::double("wait_us", x.wait_us),
                    Arg::text("rule", &x.rule),
                    Arg::int("prev", x.prev as i64),
                    Arg::int("target", x.target as i64),
                    Arg::int("ran_cpu", x.ran_cpu as i64),
                    Arg::text("placement", &x.placement),
                    Arg::int("queued", x.queued as i64),
                ];
                if let (Some(l), Some(n)) = (x.cpu_llc, x.cpu_node) {
                    args.push(Arg::int("cpu_llc", l as i64));
                    args.push(Arg::int("cpu_node", n as i64));
                }
                if let (Some(l), Some(e)) = (x.limit, x.examined) {
                    args.push(Arg::text("scan_rule", &x.scan_rule));
                    args.push(Arg::int("limit", l as i64));
                    args.push(Arg::int("examined", e as i64));
                }
                for (name, _, v) in x.shadows() {
                    if let Some(v) = v {
                        args.push(Arg::int(name, v as i64));
                    }
                }
                let name = format!("{}: {}", x.found, x.wakee_comm);
                b.event(
                    ts,
                    CPU_TRACK + x.cpu.max(0) as u64,
                    perfetto::TYPE_INSTANT,
                    Some(&name),
                    args,
                );
                b.event(
                    ts,
                    TASK_TRACK + 1 + x.wakee_pid as u64,
                    perfetto::TYPE_SLICE_BEGIN,
                    Some(&format!("wait ({})", x.found)),
                    vec![Arg::double("wait_us", x.wait_us)],
                );
            }
            1 => {
                let x = &w[i];
                b.event(
                    ts,
                    TASK_TRACK + 1 + x.wakee_pid as u64,
                    perfetto::TYPE_SLICE_END,
                    None,
                    Vec::new(),
                );
            }
            _ => {
                let l = &llcs[i];
                let base = LLC_TRACK + 3 * l.llc as u64;
                b.counter(ts, base, l.util_pct);
                b.counter(ts, base + 1, l.nr_idle_scan as f64);
                if !l.auto_rule.is_empty() && rules.get(&l.llc) != Some(&l.auto_rule) {
                    b.event(
                        ts,
                        base + 2,
                        perfetto::TYPE_INSTANT,
                        Some(&l.auto_rule),
                        Vec::new(),
                    );
                    rules.insert(l.llc, l.auto_rule.clone());
                }
            }
        }
    }
    b
}

/// `sisutil-lab trace-report DIR`.
pub fn main(dir: &Path) -> Result<()> {
    let (text, packets) = write_report(dir)?;
    print!("{text}");
    println!(
        "report.txt, waits.svg and trace.pftrace ({packets} packets, for ui.perfetto.dev) in {}",
        dir.display()
    );
    Ok(())
}

/// Reads the trace in @dir and writes its report.txt, waits.svg and
/// trace.pftrace beside it; the report's text and the Perfetto trace's
/// packets.
pub fn write_report(dir: &Path) -> Result<(String, usize)> {
    let w: Vec<Wakeup> = read_csv(&dir.join("wakeups.csv"))?;
    let llcs: Vec<LlcSample> = read_csv(&dir.join("llcs.csv"))?;
    if w.is_empty() {
        bail!(
            "{} holds no wakeup on record",
            dir.join("wakeups.csv").display()
        );
    }
    let text = report(&w, &llcs);
    let write = |name: &str, bytes: &[u8]| -> Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))
    };
    write("report.txt", text.as_bytes())?;
    write("waits.svg", chart(&w).svg().as_bytes())?;
    let trace = perfetto_trace(&w, &llcs);
    write("trace.pftrace", &trace.encode())?;
    Ok((text, trace.packets()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wakeup(found: &str, wait_us: f64, pid: i32, woke_ns: u64) -> Wakeup {
        Wakeup {
            woke_ns,
            wait_us,
            waker_pid: 1,
            waker_comm: "hackbench".into(),
            wakee_pid: pid,
            wakee_comm: "hackbench".into(),
            prev: 0,
            target: 1,
            cpu: 2,
            cpu_llc: Some(0),
            cpu_node: Some(0),
            ran_cpu: 2,
            rule: "util".into(),
            scan_rule: "util".into(),
            limit: Some(2),
            examined: Some(2),
            found: found.into(),
            placement: "busy".into(),
            queued: 0,
            shadow_util: None,
            shadow_prop: Some(1),
            shadow_full: None,
            shadow_none: None,
            ..Default::default()
        }
    }

    #[test]
    fn waits_are_grouped_by_rule_and_kind() {
        let w: Vec<Wakeup> = (0..100)
            .map(|i| {
                wakeup(
                    if i < 90 { "found" } else { "missed" },
                    i as f64 + 1.0,
                    i,
                    i as u64,
                )
            })
            .collect();
        let ws = waits(&w);
        let found = &ws[&("util".to_string(), "found".to_string())];
        assert_eq!(found.hist.len(), 90);
        assert_eq!(found.at(0.5), 45);
        let missed = &ws[&("util".to_string(), "missed".to_string())];
        assert_eq!(
            (missed.hist.len(), missed.at(0.0), missed.hist.max()),
            (10, 91, 100)
        );
        let text = report(&w, &[]);
        assert!(text.contains("util     found"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("hackbench") && l.contains("10.0")),
            "{text}"
        );
        let c = chart(&w);
        assert_eq!(c.groups, ["util: found", "util: missed"]);
    }

    fn on(found: &str, woke_ns: u64, wait_us: f64, cpu: i32) -> Wakeup {
        Wakeup {
            cpu,
            ran_cpu: cpu,
            ..wakeup(found, wait_us, 1, woke_ns)
        }
    }

    #[test]
    fn a_wakee_that_a_later_one_passed_on_another_cpu_is_overtaken() {
        let w = vec![
            // Waits 100 ms on CPU 2; the wakeup after it runs at once on
            // CPU 3 of the same LLC: overtaken.
            on("none", 0, 100_000.0, 2),
            on("none", 1_000, 1.0, 3),
            // Passed only on its own CPU: served in its CPU's order.
            on("none", 2_000, 1.5, 2),
            on("none", 3_000, 0.1, 2),
            // An idle CPU found while the first waited on CPU 2.
            on("idle", 4_000, 1.0, 4),
            // Another LLC's wakeup passes nobody of LLC 0.
            Wakeup {
                cpu_llc: Some(1),
                ..on("none", 5_000, 1.0, 5)
            },
        ];
        let q = queue_order(&w).unwrap();
        assert_eq!(
            (q.queued, q.overtaken, q.idle, q.idle_while_queued),
            (5, 1, 1, 1)
        );
        assert_eq!(q.overtaken_wait_us, 100_000.0);
        assert_eq!(q.long_wait_us, 100_000.0);
        let text = report(&w, &[]);
        assert!(
            text.contains("5 wakeups waited on a busy CPU; 20.0% of them were overtaken"),
            "{text}"
        );
        assert!(queue_order(&[on("idle", 0, 1.0, 2)]).is_none());
    }

    #[test]
    fn the_trace_has_a_track_per_cpu_task_and_llc_counter() {
        let w = vec![
            wakeup("found", 5.0, 10, 1000),
            wakeup("missed", 50.0, 11, 2000),
        ];
        let l = vec![LlcSample {
            t_ns: 1500,
            llc: 0,
            width: 4,
            util_pct: 50.0,
            nr_idle_scan: 2,
            auto_rule: String::new(),
        }];
        let b = perfetto_trace(&w, &l);
        // Tracks: CPU 2, the task parent and two tasks, two LLC counters;
        // events: 2 instants, 2 slice begins and ends, 2 counter values.
        assert_eq!(b.packets(), 6 + 8);
    }
}
