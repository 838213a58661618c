//! A wakeup-latency workload in the spirit of schbench (which Debian does
//! not package): message threads wake their worker threads, each worker
//! records how long it took from the wakeup call to running, does a little
//! work and reports back; the message thread waits for all of its workers,
//! pauses, and starts the next round. It reports the latency percentiles
//! and the rate of requests served.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, clap::Args)]
pub struct Config {
    /// Message threads
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub messengers: u32,
    /// Worker threads per message thread
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub workers: u32,
    /// How long to run, in seconds
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// CPU time each worker spends per request, in microseconds
    #[arg(long, default_value_t = 50)]
    pub work_us: u64,
    /// Pause of a message thread between rounds, in microseconds
    #[arg(long, default_value_t = 100)]
    pub sleep_us: u64,
    /// Print one JSON object instead of text
    #[arg(long)]
    pub json: bool,
}

/// What a run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// Requests served per second.
    pub rps: f64,
    pub wakeups: u64,
}

/// Log-linear latency histogram: exact below 64 ns, then 32 buckets per
/// power of two (about 3 % wide), so it stays small however long it runs.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    max: u64,
}

const SUB: u32 = 32;
const LINEAR: u64 = 64;

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: vec![0; (LINEAR + 64 * SUB as u64) as usize],
            max: 0,
        }
    }
}

impl Histogram {
    fn index(v: u64) -> usize {
        if v < LINEAR {
            return v as usize;
        }
        let exp = 63 - v.leading_zeros();
        let sub = (v >> (exp - SUB.trailing_zeros())) & (SUB as u64 - 1);
        (LINEAR + (exp - 6) as u64 * SUB as u64 + sub) as usize
    }

    /// The middle of bucket `i`.
    fn value(i: usize) -> f64 {
        let i = i as u64;
        if i < LINEAR {
            return i as f64;
        }
        let exp = (i - LINEAR) / SUB as u64 + 6;
        let sub = (i - LINEAR) % SUB as u64;
        let width = 1u64 << (exp - SUB.trailing_zeros() as u64);
        ((1u64 << exp) + sub * width) as f64 + width as f64 / 2.0
    }

    pub fn record(&mut self, v: u64) {
        self.counts[Self::index(v)] += 1;
        self.max = self.max.max(v);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The value below which `q` (0..1) of the samples fall.
    pub fn quantile(&self, q: f64) -> f64 {
        let n = self.count();
        if n == 0 {
            return 0.0;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::value(i).min(self.max as f64);
            }
        }
        self.max as f64
    }
}

fn futex(word: &AtomicU32, op: i32, val: u32, timeout: Option<&libc::timespec>) {
    let ts = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: word is a live, aligned u32; the kernel only reads it (wait)
    // or uses its address as a key (wake).
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            ts,
        );
    }
}

/// Sleeps while `word` holds `val`, at most 50 ms so that stop requests
/// are seen.
fn wait_while(word: &AtomicU32, val: u32) {
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 50_000_000,
    };
    futex(word, libc::FUTEX_WAIT, val, Some(&ts));
}

fn wake(word: &AtomicU32) {
    futex(word, libc::FUTEX_WAKE, i32::MAX as u32, None);
}

const IDLE: u32 = 0;
const REQUEST: u32 = 1;

struct Worker {
    state: AtomicU32,
    woken_at: AtomicU64,
}

struct Group {
    workers: Vec<Worker>,
    pending: AtomicU32,
}

struct Shared {
    start: Instant,
    stop: AtomicBool,
    served: AtomicU64,
}

impl Shared {
    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

fn burn(us: u64) {
    let until = Instant::now() + Duration::from_micros(us);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

fn messenger(sh: &Shared, g: &Group, sleep_us: u64) {
    while !sh.stop.load(Ordering::Relaxed) {
        g.pending.store(g.workers.len() as u32, Ordering::SeqCst);
        for w in &g.workers {
            w.woken_at.store(sh.now_ns(), Ordering::SeqCst);
            w.state.store(REQUEST, Ordering::SeqCst);
            wake(&w.state);
        }
        loop {
            let left = g.pending.load(Ordering::SeqCst);
            if left == 0 || sh.stop.load(Ordering::Relaxed) {
                break;
            }
            wait_while(&g.pending, left);
        }
        if sleep_us > 0 {
            std::thread::sleep(Duration::from_micros(sleep_us));
        }
    }
}

fn worker(sh: &Shared, g: &Group, me: usize, work_us: u64) -> Histogram {
    let w = &g.workers[me];
    let mut hist = Histogram::default();
    while !sh.stop.load(Ordering::Relaxed) {
        if w.state.load(Ordering::SeqCst) != REQUEST {
            wait_while(&w.state, IDLE);
            continue;
        }
        hist.record(
            sh.now_ns()
                .saturating_sub(w.woken_at.load(Ordering::SeqCst)),
        );
        burn(work_us);
        w.state.store(IDLE, Ordering::SeqCst);
        sh.served.fetch_add(1, Ordering::Relaxed);
        if g.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            wake(&g.pending);
        }
    }
    hist
}

pub fn run(cfg: &Config) -> Result<Report> {
    if !cfg.seconds.is_finite() || cfg.seconds <= 0.0 || cfg.seconds > 86_400.0 {
        bail!("--seconds must be between 0 and 86400");
    }
    let sh = Arc::new(Shared {
        start: Instant::now(),
        stop: AtomicBool::new(false),
        served: AtomicU64::new(0),
    });
    let groups: Vec<Arc<Group>> = (0..cfg.messengers)
        .map(|_| {
            Arc::new(Group {
                workers: (0..cfg.workers)
                    .map(|_| Worker {
                        state: AtomicU32::new(IDLE),
                        woken_at: AtomicU64::new(0),
                    })
                    .collect(),
                pending: AtomicU32::new(0),
            })
        })
        .collect();

    let total = Arc::new(Mutex::new(Histogram::default()));
    let mut threads = Vec::new();
    for g in &groups {
        for me in 0..cfg.workers as usize {
            let (sh, g, total, work) = (sh.clone(), g.clone(), total.clone(), cfg.work_us);
            threads.push(
                std::thread::Builder::new()
                    .name("wb-worker".into())
                    .spawn(move || {
                        let h = worker(&sh, &g, me, work);
                        if let Ok(mut t) = total.lock() {
                            t.merge(&h);
                        }
                    })
                    .context("cannot start a worker thread")?,
            );
        }
        let (sh, g, sleep) = (sh.clone(), g.clone(), cfg.sleep_us);
        threads.push(
            std::thread::Builder::new()
                .name("wb-messenger".into())
                .spawn(move || messenger(&sh, &g, sleep))
                .context("cannot start a message thread")?,
        );
    }

    let begin = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(cfg.seconds));
    sh.stop.store(true, Ordering::SeqCst);
    for g in &groups {
        wake(&g.pending);
        for w in &g.workers {
            wake(&w.state);
        }
    }
    let elapsed = begin.elapsed().as_secs_f64();
    for t in threads {
        let _ = t.join();
    }

    let hist = total
        .lock()
        .map_err(|_| anyhow::anyhow!("a worker thread panicked"))?;
    let us = |ns: f64| ns / 1000.0;
    Ok(Report {
        p50_us: us(hist.quantile(0.50)),
        p90_us: us(hist.quantile(0.90)),
        p99_us: us(hist.quantile(0.99)),
        p999_us: us(hist.quantile(0.999)),
        max_us: us(hist.max as f64),
        rps: sh.served.load(Ordering::Relaxed) as f64 / elapsed,
        wakeups: hist.count(),
    })
}

/// The subcommand: runs and prints.
pub fn main(cfg: &Config) -> Result<()> {
    let r = run(cfg)?;
    if cfg.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        println!(
            "wakeup latency (us): p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
            r.p50_us, r.p90_us, r.p99_us, r.p999_us, r.max_us
        );
        println!("requests: {:.0}/s over {} wakeups", r.rps, r.wakeups);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_tight_and_ordered() {
        let mut last = 0;
        for v in (0..5_000_000u64).step_by(997) {
            let i = Histogram::index(v);
            assert!(i >= last, "index must not decrease");
            last = i;
            let mid = Histogram::value(i);
            assert!(
                (mid - v as f64).abs() <= (v as f64 / 32.0).max(1.0),
                "{v} -> {mid}"
            );
        }
        assert!(Histogram::index(u64::MAX) < Histogram::default().counts.len());
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        let mut h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        assert_eq!(h.count(), 1000);
        let close = |got: f64, want: f64| (got - want).abs() <= want * 0.04;
        assert!(close(h.quantile(0.5), 500_000.0), "{}", h.quantile(0.5));
        assert!(close(h.quantile(0.99), 990_000.0), "{}", h.quantile(0.99));
        assert!(h.quantile(1.0) <= 1_000_000.0);
        let mut other = Histogram::default();
        other.record(5);
        h.merge(&other);
        assert_eq!(h.count(), 1001);
        assert_eq!(h.quantile(0.0001), 5.0);
        assert_eq!(Histogram::default().quantile(0.5), 0.0);
    }

    #[test]
    fn a_short_run_serves_requests() {
        let cfg = Config {
            messengers: 1,
            workers: 2,
            seconds: 0.2,
            work_us: 10,
            sleep_us: 50,
            json: true,
        };
        let r = run(&cfg).unwrap();
        assert!(r.wakeups > 0 && r.rps > 0.0, "{r:?}");
        assert!(r.p50_us <= r.p99_us && r.p99_us <= r.p999_us && r.p999_us <= r.max_us);
    }
}
