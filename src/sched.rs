//! Loading, running and unloading the BPF scheduler: checks before load,
//! the topology and settings BPF gets, the loop that publishes SIS_UTIL's
//! depth every interval and serves stats and control requests, and the
//! exit report.

use std::mem::MaybeUninit;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use crossbeam::channel::TryRecvError;
use libbpf_rs::skel::{OpenSkel as _, Skel as _};
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use log::{info, warn};
use scx_utils::{compat, scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report};
use scx_utils::{Topology, UserExitInfo};

use crate::auto::Auto;
use crate::bpf_intf;
use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use crate::config::Config;
use crate::op_time::{self, OpTime};
use crate::policy::{self, Policy};
use crate::server::{Job, Server};
use crate::stats::{self, Counters, LlcCounters, LlcMetrics, Metrics, RuleCounters};
use crate::timeliness::{self, Timeliness};
use crate::trace::{self, Tracer};
use crate::utilisation::{self, Tracker};
use sisutil_proto::control::{Change, Settings, Status, TraceCmd};
use sisutil_proto::sysfs;
use sisutil_proto::topology::{Layout, Span};

const ACTIVE: usize = bpf_intf::sisu_book_SISU_BOOK_ACTIVE as usize;
const SHADOW: usize = bpf_intf::sisu_book_SISU_BOOK_SHADOW as usize;

/// The longest the loop parks between looks at the request channel; a
/// request unparks it sooner.
const SERVE_EVERY: Duration = Duration::from_millis(50);

/// The version as the scx schedulers print it: semver, the git commit the
/// build came from (if it came from a git checkout), and the target.
pub fn version() -> String {
    let full = scx_utils::build_id::full_version(env!("CARGO_PKG_VERSION"));
    match sisutil_proto::BUILD_COMMIT {
        "" => full,
        git => {
            let (semver, rest) = full.split_once(' ').unwrap_or((&full, ""));
            format!("{semver}-{git} {rest}").trim_end().to_string()
        }
    }
}

/// Refuses to start where loading cannot work, with the reason.
pub fn preflight() -> Result<()> {
    sysfs::require_root(
        "must run as root: loading a BPF scheduler needs CAP_SYS_ADMIN and CAP_BPF",
    )?;
    if !sysfs::present() {
        bail!(
            "this kernel has no sched_ext ({} is missing; it needs CONFIG_SCHED_CLASS_EXT=y, Linux 6.12 or later)",
            sysfs::SCHED_EXT
        );
    }
    let state = sysfs::settled_state()?;
    match refusal(&state, &sysfs::ops()) {
        Some(why) => bail!(why),
        None => Ok(()),
    }
}

/// Why a start must be refused, given sched_ext's state and the name of
/// the loaded scheduler.
fn refusal(state: &str, ops: &str) -> Option<String> {
    let (state, ops) = (state.trim(), ops.trim());
    if state == "disabled" {
        return None;
    }
    if ops.starts_with(sysfs::OPS_NAME) {
        return Some(format!(
            "scx_sisutil is already running ({ops}); change its policy with `scx_sisutil set policy ...`"
        ));
    }
    Some(format!(
        "another sched_ext scheduler is already loaded ({}); unload it first",
        if ops.is_empty() { state } else { ops }
    ))
}

pub struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    link: Option<libbpf_rs::Link>,
    layout: Layout,
    tracker: Tracker,
    status: Status,
    /// Counters of every policy when counting last restarted.
    baseline: Vec<Counters>,
    /// BPF run time of every op then.
    baseline_rt: Vec<OpTime>,
    /// Every LLC's scan outcomes then.
    baseline_llc: Vec<LlcCounters>,
    /// Every shadow rule's verdicts then.
    baseline_rules: Vec<RuleCounters>,
    _bpf_stats: Option<op_time::Enabled>,
    /// Whether the kernel hands back a task whose found CPU was taken
    /// (SCX_ENQ_IMMED, note_placed() in BPF): the bounce counts mean
    /// something only then.
    handback: bool,
    counting_since: Instant,
    /// What the run started with, against which every switch is checked.
    config: Config,
    server: Server,
    timeliness: Timeliness,
    /// The adaptive rule's state, while it is the policy.
    auto: Auto,
    /// The trace's ring buffer and files.
    tracer: Tracer,
}

impl<'a> Scheduler<'a> {
    pub fn init(s: &Config, open_object: &'a mut MaybeUninit<OpenObject>) -> Result<Self> {
        let bpf_stats = if s.bpf_stats {
            Some(op_time::enable()?)
        } else {
            None
        };
        // What the scx schedulers log first: their version and options.
        info!("scx_sisutil {}", version());
        info!(
            "scheduler options: {}",
            std::env::args().collect::<Vec<_>>().join(" ")
        );
        let topo = Topology::new().context("cannot read the CPU topology")?;
        let layout = Layout::new(&topo)?;
        info!("topology: {}", layout.describe());

        let mut builder = BpfSkelBuilder::default();
        builder.obj_builder.debug(s.verbose);
        let mut skel = scx_ops_open!(
            builder,
            open_object,
            sisutil_ops,
            s.libbpf.clone().into_bpf_open_opts()
        )?;
        skel.struct_ops.sisutil_ops_mut().exit_dump_len = s.exit_dump_len;
        // Queued wakeups, as the fair class has them (TTWU_QUEUE): a waker
        // hands a task for another CPU to that CPU's wake list and an IPI
        // instead of spinning on its runqueue lock, which sched_ext makes it
        // do unless asked. With 8 vCPUs on 2 host cores the lock holder is
        // often not running, and the wakee waited milliseconds on an idle
        // CPU (docs/performance.md). Wakeups that this lets skip select_cpu
        // are placed in enqueue.
        // ENQ_LAST: a task the tick preempts to move it to another node
        // (spread() in migration.bpf.c) reaches enqueue even when nothing else
        // would run on its CPU, instead of being kept there.
        skel.struct_ops.sisutil_ops_mut().flags =
            *compat::SCX_OPS_ALLOW_QUEUED_WAKEUP | *compat::SCX_OPS_ENQ_LAST;
        publish_topology(&mut skel, &layout, s)?;
        if s.verbose {
            op_time::log_verifier_stats(skel.open_object_mut());
        }

        let mut skel = scx_ops_load!(skel, sisutil_ops, uei)?;
        info!(
            "verifier: {}",
            op_time::describe_verified(&op_time::verified_insns(skel.object()))
        );
        let status = Status {
            settings: s.settings.clone(),
            ..Status::default()
        };
        write_cfg(&mut skel, &status.settings, 1)?;
        let link = scx_ops_attach!(skel, sisutil_ops)?;
        let tracer = Tracer::new(&layout);

        let timeliness = Timeliness::new(s.interval);
        let server = Server::launch(
            Path::new(crate::socket::SOCKET),
            stats::metas(),
            timeliness.requests.clone(),
        )
        .context("cannot start the stats server")?;
        info!("scx_sisutil running: {status}");

        let nr_ids = layout.cpu_llc.len();
        let mut sched = Self {
            skel,
            link: Some(link),
            layout,
            tracker: Tracker::new(nr_ids),
            status,
            baseline: Vec::new(),
            baseline_rt: Vec::new(),
            baseline_llc: Vec::new(),
            baseline_rules: Vec::new(),
            _bpf_stats: bpf_stats,
            handback: s.detail_stats
                && compat::read_enum("scx_enq_flags", "SCX_ENQ_IMMED").unwrap_or(0) != 0,
            counting_since: Instant::now(),
            config: s.clone(),
            server,
            timeliness,
            auto: Auto::default(),
            tracer,
        };
        sched.restart_counting()?;
        Ok(sched)
    }

    /// Runs until `shutdown` or until the kernel unloads the scheduler;
    /// returns why it ended.
    ///
    /// A park rather than a timed receive on the request channel:
    /// crossbeam's timed receive spins and yields before it blocks, and
    /// every yield is a trip through this scheduler's own ops, every
    /// interval. A request unparks the loop (server.rs), which serves it
    /// at once.
    pub fn run(&mut self, shutdown: Arc<AtomicBool>) -> Result<UserExitInfo> {
        while !shutdown.load(Ordering::Relaxed) && !uei_exited!(&self.skel, uei) {
            if self.timeliness.due() {
                self.publish_depths();
                self.choose_rules();
                self.trace_llcs();
            }
            let (skel, layout, tracker, clock) = (
                &mut self.skel,
                &self.layout,
                &mut self.tracker,
                &mut self.timeliness,
            );
            if self
                .tracer
                .poll(&mut || keep_time(skel, layout, tracker, clock))
            {
                self.end_trace();
            }
            self.serve()?;
            std::thread::park_timeout(self.timeliness.sleep_for(SERVE_EVERY));
        }
        self.end_trace();
        // Dropping the link unregisters the scheduler; the kernel then
        // fills in why it exited.
        self.link.take();
        uei_report!(&self.skel, uei)
    }

    /// Answers every request waiting from the stats socket. A client that
    /// left meanwhile does not take its reply: nothing to do then.
    fn serve(&mut self) -> Result<()> {
        loop {
            match self.server.jobs().try_recv() {
                Ok(Job::Stats(tx)) => {
                    let _ = tx.send(self.metrics().unwrap_or_else(|e| {
                        warn!("cannot read the statistics: {e:#}");
                        Metrics::default()
                    }));
                }
                Ok(Job::Control(change, tx)) => {
                    let _ = tx.send(self.apply(&change));
                }
                Err(TryRecvError::Empty) => return Ok(()),
                Err(TryRecvError::Disconnected) => bail!("the stats server stopped"),
            }
        }
    }

    /// One interval: fold busy time into utilisation, and publish each
    /// LLC's sum and SIS_UTIL depth.
    fn publish_depths(&mut self) {
        publish_depths(&mut self.skel, &self.layout, &mut self.tracker);
    }

    /// While a trace runs, every LLC's state this interval goes on record.
    fn trace_llcs(&mut self) {
        if !self.tracer.running() {
            return;
        }
        let Some(bss) = self.skel.maps.bss_data.as_deref() else {
            return;
        };
        let auto = self.status.settings.policy == Policy::Auto;
        let rows: Vec<(usize, f64, u32, &str)> = self
            .layout
            .llcs
            .iter()
            .enumerate()
            .map(|(i, llc)| {
                let width = llc.cpus.len();
                let rec = &bss.llcs[i];
                let util = 100.0 * rec.sum_util as f64
                    / (width.max(1) as f64 * bpf_intf::SISU_CAPACITY as f64);
                let rule = match self.auto.llcs.get(i) {
                    Some(a) if auto => a.rule.name(),
                    _ => "",
                };
                (width, util, rec.nr_idle_scan, rule)
            })
            .collect();
        self.tracer.llcs(utilisation::monotonic_ns(), &rows);
    }

    /// The trace's ring counts over all CPUs.
    fn ring_counts(&self) -> trace::RingCounts {
        ring_counts(&self.skel, self.layout.cpu_llc.len())
    }

    /// Starts or stops the trace; the trace's state.
    fn trace_cmd(&mut self, cmd: &TraceCmd) -> Result<(), String> {
        match cmd {
            TraceCmd::Start(t) => {
                trace::check_dir(&t.dir)?;
                if t.every == 0 {
                    return Err("a trace takes one wakeup in 1 or more".into());
                }
                let (skel, n) = (&self.skel, self.layout.cpu_llc.len());
                self.tracer
                    .start(t, &skel.maps.trace_rb, || ring_counts(skel, n))?;
                self.set_trace_every(t.every);
                Ok(())
            }
            TraceCmd::Stop => {
                self.end_trace();
                Ok(())
            }
        }
    }

    /// Stops putting wakeups on record, then closes the files.
    fn end_trace(&mut self) {
        if !self.tracer.running() {
            return;
        }
        self.set_trace_every(0);
        // Reading the rest of the ring may take seconds: the depths are
        // published meanwhile, as each interval falls due.
        let (skel, layout, tracker, clock) = (
            &mut self.skel,
            &self.layout,
            &mut self.tracker,
            &mut self.timeliness,
        );
        self.tracer
            .drain_rest(&mut || keep_time(skel, layout, tracker, clock));
        let counts = self.ring_counts();
        self.tracer.stop(counts);
    }

    fn set_trace_every(&mut self, every: u32) {
        if let Some(data) = self.skel.maps.data_data.as_deref_mut() {
            // SAFETY: an aligned u32 store into the config BPF reads.
            unsafe { ptr::write_volatile(&mut data.cfg.trace_every, every) };
        }
    }

    /// The adaptive rule, while it is the policy: every EVERY intervals,
    /// every LLC's choice from what was measured meanwhile (auto.rs), and
    /// how often it judges scans there, published to BPF.
    fn choose_rules(&mut self) {
        if self.status.settings.policy != Policy::Auto || !self.auto.due() {
            return;
        }
        let counters = match self.llc_scans() {
            Ok(c) => c,
            Err(e) => {
                warn!("auto: cannot read the per-LLC counters: {e:#}");
                return;
            }
        };
        self.auto.update(counters);
        let Some(bss) = self.skel.maps.bss_data.as_deref_mut() else {
            return;
        };
        for (i, llc) in self.auto.llcs.iter().enumerate() {
            write_auto(bss, i, llc);
        }
    }

    /// Applies a run-time change; the BPF side sees it at its next wakeup.
    /// A trace request starts or stops the trace alone; every reply
    /// carries the trace's state.
    fn apply(&mut self, change: &Change) -> Result<Status, String> {
        if let Some(cmd) = &change.trace {
            self.trace_cmd(cmd)?;
            let mut status = self.status.clone();
            status.trace = self.tracer.state(self.ring_counts());
            return Ok(status);
        }
        let next = change.apply_to(&self.status)?;
        self.config.admits(&next.settings)?;
        if next != self.status {
            // A new epoch restarts SIS_PROP's per-CPU state, and the
            // adaptive rule starts over from util.
            if next.settings.policy != self.status.settings.policy {
                self.auto.reset();
                self.reset_auto_rules();
            }
            let epoch = next.switches as u32 + 1;
            write_cfg(&mut self.skel, &next.settings, epoch).map_err(|e| format!("{e:#}"))?;
            info!("switched: {} -> {next}", self.status);
        }
        if next != self.status || change.reset {
            self.restart_counting().map_err(|e| format!("{e:#}"))?;
        }
        self.status = next;
        let mut status = self.status.clone();
        status.trace = self.tracer.state(self.ring_counts());
        Ok(status)
    }

    /// Every LLC back to where the adaptive rule starts (auto::Llc's
    /// default), in BPF's records.
    fn reset_auto_rules(&mut self) {
        let Some(bss) = self.skel.maps.bss_data.as_deref_mut() else {
            return;
        };
        for i in 0..self.layout.llcs.len() {
            write_auto(bss, i, &crate::auto::Llc::default());
        }
    }

    fn counters(&self, policy: Policy) -> Result<Counters> {
        let per_cpu = per_cpu(&self.skel.maps.stats, policy.to_bpf(), "the stats map")?;
        Counters::sum_cpus(&per_cpu)
    }

    /// What a shadow rule would have done, summed over CPUs.
    fn rule_counters(&self, rule: Policy) -> Result<RuleCounters> {
        let per_cpu = per_cpu(
            &self.skel.maps.rule_stats,
            rule.to_bpf(),
            "the shadow rules' map",
        )?;
        RuleCounters::sum_cpus(&per_cpu)
    }

    /// Every LLC's scan outcomes, summed over the CPUs that counted them.
    fn llc_scans(&self) -> Result<Vec<LlcCounters>> {
        (0..self.layout.llcs.len() as u32)
            .map(|i| {
                let per_cpu = per_cpu(&self.skel.maps.llc_scans, i, "the per-LLC scan map")?;
                LlcCounters::sum_cpus(&per_cpu)
            })
            .collect()
    }

    fn restart_counting(&mut self) -> Result<()> {
        self.baseline = Policy::ALL
            .iter()
            .map(|&p| self.counters(p))
            .collect::<Result<_>>()?;
        // Right after the policy's counters, as metrics() reads them, so
        // that both cover the same wakeups but for a few syscalls' worth.
        self.baseline_llc = self.llc_scans()?;
        self.baseline_rules = Policy::ALL
            .iter()
            .map(|&p| self.rule_counters(p))
            .collect::<Result<_>>()?;
        self.baseline_rt = op_time::sample(&self.skel);
        self.counting_since = Instant::now();
        self.timeliness.reset();
        Ok(())
    }

    fn metrics(&self) -> Result<Metrics> {
        let p = self.status.settings.policy;
        let base = &self.baseline[p.to_bpf() as usize];
        let counters = self.counters(p)?.since(base);
        let llc_scans = self.llc_scans()?;
        let rules = self
            .status
            .settings
            .shadow
            .rules()
            .iter()
            .map(|&r| {
                let base = &self.baseline_rules[r.to_bpf() as usize];
                Ok((r, self.rule_counters(r)?.since(base)))
            })
            .collect::<Result<Vec<_>>>()?;
        let ctx = stats::Context {
            policy: p.to_string(),
            small_llc: self.status.settings.small_llc as u64,
            switches: self.status.switches,
            elapsed_s: self.counting_since.elapsed().as_secs_f64(),
            topology: self.layout.describe(),
            depth_ttl_ms: (self.timeliness.interval() * timeliness::DEPTH_TTL_INTERVALS).as_millis()
                as u64,
            handback: self.handback,
            lean: !self.config.detail_stats,
            stats_off: !self.config.scan_stats,
            sis_cache: self.status.settings.sis_cache,
            sis_current: self.status.settings.sis_current,
            llcs: self.llc_metrics(&llc_scans),
            ops: op_time::OPS
                .iter()
                .zip(op_time::sample(&self.skel))
                .zip(&self.baseline_rt)
                .map(|((op, now), base)| (op.to_string(), now.since(base)))
                .collect(),
        };
        let mut m = stats::metrics(&counters, &rules, ctx);
        self.timeliness.fill(&mut m);
        Ok(m)
    }

    fn llc_metrics(&self, scans: &[LlcCounters]) -> Vec<LlcMetrics> {
        let Some(bss) = self.skel.maps.bss_data.as_deref() else {
            return Vec::new();
        };
        self.layout
            .llcs
            .iter()
            .enumerate()
            .map(|(i, llc)| {
                let seen = stats::llc_seen(scans, &self.baseline_llc, i);
                let auto = self
                    .auto
                    .llcs
                    .get(i)
                    .filter(|_| self.status.settings.policy == Policy::Auto);
                let width = llc.cpus.len() as u64;
                let rec = &bss.llcs[i];
                let mean = |f: fn(&crate::bpf_skel::types::sisu_cpu_ctx) -> u64| {
                    llc.cpus.iter().map(|&c| f(&bss.cpus[c])).sum::<u64>() / width.max(1)
                };
                LlcMetrics {
                    prop_avg_scan_cost_ns: mean(|c| c.prop[ACTIVE].avg_scan_cost),
                    prop_wake_avg_idle_ns: mean(|c| c.prop[ACTIVE].wake_avg_idle),
                    shadow_prop_avg_scan_cost_ns: mean(|c| c.prop[SHADOW].avg_scan_cost),
                    shadow_prop_wake_avg_idle_ns: mean(|c| c.prop[SHADOW].wake_avg_idle),
                    prop_avg_idle_ns: mean(|c| c.avg_idle),
                    auto_rule: auto.map(|a| a.rule.to_string()).unwrap_or_default(),
                    auto_switches: auto.map_or(0, |a| a.switches),
                    auto_saved_us: auto.and_then(|a| a.sums.saved_ns()).unwrap_or(0.0) / 1000.0,
                    auto_cpu_ns: auto.and_then(|a| a.sums.cpu_ns()).unwrap_or(0.0),
                    auto_judges_one_in: auto.map_or(0, |a| 1 << a.shift),
                    auto_judged: seen.judged,
                    auto_gain_ns: auto
                        .and_then(|a| a.sums.gains())
                        .map(|g| g.to_vec())
                        .unwrap_or_default(),
                    ..stats::llc_record(
                        i,
                        &llc.cpus,
                        &seen,
                        rec.sum_util,
                        rec.nr_idle_scan,
                        rec.has_idle_cores,
                    )
                }
            })
            .collect()
    }
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        self.end_trace();
        self.link.take();
    }
}

/// What the loop must not stop doing while it reads the trace's ring: the
/// depths published when an interval is due.
fn keep_time(skel: &mut BpfSkel, layout: &Layout, tracker: &mut Tracker, clock: &mut Timeliness) {
    if clock.due() {
        publish_depths(skel, layout, tracker);
    }
}

/// One interval's publication: folds each CPU's busy time into its
/// utilisation, and publishes each LLC's sum and SIS_UTIL depth, stamped
/// with the time.
fn publish_depths(skel: &mut BpfSkel, layout: &Layout, tracker: &mut Tracker) {
    let now = utilisation::monotonic_ns();
    let Some(bss) = skel.maps.bss_data.as_deref_mut() else {
        return;
    };
    for llc in &layout.llcs {
        for &cpu in &llc.cpus {
            let c = &bss.cpus[cpu];
            // SAFETY: plain reads of fields BPF updates concurrently;
            // volatile so that every interval reads them afresh.
            let (busy, from, running) = unsafe {
                (
                    ptr::read_volatile(&c.busy_ns),
                    ptr::read_volatile(&c.acct_from),
                    ptr::read_volatile(&c.running) != 0,
                )
            };
            tracker.update(cpu, utilisation::busy_at(busy, from, running, now), now);
        }
    }
    for (i, llc) in layout.llcs.iter().enumerate() {
        let sum = tracker.sum(&llc.cpus);
        let nr = policy::nr_idle_scan(sum, llc.cpus.len() as u64);
        let rec = &mut bss.llcs[i];
        // SAFETY: aligned u32 stores into the mmapped record BPF reads.
        unsafe {
            ptr::write_volatile(&mut rec.sum_util, sum as u32);
            ptr::write_volatile(&mut rec.nr_idle_scan, nr as u32);
            ptr::write_volatile(&mut rec.published_at, now);
        }
    }
}

/// LLC @i's choice of the adaptive rule and its sample, into the record
/// BPF reads.
fn write_auto(bss: &mut crate::bpf_skel::types::bss, i: usize, llc: &crate::auto::Llc) {
    // SAFETY: aligned u32 stores into the mmapped record BPF reads.
    unsafe {
        ptr::write_volatile(&mut bss.llcs[i].auto_rule, llc.rule.to_bpf());
        ptr::write_volatile(&mut bss.llcs[i].auto_shift, llc.shift);
    }
}

/// The trace's ring counts, summed over the @n CPUs.
fn ring_counts(skel: &BpfSkel, n: usize) -> trace::RingCounts {
    let Some(bss) = skel.maps.bss_data.as_deref() else {
        return trace::RingCounts::default();
    };
    // SAFETY: plain reads of counters BPF updates concurrently.
    let read = |f: fn(&crate::bpf_skel::types::sisu_cpu_ctx) -> &u64| -> u64 {
        bss.cpus[..n]
            .iter()
            .map(|c| unsafe { ptr::read_volatile(f(c)) })
            .sum()
    };
    trace::RingCounts {
        sent: read(|c| &c.trace_sent),
        dropped: read(|c| &c.trace_dropped),
    }
}

/// Every CPU's copy of entry @key of the per-CPU array @map (none if
/// the entry is absent), raw.
fn per_cpu(map: &impl MapCore, key: u32, what: &str) -> Result<Vec<Vec<u8>>> {
    Ok(map
        .lookup_percpu(&key.to_ne_bytes(), MapFlags::ANY)
        .with_context(|| format!("cannot read {what}"))?
        .unwrap_or_default())
}

/// The kernel's sysctl_sched_migration_cost (debugfs since 5.13, procfs
/// before), which SIS_CACHE and SIS_CURRENT take as the bound of a short
/// sleep or run; its default where neither can be read.
fn migration_cost_ns() -> u64 {
    const DEFAULT: u64 = 500_000;
    for path in [
        "/sys/kernel/debug/sched/migration_cost_ns",
        "/proc/sys/kernel/sched_migration_cost_ns",
    ] {
        if let Some(ns) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
        {
            if ns != DEFAULT {
                info!(
                    "the kernel's migration cost is {ns} ns (SIS_CACHE's and SIS_CURRENT's short)"
                );
            }
            return ns;
        }
    }
    DEFAULT
}

/// Hands BPF the topology and the load-time settings.
fn publish_topology(skel: &mut crate::bpf_skel::OpenBpfSkel, l: &Layout, s: &Config) -> Result<()> {
    let rodata = skel
        .maps
        .rodata_data
        .as_deref_mut()
        .context("the BPF object has no read-only data")?;
    let (flat, first) = l.flat_cpus();
    rodata.nr_llcs = l.llcs.len() as u32;
    // One per-CPU record per LLC there is, not per LLC there could be.
    skel.maps
        .llc_scans
        .set_max_entries(l.llcs.len() as u32)
        .context("cannot size the per-LLC scan map")?;
    skel.maps
        .trace_rb
        .set_max_entries(trace::RING_BYTES)
        .context("cannot size the trace's ring buffer")?;
    rodata.smt_on = l.smt;
    rodata.slice_ns = s.slice.as_nanos() as u64;
    rodata.migration_cost_ns = match s.migration_cost {
        Some(d) => {
            info!("SIS_CACHE's and SIS_CURRENT's short: {d:?} (--migration-cost-us)");
            d.as_nanos() as u64
        }
        None => migration_cost_ns(),
    };
    rodata.stats_on = s.scan_stats;
    rodata.detail_on = s.detail_stats;
    rodata.wake_affine_on = s.wake_affine;
    rodata.depth_ttl_ns = (s.interval * timeliness::DEPTH_TTL_INTERVALS).as_nanos() as u64;
    rodata.own_tgid = std::process::id();
    for (i, &cpu) in flat.iter().enumerate() {
        rodata.llc_cpus[i] = cpu as i32;
    }
    for (i, llc) in l.llcs.iter().enumerate() {
        rodata.llc_first[i] = first[i] as u32;
        rodata.llc_width[i] = llc.cpus.len() as u32;
    }
    let n = l.llcs.len();
    for a in 0..n {
        for (k, b) in l.nearest(a).into_iter().enumerate() {
            rodata.llc_near[a][k] = b as u8;
        }
        for b in 0..n {
            rodata.llc_span[a][b] = l.span(a, b).bpf() as u8;
            rodata.llc_affine[a][b] = l.affine(a, b) as u8;
        }
    }
    let (llc_node, node_cpus, node_first) = l.flat_node_cpus();
    for (i, &node) in llc_node.iter().enumerate() {
        rodata.llc_node[i] = node as u32;
        for span in [Span::Llc, Span::Node, Span::Package, Span::Remote] {
            rodata.llc_numa_imb[i][span.bpf() as usize] = l.numa_imbalance_at(i, span) as u32;
        }
    }
    let (node_pkg, pkg_width) = l.node_packages();
    rodata.nr_nodes = node_pkg.len() as u32;
    rodata.nr_pkgs = pkg_width.len() as u32;
    for (node, &pkg) in node_pkg.iter().enumerate() {
        rodata.node_pkg[node] = pkg as u32;
    }
    for (pkg, &width) in pkg_width.iter().enumerate() {
        rodata.pkg_width[pkg] = width as u32;
    }
    for (i, &cpu) in node_cpus.iter().enumerate() {
        rodata.node_cpus[i] = cpu as i32;
    }
    for (node, &start) in node_first.iter().enumerate() {
        let end = node_first.get(node + 1).copied().unwrap_or(node_cpus.len());
        rodata.node_first[node] = start as u32;
        rodata.node_width[node] = (end - start) as u32;
    }
    for (cpu, pos) in l.cpu_positions() {
        rodata.cpu_pos[cpu] = pos as u32;
        rodata.cpu_llc[cpu] = l.cpu_llc[cpu].unwrap_or(0) as u32;
        rodata.cpu_sibs[cpu] = l.sibling_row(cpu);
    }
    // Until the first interval, every LLC counts as idle.
    let bss = skel
        .maps
        .bss_data
        .as_deref_mut()
        .context("the BPF object has no bss")?;
    let now = utilisation::monotonic_ns();
    for (i, llc) in l.llcs.iter().enumerate() {
        bss.llcs[i].nr_idle_scan = llc.cpus.len() as u32;
        bss.llcs[i].published_at = now;
    }
    Ok(())
}

fn write_cfg(skel: &mut BpfSkel, st: &Settings, epoch: u32) -> Result<()> {
    let data = skel
        .maps
        .data_data
        .as_deref_mut()
        .context("the BPF object has no data section")?;
    let shadows = st.shadow.to_bpf();
    // SAFETY: aligned u32 stores into the mmapped config BPF reads; the
    // epoch goes last so that a CPU that sees it sees the rest too.
    unsafe {
        ptr::write_volatile(&mut data.cfg.policy, st.policy.to_bpf());
        ptr::write_volatile(&mut data.cfg.shadows, shadows);
        ptr::write_volatile(&mut data.cfg.small_llc, st.small_llc);
        ptr::write_volatile(&mut data.cfg.sis_cache, st.sis_cache as u32);
        ptr::write_volatile(&mut data.cfg.sis_current, st.sis_current as u32);
        std::sync::atomic::fence(Ordering::SeqCst);
        ptr::write_volatile(&mut data.cfg.epoch, epoch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_names_semver_and_target() {
        let v = version();
        assert!(v.starts_with(env!("CARGO_PKG_VERSION")), "{v}");
        assert!(v.contains("-linux-"), "the target is named: {v}");
    }

    #[test]
    fn refuses_to_start_beside_a_loaded_scheduler() {
        assert_eq!(refusal("disabled\n", ""), None);
        let ours = refusal("enabled\n", "sisutil_0.1.0_x86_64\n").unwrap();
        assert!(ours.contains("scx_sisutil is already running"), "{ours}");
        let other = refusal("enabled", "bpfland_1.0.2").unwrap();
        assert!(other.contains("another sched_ext scheduler is already loaded (bpfland_1.0.2)"));
        let loading = refusal("enabling", "").unwrap();
        assert!(loading.contains("(enabling)"), "{loading}");
    }
}
