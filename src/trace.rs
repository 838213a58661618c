//! The trace: every wakeup on record (src/bpf/trace.bpf.c), drained from
//! BPF's ring buffer into DIR/wakeups.csv, with every LLC's state each
//! interval into DIR/llcs.csv, for as long as a client asked and no longer
//! than its limits. The lab turns the files into a report and a Perfetto
//! trace (`sisutil-lab trace-report`).
//!
//! The scheduler never waits on this side: BPF drops a record when the
//! ring is full and counts it. This side drains the ring every time the
//! run loop wakes (at least every 50 ms), so the ring's 4 MiB holds about
//! 35,000 records, some 700,000 wakeups a second at that pace. A write that
//! fails (a full disk) ends the trace and removes its files, which would
//! otherwise end in a torn line; a trace that ends otherwise (stopped, its
//! time or size reached) is flushed and closed whole.

use std::cell::RefCell;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, RingBuffer, RingBufferBuilder};
use log::{info, warn};

use crate::bpf_intf::{self, sisu_trace_rec};
use crate::policy::Policy;
use crate::stats::WAIT_KINDS;
use sisutil_proto::control::{TraceStart, TraceState};
use sisutil_proto::topology::Layout;
use sisutil_proto::trace::{self, LlcSample, Wakeup};

/// The ring buffer's size: BPF's map, set before load.
pub const RING_BYTES: u32 = 4 << 20;

/// How long one pass of the scheduler's loop may spend writing records,
/// and how many it reads between looks at the clock. The loop serves the
/// socket and publishes the utilisation sums between passes; the
/// scheduler's own thread waits in the queues it schedules, so under a
/// load that wakes tasks faster than it writes rows an unbounded drain
/// would never return. What it leaves, BPF drops and counts.
const DRAIN_BUDGET: Duration = Duration::from_millis(20);
const DRAIN_BATCH: usize = 256;
/// At a trace's start and end the ring is read to its end, within a time
/// that stays under the socket's reply timeout; what is left is counted
/// unread.
const REST_BUDGET: Duration = Duration::from_secs(5);

/// BPF's running totals over all CPUs: records it put in the ring, and
/// records the full ring had no room for.
#[derive(Clone, Copy, Debug, Default)]
pub struct RingCounts {
    pub sent: u64,
    pub dropped: u64,
}

/// How a placement ended (enum sisu_outcome).
const OUTCOMES: [&str; 7] = ["target", "prev", "recent", "smt", "scan", "busy", "fork"];

/// Each CPU's LLC and node, for the records.
struct Places {
    llc: Vec<Option<usize>>,
    node: Vec<usize>,
}

impl Places {
    fn of(l: &Layout) -> Self {
        Places {
            llc: l.cpu_llc.clone(),
            node: l.llcs.iter().map(|x| x.node).collect(),
        }
    }

    /// The LLC and node of @cpu (None where unknown).
    fn of_cpu(&self, cpu: i32) -> (Option<u32>, Option<u32>) {
        let llc = usize::try_from(cpu)
            .ok()
            .and_then(|c| self.llc.get(c).copied().flatten());
        let node = llc.and_then(|l| self.node.get(l));
        let id = |x: usize| u32::try_from(x).ok();
        (llc.and_then(id), node.copied().and_then(id))
    }
}

/// A task name from the kernel's fixed buffer.
fn comm(raw: &[std::os::raw::c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn rule_name(v: u32) -> &'static str {
    Policy::from_bpf(v).map_or("?", |p| p.name())
}

/// One record as a row of wakeups.csv.
fn row(r: &sisu_trace_rec, places: &Places) -> Wakeup {
    let scanned = r.flags & bpf_intf::sisu_trace_flag_SISU_TRACE_SCANNED != 0;
    let (prev_llc, prev_node) = places.of_cpu(r.prev);
    let (target_llc, target_node) = places.of_cpu(r.target);
    let (cpu_llc, cpu_node) = places.of_cpu(r.cpu);
    let verdict = |p: Policy| {
        let bit = 1 << p.to_bpf();
        (r.shadow_rules & bit != 0).then_some((r.shadow_found & bit != 0) as u8)
    };
    let mut row = Wakeup {
        woke_ns: r.woke_ns,
        wait_us: r.wait_ns as f64 / 1000.0,
        waker_pid: r.waker_pid,
        waker_comm: comm(&r.waker_comm),
        wakee_pid: r.wakee_pid,
        wakee_comm: comm(&r.wakee_comm),
        prev: r.prev,
        prev_llc,
        prev_node,
        target: r.target,
        target_llc,
        target_node,
        cpu: r.cpu,
        cpu_llc,
        cpu_node,
        ran_cpu: r.ran_cpu,
        rule: rule_name(r.rule).into(),
        scan_rule: if scanned { rule_name(r.scan_rule) } else { "" }.into(),
        limit: scanned.then_some(r.limit),
        examined: scanned.then_some(r.examined),
        found: WAIT_KINDS
            .get(r.kind as usize)
            .copied()
            .unwrap_or("?")
            .into(),
        placement: OUTCOMES
            .get(r.outcome as usize)
            .copied()
            .unwrap_or("?")
            .into(),
        queued: (r.flags & bpf_intf::sisu_trace_flag_SISU_TRACE_QUEUED != 0) as u8,
        ..Default::default()
    };
    for p in Policy::ALL.iter().filter(|p| p.can_shadow()) {
        row.set_shadow(*p, verdict(*p));
    }
    row
}

/// A file that counts what it was given, so that the size cap costs no
/// system call per record (the CSV writer buffers in front of it).
struct Counted {
    file: File,
    bytes: u64,
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// The files a trace writes.
const FILES: [&str; 2] = ["wakeups.csv", "llcs.csv"];

/// A trace being written.
struct Session {
    state: TraceState,
    dir: PathBuf,
    wakeups: csv::Writer<Counted>,
    llcs: csv::Writer<Counted>,
    deadline: Instant,
    max_bytes: u64,
    /// BPF's counts when it started.
    base: RingCounts,
    /// Why it must end early, once it must.
    end: Option<String>,
    /// Its time is up: it ends, not early.
    done: bool,
    /// A write failed: its files are removed rather than left torn.
    failed: bool,
}

impl Session {
    /// Opens the trace's files in @t's folder, or leaves nothing behind:
    /// a trace already there is kept unless @t says to replace it, and a
    /// file that cannot be written takes the other with it.
    fn open(t: &TraceStart, base: RingCounts) -> Result<Self> {
        let dir = PathBuf::from(&t.dir);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        if !t.replace {
            if let Some(f) = FILES.iter().find(|f| dir.join(f).exists()) {
                anyhow::bail!(
                    "{} already holds a trace ({f}): choose another folder, or replace it (--replace)",
                    dir.display()
                );
            }
        }
        let files = Self::create(&dir).inspect_err(|_| {
            for f in FILES {
                let _ = std::fs::remove_file(dir.join(f));
            }
        })?;
        let (wakeups, llcs) = files;
        Ok(Session {
            state: TraceState {
                dir: t.dir.clone(),
                every: t.every,
                running: true,
                ..Default::default()
            },
            dir,
            wakeups,
            llcs,
            deadline: Instant::now() + Duration::from_secs(t.seconds as u64),
            max_bytes: t.max_mb as u64 * (1 << 20),
            base,
            end: None,
            done: false,
            failed: false,
        })
    }

    /// The two files, each with its header written.
    fn create(dir: &Path) -> Result<(csv::Writer<Counted>, csv::Writer<Counted>)> {
        let open = |name: &str, header: Vec<String>| -> Result<csv::Writer<Counted>> {
            let path = dir.join(name);
            let f =
                File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
            let mut w = csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(Counted { file: f, bytes: 0 });
            // The header is written at once, from the rows' schema.
            w.write_record(header)
                .and_then(|_| w.flush().map_err(csv::Error::from))
                .with_context(|| format!("cannot write {}", path.display()))?;
            Ok(w)
        };
        Ok((
            open(FILES[0], trace::header::<Wakeup>())?,
            open(FILES[1], trace::header::<LlcSample>())?,
        ))
    }

    fn fail(&mut self, what: &str, e: impl std::fmt::Display) {
        if self.end.is_none() {
            self.end = Some(format!(
                "cannot write {what} in {}: {e}",
                self.dir.display()
            ));
        }
        self.failed = true;
    }

    fn record(&mut self, data: &[u8], places: &Places) {
        if self.end.is_some() || data.len() < std::mem::size_of::<sisu_trace_rec>() {
            return;
        }
        // SAFETY: the record is plain old data of that size (intf.h), read
        // unaligned from the ring's bytes.
        let r: sisu_trace_rec = unsafe { std::ptr::read_unaligned(data.as_ptr().cast()) };
        if let Err(e) = self.wakeups.serialize(row(&r, places)) {
            return self.fail("wakeups.csv", e);
        }
        self.state.records += 1;
        if self.wakeups.get_ref().bytes > self.max_bytes {
            self.end = Some(format!("its size cap of {} MB", self.max_bytes >> 20));
        }
    }

    /// Flushes and closes the files, or removes them after a failed write.
    fn close(mut self) -> TraceState {
        if !self.failed {
            if let Err(e) = self.wakeups.flush() {
                self.fail("wakeups.csv", e);
            } else if let Err(e) = self.llcs.flush() {
                self.fail("llcs.csv", e);
            }
        }
        if self.failed {
            for f in FILES {
                let _ = std::fs::remove_file(self.dir.join(f));
            }
            if let Some(why) = &mut self.end {
                why.push_str("; its files were removed");
            }
            self.state.removed = true;
        }
        self.state.running = false;
        self.state.ended = self.end.take();
        self.state
    }
}

#[derive(Default)]
struct Sink {
    session: Option<Session>,
    /// The last trace's state after it ended.
    last: Option<TraceState>,
}

/// The ring buffer and what drains it. The ring is mapped into this
/// process only while a trace runs: libbpf maps its data twice (so that a
/// record that wraps reads whole), 8 MiB of resident memory the scheduler
/// would otherwise carry for nothing.
pub struct Tracer {
    ring: Option<RingBuffer<'static>>,
    places: Rc<Places>,
    sink: Rc<RefCell<Sink>>,
}

impl Tracer {
    pub fn new(layout: &Layout) -> Self {
        Tracer {
            ring: None,
            places: Rc::new(Places::of(layout)),
            sink: Rc::new(RefCell::new(Sink::default())),
        }
    }

    fn attach(&self, map: &dyn MapCore) -> Result<RingBuffer<'static>> {
        let (s, places) = (self.sink.clone(), self.places.clone());
        let mut builder = RingBufferBuilder::new();
        builder
            .add(map, move |data: &[u8]| {
                if let Some(session) = s.borrow_mut().session.as_mut() {
                    session.record(data, &places);
                }
                0
            })
            .context("cannot attach to the trace's ring buffer")?;
        builder
            .build()
            .context("cannot attach to the trace's ring buffer")
    }

    /// Starts a trace on @map, the ring; @now are BPF's counts once the
    /// ring is empty, which this asks for first.
    pub fn start(
        &mut self,
        t: &TraceStart,
        map: &dyn MapCore,
        now: impl FnOnce() -> RingCounts,
    ) -> Result<(), String> {
        if let Some(s) = &self.sink.borrow().session {
            return Err(format!("a trace is already running into {}", s.state.dir));
        }
        if self.ring.is_none() {
            self.ring = Some(self.attach(map).map_err(|e| format!("{e:#}"))?);
        }
        // Whatever an earlier trace left in the ring is not this one's:
        // with no session, the records are read and thrown away.
        self.drain_for(REST_BUDGET);
        let session = Session::open(t, now()).map_err(|e| format!("{e:#}"))?;
        info!(
            "trace: one wakeup in {} on record into {}, for at most {} s and {} MB",
            t.every, t.dir, t.seconds, t.max_mb
        );
        self.sink.borrow_mut().session = Some(session);
        Ok(())
    }

    /// Reads records until the ring is empty or @budget is spent.
    fn drain_for(&self, budget: Duration) {
        self.drain_between(budget, &mut || {});
    }

    /// The same, calling @between after every batch.
    fn drain_between(&self, budget: Duration, between: &mut dyn FnMut()) {
        let Some(ring) = &self.ring else {
            return;
        };
        let until = Instant::now() + budget;
        loop {
            let n = ring.consume_raw_n(DRAIN_BATCH);
            if n < 0 {
                warn!(
                    "trace: cannot read the ring buffer: {}",
                    std::io::Error::from_raw_os_error(-n)
                );
                return;
            }
            if (n as usize) < DRAIN_BATCH || Instant::now() >= until {
                return;
            }
            between();
        }
    }

    /// Reads the ring to its end (within REST_BUDGET) once the trace's
    /// BPF side is off, calling @between after every batch: it may take
    /// seconds, in which the scheduler's loop must still keep time.
    pub fn drain_rest(&self, between: &mut dyn FnMut()) {
        if self.running() {
            self.drain_between(REST_BUDGET, between);
        }
    }

    /// Drains the ring for at most DRAIN_BUDGET, calling @between after
    /// every batch; true when the running trace must end (its time, its
    /// size, a failed write). Under a load that wakes tasks as fast as
    /// this thread writes rows, draining until empty would never return to
    /// the loop's other work (the socket's requests, the trace's own
    /// deadline); the ring then fills and BPF drops, which the records
    /// count.
    pub fn poll(&mut self, between: &mut dyn FnMut()) -> bool {
        if !self.running() {
            return false;
        }
        self.drain_between(DRAIN_BUDGET, between);
        let mut sink = self.sink.borrow_mut();
        let Some(s) = sink.session.as_mut() else {
            return false;
        };
        if Instant::now() >= s.deadline {
            s.done = true;
        }
        s.done || s.end.is_some()
    }

    pub fn running(&self) -> bool {
        self.sink.borrow().session.is_some()
    }

    /// One interval's state of every LLC: (width, util %, nr_idle_scan,
    /// auto's rule or "").
    pub fn llcs(&mut self, t_ns: u64, llcs: &[(usize, f64, u32, &str)]) {
        let mut sink = self.sink.borrow_mut();
        let Some(s) = sink.session.as_mut() else {
            return;
        };
        if s.end.is_some() {
            return;
        }
        for (i, (width, util, nr, rule)) in llcs.iter().enumerate() {
            let rec = LlcSample {
                t_ns,
                llc: i as u32,
                width: *width as u32,
                // A tenth of a percent is more than the sums resolve.
                util_pct: (util * 10.0).round() / 10.0,
                nr_idle_scan: *nr,
                auto_rule: rule.to_string(),
            };
            if let Err(e) = s.llcs.serialize(rec) {
                return s.fail("llcs.csv", e);
            }
        }
    }

    /// Ends the running trace (if any), after drain_rest(); @now are BPF's
    /// counts then. The state of the trace that ran last.
    pub fn stop(&mut self, now: RingCounts) -> Option<TraceState> {
        let mut sink = self.sink.borrow_mut();
        if let Some(mut s) = sink.session.take() {
            s.state.dropped = now.dropped.saturating_sub(s.base.dropped);
            // Sent but never written: the scheduler's thread fell behind
            // (or a failed write ended the trace first).
            s.state.unread = now
                .sent
                .saturating_sub(s.base.sent)
                .saturating_sub(s.state.records);
            let state = s.close();
            match &state.ended {
                Some(why) => warn!("trace into {} ended early: {why}", state.dir),
                None => info!(
                    "trace into {}: {} wakeups on record, {} dropped, {} unread",
                    state.dir, state.records, state.dropped, state.unread
                ),
            }
            sink.last = Some(state);
        }
        let last = sink.last.clone();
        drop(sink);
        self.ring = None;
        last
    }

    /// The running trace's state, or the last one's.
    pub fn state(&self, now: RingCounts) -> Option<TraceState> {
        let sink = self.sink.borrow();
        match &sink.session {
            Some(s) => {
                let mut st = s.state.clone();
                st.dropped = now.dropped.saturating_sub(s.base.dropped);
                Some(st)
            }
            None => sink.last.clone(),
        }
    }
}

/// Whether @dir names a folder a trace may write into: absolute, so that
/// the scheduler and its client agree on it.
pub fn check_dir(dir: &str) -> Result<(), String> {
    if Path::new(dir).is_absolute() {
        Ok(())
    } else {
        Err(format!(
            "the trace's folder must be an absolute path, got {dir:?}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> sisu_trace_rec {
        // SAFETY: plain old data; all-zero is a valid record.
        let mut r: sisu_trace_rec = unsafe { std::mem::zeroed() };
        r.woke_ns = 5_000;
        r.wait_ns = 1_500;
        r.waker_pid = 10;
        r.wakee_pid = 11;
        for (i, b) in b"hack,bench".iter().enumerate() {
            r.wakee_comm[i] = *b as std::os::raw::c_char;
        }
        r.prev = 1;
        r.target = 2;
        r.cpu = 5;
        r.ran_cpu = 5;
        r.rule = Policy::Util.to_bpf();
        r.scan_rule = Policy::Util.to_bpf();
        r.limit = 3;
        r.examined = 3;
        r.kind = bpf_intf::sisu_wait_SISU_WAIT_FOUND;
        r.outcome = bpf_intf::sisu_outcome_SISU_OUT_SCAN;
        r.flags = bpf_intf::sisu_trace_flag_SISU_TRACE_SCANNED;
        r.shadow_rules = 1 << Policy::Prop.to_bpf() | 1 << Policy::None.to_bpf();
        r.shadow_found = 1 << Policy::Prop.to_bpf();
        r
    }

    fn places() -> Places {
        Places {
            llc: vec![Some(0), Some(0), Some(0), Some(0), Some(1), Some(1), None],
            node: vec![0, 1],
        }
    }

    #[test]
    fn a_record_is_one_row_of_every_column() {
        let r = row(&rec(), &places());
        assert_eq!(r.wait_us, 1.5);
        assert_eq!(r.wakee_comm, "hack,bench");
        assert_eq!((r.cpu_llc, r.cpu_node), (Some(1), Some(1)));
        assert_eq!((r.found.as_str(), r.placement.as_str()), ("found", "scan"));
        assert_eq!((r.limit, r.examined), (Some(3), Some(3)));
        assert_eq!((r.shadow_util, r.shadow_prop), (None, Some(1)));
        assert_eq!(r.shadow_none, Some(0));
        // A CPU the layout does not know has no LLC or node.
        assert_eq!(places().of_cpu(6), (None, None));
        assert_eq!(places().of_cpu(-1), (None, None));
        // Without a scan, no scan rule, depth or count.
        let mut bare = rec();
        bare.flags = 0;
        let r = row(&bare, &places());
        assert_eq!(
            (r.scan_rule.as_str(), r.limit, r.examined),
            ("", None, None)
        );
    }

    #[test]
    fn a_session_writes_whole_csv_and_stops_at_its_size() {
        let dir = std::env::temp_dir().join(format!("sisu-trace-{}", std::process::id()));
        let t = TraceStart {
            dir: dir.to_string_lossy().into(),
            every: 1,
            seconds: 60,
            max_mb: 1,
            replace: false,
        };
        let mut s = Session::open(
            &t,
            RingCounts {
                sent: 0,
                dropped: 7,
            },
        )
        .unwrap();
        let r = rec();
        // SAFETY: viewing the record as its bytes, as the ring hands it.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                (&r as *const sisu_trace_rec).cast::<u8>(),
                std::mem::size_of::<sisu_trace_rec>(),
            )
        };
        let p = places();
        for _ in 0..3 {
            s.record(bytes, &p);
        }
        s.record(&bytes[..8], &p);
        let st = s.close();
        assert_eq!((st.records, st.running, st.ended.clone()), (3, false, None));
        let mut reader = csv::Reader::from_path(dir.join("wakeups.csv")).unwrap();
        // 23 columns and one per rule that can shadow.
        let shadows = Policy::ALL.iter().filter(|p| p.can_shadow()).count();
        assert_eq!(reader.headers().unwrap().len(), 23 + shadows);
        let rows: Vec<Wakeup> = reader.deserialize().collect::<Result<_, _>>().unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0], row(&r, &p), "a comma in a name is quoted");

        // A second trace into the folder is refused, and leaves the first
        // one as it was, unless asked to replace it.
        let err = Session::open(&t, RingCounts::default()).err().unwrap();
        assert!(
            format!("{err:#}").contains("already holds a trace"),
            "{err:#}"
        );
        assert_eq!(
            csv::Reader::from_path(dir.join("wakeups.csv"))
                .unwrap()
                .records()
                .count(),
            3
        );
        let t = TraceStart { replace: true, ..t };

        // Past the size cap the session asks to end, and its files stay
        // whole: it ended early, but nothing was removed.
        let mut s = Session::open(&t, RingCounts::default()).unwrap();
        while s.end.is_none() && s.state.records < 100_000 {
            s.record(bytes, &p);
            s.wakeups.flush().unwrap();
        }
        assert!(s.end.as_deref().unwrap_or("").contains("size cap"));
        let n = s.state.records;
        let st = s.close();
        assert!(!st.removed && st.ended.is_some());
        let mut reader = csv::Reader::from_path(dir.join("wakeups.csv")).unwrap();
        assert_eq!(reader.deserialize::<Wakeup>().count() as u64, n);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_that_cannot_be_made_takes_the_other_with_it() {
        let dir = std::env::temp_dir().join(format!("sisu-trace-bad-{}", std::process::id()));
        // llcs.csv cannot be created where a folder has its name.
        std::fs::create_dir_all(dir.join("llcs.csv")).unwrap();
        let t = TraceStart {
            dir: dir.to_string_lossy().into(),
            every: 1,
            seconds: 60,
            max_mb: 1,
            replace: true,
        };
        let err = Session::open(&t, RingCounts::default()).err().unwrap();
        assert!(format!("{err:#}").contains("llcs.csv"), "{err:#}");
        assert!(
            !dir.join("wakeups.csv").exists(),
            "no empty wakeups.csv left behind"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_relative_folder_is_refused() {
        assert!(check_dir("/tmp/t").is_ok());
        assert!(check_dir("t").unwrap_err().contains("absolute"));
    }
}
