//! The wakeup-latency workload, schbench's pattern (schbench is not
//! packaged by Debian). Each message thread serves its worker threads; a
//! worker posts its message thread and sleeps on a futex until that
//! thread, woken by the post, stamps the time and wakes it back. The
//! wakeup latency is the time from that stamp to the worker running
//! again. Then the worker does a request: a think-time sleep (schbench's
//! "simulated networking"), then matrix multiplications over its own
//! matrices (the cache footprint it refills after every wakeup), holding
//! the lock of the CPU it runs on, so that two workers stacked on one CPU
//! spin on each other as in schbench. Reported: the wakeup and request
//! latency percentiles and the requests served per second.
//!
//! `--pattern light` keeps the earlier, lighter pattern: a message thread
//! wakes all of its workers at once, each spins a few microseconds, and the
//! message thread pauses between rounds. It wakes ten times as often and
//! does no cache-heavy work, and at one worker per message thread it did
//! not show the millisecond wakeups that schbench's pattern did.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Pattern {
    /// schbench's: post, sleep, wake, think, multiply matrices under a per-CPU lock
    Schbench,
    /// all workers woken at once, a short spin each, a pause between rounds
    Light,
}

#[derive(Clone, Debug, clap::Args)]
pub struct Config {
    /// Message threads (schbench -m)
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub messengers: u32,
    /// Worker threads per message thread (schbench -t)
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub workers: u32,
    /// How long to run, in seconds (schbench -r)
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Request pattern
    #[arg(long, value_enum, default_value_t = Pattern::Schbench)]
    pub pattern: Pattern,
    /// Think time: a worker's sleep at the start of each request (schbench
    /// -s); in the light pattern, the message thread's pause between rounds
    #[arg(long, default_value_t = 100)]
    pub sleep_us: u64,
    /// Matrix multiplications per request (schbench -n)
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    pub operations: u64,
    /// Each worker's matrices, in KiB: three square matrices of 64-bit
    /// numbers (schbench -F)
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub footprint_kb: u64,
    /// Do the request's work without the per-CPU lock (schbench -L)
    #[arg(long)]
    pub no_locking: bool,
    /// Light pattern: CPU time each worker spins per request, in microseconds
    #[arg(long, default_value_t = 50)]
    pub work_us: u64,
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
    /// Request latency (think time and work), schbench's second table.
    #[serde(default)]
    pub request_p50_us: f64,
    #[serde(default)]
    pub request_p90_us: f64,
    #[serde(default)]
    pub request_p99_us: f64,
}

/// Latency histogram (HdrHistogram, 3 significant digits: within 0.1 %
/// at any magnitude), small however long a run lasts.
#[derive(Clone, Debug)]
pub struct Histogram(hdrhistogram::Histogram<u64>);

impl Default for Histogram {
    fn default() -> Self {
        // Auto-resizing from nanoseconds up: it cannot run out of range.
        Self(hdrhistogram::Histogram::new(3).expect("3 significant digits is a valid precision"))
    }
}

impl Histogram {
    pub fn record(&mut self, v: u64) {
        // It grows to fit; only a value past what it can ever hold is
        // kept at its top.
        if self.0.record(v).is_err() {
            self.0.saturating_record(v);
        }
    }

    pub fn merge(&mut self, other: &Histogram) {
        // Both auto-resize, so adding cannot fall out of range.
        let _ = self.0.add(&other.0);
    }

    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// The largest sample (0 when there is none).
    pub fn max(&self) -> f64 {
        self.0.max() as f64
    }

    /// The value below which `q` (0..1) of the samples fall.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        self.0.value_at_quantile(q) as f64
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

/// A futex word that is either blocked (its owner sleeps or is about to)
/// or posted.
const BLOCKED: u32 = 0;
const POSTED: u32 = 1;

/// Posts `word`, waking its sleeper; only a blocked word costs a wakeup.
fn post(word: &AtomicU32) {
    if word
        .compare_exchange(BLOCKED, POSTED, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        wake(word);
    }
}

/// Sleeps until `word` is posted (or a stop), and blocks it again.
fn wait_posted(word: &AtomicU32, stop: &AtomicBool) {
    while word
        .compare_exchange(POSTED, BLOCKED, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        wait_while(word, BLOCKED);
    }
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

struct Worker {
    /// The worker's futex word (schbench's per-thread futex).
    futex: AtomicU32,
    /// It posted its message thread and waits to be woken.
    waiting: AtomicBool,
    /// When the message thread woke it.
    woken_at: AtomicU64,
}

struct Group {
    /// The message thread's futex word.
    futex: AtomicU32,
    workers: Vec<Worker>,
    /// Light pattern: workers of the current round still busy.
    pending: AtomicU32,
}

impl Group {
    fn new(workers: u32) -> Self {
        Self {
            futex: AtomicU32::new(BLOCKED),
            workers: (0..workers)
                .map(|_| Worker {
                    futex: AtomicU32::new(BLOCKED),
                    waiting: AtomicBool::new(false),
                    woken_at: AtomicU64::new(0),
                })
                .collect(),
            pending: AtomicU32::new(0),
        }
    }
}

/// Per-CPU spin locks, each on its own cache line.
#[repr(align(64))]
struct CpuLock(AtomicBool);

fn current_cpu() -> usize {
    // SAFETY: sched_getcpu() has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    cpu.max(0) as usize
}

/// Takes the lock of the CPU the caller runs on, spinning while another
/// worker holds it; if the caller moved to another CPU meanwhile, it lets
/// go and takes that one's instead (schbench's lock_this_cpu()).
fn lock_this_cpu(locks: &[CpuLock]) -> &CpuLock {
    loop {
        let cpu = current_cpu() % locks.len();
        let lock = &locks[cpu];
        while lock
            .0
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        if current_cpu() % locks.len() == cpu {
            return lock;
        }
        lock.0.store(false, Ordering::Release);
    }
}

/// Three n x n matrices; `multiply` sets the third to the product of the
/// first two, touching all of them, naively as schbench does.
struct Matrices {
    n: usize,
    data: Vec<u64>,
}

impl Matrices {
    /// The largest n whose three matrices fit in `kb` KiB.
    fn new(kb: u64) -> Self {
        let words = kb * 1024 / 3 / 8;
        let n = ((words as f64).sqrt() as usize).max(1);
        let data = (0..3 * n * n).map(|i| i as u64).collect();
        Self { n, data }
    }

    fn multiply(&mut self) {
        let n = self.n;
        let (ab, c) = self.data.split_at_mut(2 * n * n);
        let (a, b) = ab.split_at(n * n);
        for i in 0..n {
            for j in 0..n {
                let mut sum = 0u64;
                for k in 0..n {
                    sum = sum.wrapping_add(a[i * n + k].wrapping_mul(b[k * n + j]));
                }
                c[i * n + j] = sum;
            }
        }
        std::hint::black_box(&mut self.data);
    }
}

/// schbench's message thread: wake every worker that posted, stamping the
/// time once for all of them, then sleep until the next post.
fn messenger(sh: &Shared, g: &Group) {
    loop {
        g.futex.store(BLOCKED, Ordering::SeqCst);
        let now = sh.now_ns();
        for w in &g.workers {
            if w.waiting.swap(false, Ordering::SeqCst) {
                w.woken_at.store(now, Ordering::SeqCst);
                post(&w.futex);
            }
        }
        if sh.stop.load(Ordering::Relaxed) {
            for w in &g.workers {
                post(&w.futex);
            }
            return;
        }
        wait_posted(&g.futex, &sh.stop);
    }
}

struct Latencies {
    wakeup: Histogram,
    request: Histogram,
}

struct WorkerSetup<'a> {
    sh: &'a Shared,
    g: &'a Group,
    me: usize,
    locks: &'a [CpuLock],
}

/// schbench's worker: post the message thread, sleep until it answers,
/// then serve one request.
fn worker(ws: WorkerSetup, cfg: &Config) -> Latencies {
    let WorkerSetup { sh, g, me, locks } = ws;
    let w = &g.workers[me];
    let mut m = Matrices::new(cfg.footprint_kb);
    let mut lat = Latencies {
        wakeup: Histogram::default(),
        request: Histogram::default(),
    };
    while !sh.stop.load(Ordering::Relaxed) {
        w.futex.store(BLOCKED, Ordering::SeqCst);
        w.waiting.store(true, Ordering::SeqCst);
        post(&g.futex);
        wait_posted(&w.futex, &sh.stop);
        if sh.stop.load(Ordering::Relaxed) {
            break;
        }
        let woken = sh.now_ns();
        lat.wakeup
            .record(woken.saturating_sub(w.woken_at.load(Ordering::SeqCst)));

        if cfg.sleep_us > 0 {
            std::thread::sleep(Duration::from_micros(cfg.sleep_us));
        }
        let lock = (!cfg.no_locking).then(|| lock_this_cpu(locks));
        for _ in 0..cfg.operations {
            m.multiply();
        }
        if let Some(l) = lock {
            l.0.store(false, Ordering::Release);
        }
        lat.request.record(sh.now_ns().saturating_sub(woken));
        sh.served.fetch_add(1, Ordering::Relaxed);
    }
    lat
}

fn burn(us: u64) {
    let until = Instant::now() + Duration::from_micros(us);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Light pattern: wake all workers, wait for all of them, pause.
fn light_messenger(sh: &Shared, g: &Group, sleep_us: u64) {
    while !sh.stop.load(Ordering::Relaxed) {
        g.pending.store(g.workers.len() as u32, Ordering::SeqCst);
        for w in &g.workers {
            w.woken_at.store(sh.now_ns(), Ordering::SeqCst);
            w.futex.store(POSTED, Ordering::SeqCst);
            wake(&w.futex);
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

fn light_worker(sh: &Shared, g: &Group, me: usize, work_us: u64) -> Latencies {
    let w = &g.workers[me];
    let mut lat = Latencies {
        wakeup: Histogram::default(),
        request: Histogram::default(),
    };
    while !sh.stop.load(Ordering::Relaxed) {
        if w.futex.load(Ordering::SeqCst) != POSTED {
            wait_while(&w.futex, BLOCKED);
            continue;
        }
        let woken = sh.now_ns();
        lat.wakeup
            .record(woken.saturating_sub(w.woken_at.load(Ordering::SeqCst)));
        burn(work_us);
        lat.request.record(sh.now_ns().saturating_sub(woken));
        w.futex.store(BLOCKED, Ordering::SeqCst);
        sh.served.fetch_add(1, Ordering::Relaxed);
        if g.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            wake(&g.pending);
        }
    }
    lat
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
        .map(|_| Arc::new(Group::new(cfg.workers)))
        .collect();
    // SAFETY: sysconf() has no preconditions.
    let ncpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as usize;
    let locks: Arc<Vec<CpuLock>> = Arc::new(
        (0..ncpus)
            .map(|_| CpuLock(AtomicBool::new(false)))
            .collect(),
    );

    let total = Arc::new(Mutex::new(Latencies {
        wakeup: Histogram::default(),
        request: Histogram::default(),
    }));
    let mut threads = Vec::new();
    for g in &groups {
        for me in 0..cfg.workers as usize {
            let (sh, g, total, locks, cfg) = (
                sh.clone(),
                g.clone(),
                total.clone(),
                locks.clone(),
                cfg.clone(),
            );
            threads.push(
                std::thread::Builder::new()
                    .name("wb-worker".into())
                    .spawn(move || {
                        let lat = match cfg.pattern {
                            Pattern::Schbench => {
                                let ws = WorkerSetup {
                                    sh: &sh,
                                    g: &g,
                                    me,
                                    locks: &locks,
                                };
                                worker(ws, &cfg)
                            }
                            Pattern::Light => light_worker(&sh, &g, me, cfg.work_us),
                        };
                        if let Ok(mut t) = total.lock() {
                            t.wakeup.merge(&lat.wakeup);
                            t.request.merge(&lat.request);
                        }
                    })
                    .context("cannot start a worker thread")?,
            );
        }
        let (sh, g, pattern, sleep) = (sh.clone(), g.clone(), cfg.pattern, cfg.sleep_us);
        threads.push(
            std::thread::Builder::new()
                .name("wb-messenger".into())
                .spawn(move || match pattern {
                    Pattern::Schbench => messenger(&sh, &g),
                    Pattern::Light => light_messenger(&sh, &g, sleep),
                })
                .context("cannot start a message thread")?,
        );
    }

    let begin = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(cfg.seconds));
    sh.stop.store(true, Ordering::SeqCst);
    for g in &groups {
        g.futex.store(POSTED, Ordering::SeqCst);
        wake(&g.futex);
        wake(&g.pending);
        for w in &g.workers {
            w.futex.store(POSTED, Ordering::SeqCst);
            wake(&w.futex);
        }
    }
    let elapsed = begin.elapsed().as_secs_f64();
    for t in threads {
        let _ = t.join();
    }

    let lat = total
        .lock()
        .map_err(|_| anyhow::anyhow!("a worker thread panicked"))?;
    let us = |ns: f64| ns / 1000.0;
    let (w, r) = (&lat.wakeup, &lat.request);
    Ok(Report {
        p50_us: us(w.quantile(0.50)),
        p90_us: us(w.quantile(0.90)),
        p99_us: us(w.quantile(0.99)),
        p999_us: us(w.quantile(0.999)),
        max_us: us(w.max()),
        rps: sh.served.load(Ordering::Relaxed) as f64 / elapsed,
        wakeups: w.count(),
        request_p50_us: us(r.quantile(0.50)),
        request_p90_us: us(r.quantile(0.90)),
        request_p99_us: us(r.quantile(0.99)),
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
        println!(
            "request latency (us): p50 {:.1}  p90 {:.1}  p99 {:.1}",
            r.request_p50_us, r.request_p90_us, r.request_p99_us
        );
        println!("requests: {:.0}/s over {} wakeups", r.rps, r.wakeups);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_a_known_distribution() {
        let mut h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        assert_eq!(h.count(), 1000);
        let close = |got: f64, want: f64| (got - want).abs() <= want * 0.001;
        assert!(close(h.quantile(0.5), 500_000.0), "{}", h.quantile(0.5));
        assert!(close(h.quantile(0.99), 990_000.0), "{}", h.quantile(0.99));
        assert!(close(h.quantile(1.0), 1_000_000.0), "{}", h.quantile(1.0));
        let mut other = Histogram::default();
        other.record(5);
        h.merge(&other);
        assert_eq!(h.count(), 1001);
        assert_eq!(h.quantile(0.0001), 5.0);
        assert_eq!(Histogram::default().quantile(0.5), 0.0);
    }

    fn short(pattern: Pattern) -> Config {
        Config {
            messengers: 2,
            workers: 2,
            seconds: 0.3,
            pattern,
            sleep_us: 50,
            operations: 1,
            footprint_kb: 16,
            no_locking: false,
            work_us: 10,
            json: true,
        }
    }

    fn sane(r: &Report) {
        assert!(r.wakeups > 0 && r.rps > 0.0, "{r:?}");
        assert!(r.p50_us <= r.p90_us && r.p90_us <= r.p99_us, "{r:?}");
        assert!(r.p99_us <= r.p999_us && r.p999_us <= r.max_us, "{r:?}");
        assert!(r.request_p50_us <= r.request_p99_us, "{r:?}");
    }

    #[test]
    fn a_short_run_serves_requests() {
        for pattern in [Pattern::Schbench, Pattern::Light] {
            let r = run(&short(pattern)).unwrap();
            sane(&r);
        }
    }

    #[test]
    fn a_request_thinks_then_works() {
        // Each request sleeps 2 ms first, so none takes less.
        let cfg = Config {
            sleep_us: 2000,
            ..short(Pattern::Schbench)
        };
        let r = run(&cfg).unwrap();
        sane(&r);
        assert!(r.request_p50_us >= 2000.0, "{r:?}");
        // One wakeup per request, and no more requests than 4 workers
        // sleeping 2 ms each can serve.
        assert!(r.rps <= 4.0 / 0.002 * 1.05, "{r:?}");
    }

    #[test]
    fn matrices_multiply_and_fill_the_footprint() {
        let mut m = Matrices::new(256);
        assert_eq!(m.n, 104, "schbench's size for 256 KiB");
        assert!(3 * m.n * m.n * 8 <= 256 * 1024);
        let mut small = Matrices {
            n: 2,
            data: vec![1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0],
        };
        small.multiply();
        assert_eq!(small.data[8..], [19, 22, 43, 50]);
        m.multiply();
    }

    #[test]
    fn the_cpu_lock_is_exclusive() {
        let locks: Arc<Vec<CpuLock>> =
            Arc::new((0..1).map(|_| CpuLock(AtomicBool::new(false))).collect());
        let inside = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (locks, inside) = (locks.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        let l = lock_this_cpu(&locks);
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                        inside.fetch_sub(1, Ordering::SeqCst);
                        l.0.store(false, Ordering::Release);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
