//! `scx_sisutil observe`: the kernel's own wakeup placement, its SIS_UTIL
//! included, counted with the scheduler's counters while no sched_ext
//! scheduler is loaded (src/bpf/observe.bpf.c says what is seen and what
//! is derived). It serves the same statistics record on a socket of its
//! own, which `stats`, `--monitor` and the harness read when no
//! scx_sisutil scheduler runs.

use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use crossbeam::channel::TryRecvError;
use libbpf_rs::skel::{OpenSkel as _, SkelBuilder as _};
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use log::{info, warn};
use scx_utils::Topology;

use crate::bpf_intf;
use crate::observe_skel::{BpfSkel, BpfSkelBuilder};
use crate::op_time::{self, OpTime};
use crate::policy::{self, Policy};
use crate::server::{Job, Server};
use crate::stats::{self, Counters, LlcCounters, LlcMetrics, Metrics, RuleCounters};
use crate::timeliness::Timeliness;
use crate::utilisation::{self, Tracker};
use sisutil_proto::control::{Change, Settings, Status};
use sisutil_proto::policy::Shadow;
use sisutil_proto::topology::Layout;
use sisutil_proto::{socket, sysfs};

/// The probes, by what they see, as the statistics' ops name them.
const PROBES: [&str; 3] = [
    "select_task_rq_fair_entry",
    "select_task_rq_fair_exit",
    "sched_switch",
];

/// The loop's period: the scheduler's default interval, at which it folds
/// the kernel's busy time as the scheduler folds its own; also the longest
/// a request waits for it.
const FOLD_EVERY: Duration = Duration::from_millis(utilisation::DEFAULT_INTERVAL_MS);

/// Refuses to observe where nothing or the wrong thing would be seen.
fn preflight() -> Result<()> {
    sysfs::require_root("must run as root: loading BPF probes needs CAP_BPF and CAP_PERFMON")?;
    if sysfs::present() {
        let state = sysfs::settled_state()?;
        if state != "disabled" {
            let ops = sysfs::ops();
            bail!(
                "a sched_ext scheduler is loaded ({}): the kernel's fair class places no wakeups while it runs; unload it first",
                if ops.is_empty() { state } else { ops }
            );
        }
    }
    if Path::new(socket::OBSERVER).exists()
        && socket::connect_to(socket::OBSERVER, Some(500)).is_ok()
    {
        bail!(
            "an observer is already running ({} answers)",
            socket::OBSERVER
        );
    }
    Ok(())
}

pub struct Observer<'a> {
    skel: BpfSkel<'a>,
    _links: Vec<libbpf_rs::Link>,
    layout: Layout,
    shadow: Shadow,
    _bpf_stats: Option<op_time::Enabled>,
    baseline_rt: Vec<OpTime>,
    /// The kernel's load in the scheduler's estimate.
    tracker: Tracker,
    baseline: Counters,
    baseline_llc: Vec<LlcCounters>,
    baseline_rules: Vec<RuleCounters>,
    counting_since: Instant,
    gaps_said: bool,
    server: Server,
    timeliness: Timeliness,
}

impl<'a> Observer<'a> {
    /// Loads and attaches the probes, judging the rules in @shadow; with
    /// @bpf_stats the kernel times them.
    pub fn init(
        shadow: &Shadow,
        bpf_stats: bool,
        verbose: bool,
        open: &'a mut MaybeUninit<OpenObject>,
    ) -> Result<Self> {
        preflight()?;
        let bpf_stats = if bpf_stats {
            Some(op_time::enable()?)
        } else {
            None
        };
        info!(
            "scx_sisutil {} observing the kernel's wakeup placement",
            crate::sched::version()
        );
        let topo = Topology::new().context("cannot read the CPU topology")?;
        let layout = Layout::new(&topo)?;
        info!("topology: {}", layout.describe());

        let mut builder = BpfSkelBuilder::default();
        builder.obj_builder.debug(verbose);
        let mut skel = builder
            .open(open)
            .context("cannot open the observer's BPF object")?;
        publish_topology(&mut skel, &layout, shadow)?;
        let mut skel = skel.load().map_err(|e| {
            anyhow::anyhow!(
                "this kernel cannot be observed: loading the probes failed (select_task_rq_fair, runqueues and the sched_switch tracepoint must be in its BTF): {e}"
            )
        })?;
        let links = attach(&mut skel)?;
        let timeliness = Timeliness::new(FOLD_EVERY);
        let server = Server::launch(
            Path::new(socket::OBSERVER),
            stats::metas(),
            timeliness.requests.clone(),
        )
        .context("cannot start the observer's stats server")?;
        let nr_ids = layout.cpu_llc.len();
        let mut obs = Self {
            skel,
            _links: links,
            layout,
            shadow: shadow.clone(),
            _bpf_stats: bpf_stats,
            baseline_rt: Vec::new(),
            tracker: Tracker::new(nr_ids),
            baseline: Counters::default(),
            baseline_llc: Vec::new(),
            baseline_rules: Vec::new(),
            counting_since: Instant::now(),
            gaps_said: false,
            server,
            timeliness,
        };
        obs.restart_counting()?;
        info!("observing; statistics on {}", socket::OBSERVER);
        Ok(obs)
    }

    /// Folds the kernel's load and serves requests until @shutdown.
    pub fn run(&mut self, shutdown: Arc<AtomicBool>) -> Result<()> {
        while !shutdown.load(Ordering::Relaxed) {
            if self.timeliness.due() {
                self.say_gaps();
                self.publish_estimates();
            }
            self.serve()?;
            std::thread::park_timeout(self.timeliness.sleep_for(FOLD_EVERY));
        }
        Ok(())
    }

    /// The scheduler's estimate of each LLC's sum (utilisation.rs), made
    /// from the kernel's busy time: what `util` would read on this load,
    /// which BPF adds up at each scan beside the kernel's own sum.
    fn publish_estimates(&mut self) {
        let now = utilisation::monotonic_ns();
        let Some(bss) = self.skel.maps.bss_data.as_deref_mut() else {
            return;
        };
        for (i, llc) in self.layout.llcs.iter().enumerate() {
            for &cpu in &llc.cpus {
                let b = &bss.busy[cpu];
                // SAFETY: plain reads of fields BPF updates concurrently.
                let (busy, from, running) = unsafe {
                    (
                        ptr::read_volatile(&b.busy_ns),
                        ptr::read_volatile(&b.acct_from),
                        ptr::read_volatile(&b.running) != 0,
                    )
                };
                self.tracker
                    .update(cpu, utilisation::busy_at(busy, from, running, now), now);
            }
            let sum = self.tracker.sum(&llc.cpus) as u32;
            // SAFETY: an aligned u32 store into the record BPF reads.
            unsafe { ptr::write_volatile(&mut bss.est_sums[i], sum) };
        }
    }

    /// What the kernel lacks, one line each, once the probes have looked.
    fn say_gaps(&mut self) {
        if self.gaps_said {
            return;
        }
        let Some(bss) = self.skel.maps.bss_data.as_deref() else {
            return;
        };
        // SAFETY: an aligned u32 that BPF writes once.
        let gaps = unsafe { ptr::read_volatile(&bss.gaps) };
        if gaps == 0 {
            return;
        }
        self.gaps_said = true;
        for (bit, what) in [
            (bpf_intf::sisu_observe_gap_SISU_GAP_SD_LLC_SHARED, "this kernel has no sd_llc_shared: no nr_idle_scan, so no depths; the rest is counted"),
            (bpf_intf::sisu_observe_gap_SISU_GAP_SD_UTIL, "this kernel's sched_domain_shared has no util_avg/capacity: those fields stay 0"),
            (bpf_intf::sisu_observe_gap_SISU_GAP_LLC_IDS, "this kernel has no sd_llc_size/sd_llc_id: the LLCs are not checked against its own"),
        ] {
            if gaps & bit != 0 {
                warn!("{what}");
            }
        }
    }

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

    /// The observer has nothing to set: it answers a status request and
    /// restarts its counting on a reset.
    fn apply(&mut self, change: &Change) -> Result<Status, String> {
        let asks_setting = Change {
            reset: false,
            ..change.clone()
        } != Change::default();
        if asks_setting {
            return Err(
                "the observer watches the kernel's placement: it has no settings to change".into(),
            );
        }
        if change.reset {
            self.restart_counting().map_err(|e| format!("{e:#}"))?;
        }
        Ok(self.status())
    }

    fn status(&self) -> Status {
        Status {
            settings: Settings {
                shadow: self.shadow.clone(),
                ..Settings::default()
            },
            observer: true,
            ..Status::default()
        }
    }

    fn counters(&self) -> Result<Counters> {
        Counters::sum_cpus(&per_cpu(
            &self.skel.maps.stats,
            0,
            "the observer's stats map",
        )?)
    }

    fn rule_counters(&self, rule: Policy) -> Result<RuleCounters> {
        let per = per_cpu(
            &self.skel.maps.rule_stats,
            rule.to_bpf(),
            "the shadow rules' map",
        )?;
        RuleCounters::sum_cpus(&per)
    }

    fn llc_scans(&self) -> Result<Vec<LlcCounters>> {
        (0..self.layout.llcs.len() as u32)
            .map(|i| {
                LlcCounters::sum_cpus(&per_cpu(
                    &self.skel.maps.llc_scans,
                    i,
                    "the per-LLC scan map",
                )?)
            })
            .collect()
    }

    fn restart_counting(&mut self) -> Result<()> {
        self.baseline = self.counters()?;
        self.baseline_llc = self.llc_scans()?;
        self.baseline_rt = self.probe_times();
        self.baseline_rules = Policy::ALL
            .iter()
            .map(|&p| self.rule_counters(p))
            .collect::<Result<_>>()?;
        self.counting_since = Instant::now();
        self.timeliness.reset();
        Ok(())
    }

    fn metrics(&self) -> Result<Metrics> {
        let counters = self.counters()?.since(&self.baseline);
        let rules = self
            .shadow
            .rules()
            .iter()
            .map(|&r| {
                Ok((
                    r,
                    self.rule_counters(r)?
                        .since(&self.baseline_rules[r.to_bpf() as usize]),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let ctx = stats::Context {
            policy: sisutil_proto::stats::KERNEL.to_string(),
            small_llc: 0,
            switches: 0,
            elapsed_s: self.counting_since.elapsed().as_secs_f64(),
            topology: self.layout.describe(),
            depth_ttl_ms: 0,
            handback: false,
            lean: false,
            stats_off: false,
            sis_cache: false,
            sis_current: false,
            llcs: self.llc_metrics(&self.llc_scans()?),
            ops: PROBES
                .iter()
                .zip(self.probe_times())
                .zip(&self.baseline_rt)
                .map(|((probe, now), base)| (probe.to_string(), now.since(base)))
                .collect(),
        };
        let mut m = stats::metrics(&counters, &rules, ctx);
        self.timeliness.fill(&mut m);
        Ok(m)
    }

    /// Each probe's cumulative run time, in PROBES' order.
    fn probe_times(&self) -> Vec<OpTime> {
        let p = &self.skel.progs;
        [
            p.observe_enter.as_fd(),
            p.observe_exit.as_fd(),
            p.observe_switch.as_fd(),
        ]
        .into_iter()
        .map(|fd| op_time::read(fd).unwrap_or_default())
        .collect()
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
                // SAFETY: a copy of a record BPF rewrites now and then; a
                // torn copy mixes two samples of the same LLC.
                let k = unsafe { ptr::read_volatile(&bss.kllcs[i]) };
                let width = llc.cpus.len() as u64;
                LlcMetrics {
                    kernel_util_avg: k.sd_util_avg,
                    kernel_capacity: k.sd_capacity,
                    formula_nr_idle_scan: policy::nr_idle_scan(k.sum_util as u64, width),
                    kernel_llc_size: k.llc_size as u64,
                    ..stats::llc_record(
                        i,
                        &llc.cpus,
                        &seen,
                        k.sum_util,
                        k.nr_idle_scan,
                        k.has_idle_cores,
                    )
                }
            })
            .collect()
    }
}

fn attach(skel: &mut BpfSkel) -> Result<Vec<libbpf_rs::Link>> {
    let progs = &mut skel.progs;
    Ok(vec![
        progs
            .observe_enter
            .attach()
            .context("cannot attach to select_task_rq_fair (fentry)")?,
        progs
            .observe_exit
            .attach()
            .context("cannot attach to select_task_rq_fair (fexit)")?,
        progs
            .observe_switch
            .attach()
            .context("cannot attach to the sched_switch tracepoint")?,
    ])
}

fn publish_topology(
    skel: &mut crate::observe_skel::OpenBpfSkel,
    l: &Layout,
    shadow: &Shadow,
) -> Result<()> {
    skel.maps
        .llc_scans
        .set_max_entries(l.llcs.len() as u32)
        .context("cannot size the per-LLC scan map")?;
    let rodata = skel
        .maps
        .rodata_data
        .as_deref_mut()
        .context("the observer's BPF object has no read-only data")?;
    let (flat, first) = l.flat_cpus();
    rodata.nr_llcs = l.llcs.len() as u32;
    rodata.nr_cpu_ids =
        libbpf_rs::num_possible_cpus().context("cannot count the possible CPUs")? as u32;
    rodata.shadows = shadow.to_bpf();
    for (i, &cpu) in flat.iter().enumerate() {
        rodata.llc_cpus[i] = cpu as i32;
    }
    for (i, llc) in l.llcs.iter().enumerate() {
        rodata.llc_first[i] = first[i] as u32;
        rodata.llc_width[i] = llc.cpus.len() as u32;
    }
    for (cpu, pos) in l.cpu_positions() {
        rodata.cpu_pos[cpu] = pos as u32;
        rodata.cpu_llc[cpu] = l.cpu_llc[cpu].unwrap_or(0) as u32;
    }
    Ok(())
}

fn per_cpu(map: &impl MapCore, key: u32, what: &str) -> Result<Vec<Vec<u8>>> {
    Ok(map
        .lookup_percpu(&key.to_ne_bytes(), MapFlags::ANY)
        .with_context(|| format!("cannot read {what}"))?
        .unwrap_or_default())
}

/// A clean end takes the socket with it, so that clients find no observer.
impl Drop for Observer<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(socket::OBSERVER);
    }
}
