//! The arms of an A/B run and the machine state each needs: no sched_ext
//! scheduler (the kernel's EEVDF, with or without its own SIS_UTIL), this
//! scheduler with one of its policies (switched at run time, never
//! reloaded between them), or another sched_ext scheduler the user names.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use log::{info, warn};
use serde::{Deserialize, Serialize};

use sisutil_proto::control::{self, Change};
use sisutil_proto::policy::Policy;
use sisutil_proto::stats::Metrics;
use sisutil_proto::sysfs;

pub const FEATURES: &str = "/sys/kernel/debug/sched/features";

/// The program name of the scheduler the lab runs.
pub const SCHEDULER: &str = "scx_sisutil";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ArmKind {
    /// The kernel's fair class (EEVDF, with its SIS_UTIL), counted by
    /// `scx_sisutil observe` where `observed` (arms saved before the
    /// observer read as without it).
    Eevdf {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        observed: bool,
    },
    /// The same with the kernel's SIS_UTIL feature off.
    EevdfNoSisUtil {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        observed: bool,
    },
    /// This scheduler with a policy (and SIS_CACHE for a `+cache` arm,
    /// SIS_CURRENT for a `+current` one, one wakeup in N on record for a
    /// `+traceN` one; arms saved before them read as without).
    Scx {
        policy: Policy,
        small_llc: u32,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        sis_cache: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        sis_current: bool,
        #[serde(default, skip_serializing_if = "is_zero")]
        trace_every: u32,
    },
    /// Another sched_ext scheduler, started with a shell command.
    External { command: String },
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arm {
    pub name: String,
    #[serde(flatten)]
    pub kind: ArmKind,
}

impl Arm {
    /// A built-in arm: eevdf, eevdf-nosisutil, a policy name, or
    /// util-small[=N] (the review's small-LLC rule, N defaults to 16); a
    /// policy arm ending in `+cache` runs with SIS_CACHE, one ending in
    /// `+current` with SIS_CURRENT (both: `+cache+current`), one ending in
    /// `+traceN` with one wakeup in N on record (`+trace`: every one).
    /// Any of them with `#TAG` is the same arm under another name: two arms
    /// that differ in nothing (`util,util#2`) measure the method's own
    /// noise, against which a difference between policies is read.
    pub fn parse(s: &str) -> Result<Arm> {
        if let Some((base, tag)) = s.split_once('#') {
            if tag.is_empty() || !tag.chars().all(|c| c.is_ascii_alphanumeric()) {
                bail!("arm {s}: #TAG wants letters or digits after the #");
            }
            let mut arm = Arm::parse(base)?;
            arm.name = s.to_string();
            return Ok(arm);
        }
        if let Some((base, n)) = s.rsplit_once("+trace") {
            let every = if n.is_empty() {
                1
            } else {
                n.parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| anyhow!("arm {s}: +traceN wants N >= 1"))?
            };
            let mut arm = Arm::parse(base)?;
            match &mut arm.kind {
                ArmKind::Scx { trace_every, .. } => *trace_every = every,
                _ => bail!("arm {s}: +trace needs one of this scheduler's policies"),
            }
            arm.name = s.to_string();
            return Ok(arm);
        }
        if let Some(base) = s.strip_suffix("+bare") {
            let mut arm = Arm::parse(base)?;
            match &mut arm.kind {
                ArmKind::Eevdf { observed } | ArmKind::EevdfNoSisUtil { observed } => {
                    *observed = false
                }
                _ => bail!("arm {s}: +bare needs eevdf or eevdf-nosisutil"),
            }
            arm.name = s.to_string();
            return Ok(arm);
        }
        for option in ["+cache", "+current"] {
            let Some(base) = s.strip_suffix(option) else {
                continue;
            };
            let mut arm = Arm::parse(base)?;
            match &mut arm.kind {
                ArmKind::Scx {
                    sis_cache,
                    sis_current,
                    ..
                } => match option {
                    "+cache" => *sis_cache = true,
                    _ => *sis_current = true,
                },
                _ => bail!("arm {s}: {option} needs one of this scheduler's policies"),
            }
            arm.name = s.to_string();
            return Ok(arm);
        }
        let kind = match s {
            "eevdf" => ArmKind::Eevdf { observed: true },
            "eevdf-nosisutil" => ArmKind::EevdfNoSisUtil { observed: true },
            _ => {
                let (name, n) = s.split_once('=').unwrap_or((s, ""));
                if name == "util-small" {
                    let small = if n.is_empty() {
                        16
                    } else {
                        n.parse()
                            .ok()
                            .filter(|&n| (1..=1024).contains(&n))
                            .ok_or_else(|| anyhow!("arm {s}: the width must be 1..=1024"))?
                    };
                    ArmKind::Scx {
                        policy: Policy::Util,
                        small_llc: small,
                        sis_cache: false,
                        sis_current: false,
                        trace_every: 0,
                    }
                } else if !n.is_empty() {
                    bail!("arm {s}: only util-small takes a value");
                } else {
                    let policy = s.parse::<Policy>().map_err(|_| {
                        anyhow!(
                            "unknown arm {s:?} (eevdf, eevdf-nosisutil, either with +bare, {}, util-small[=N], any of these but eevdf with +cache, +current or +traceN)",
                            Policy::names()
                        )
                    })?;
                    ArmKind::Scx {
                        policy,
                        small_llc: 0,
                        sis_cache: false,
                        sis_current: false,
                        trace_every: 0,
                    }
                }
            }
        };
        Ok(Arm {
            name: s.to_string(),
            kind,
        })
    }

    /// Another scheduler: NAME=COMMAND.
    pub fn parse_external(s: &str) -> Result<Arm> {
        let (name, command) = s
            .split_once('=')
            .filter(|(n, c)| !n.is_empty() && !c.trim().is_empty())
            .ok_or_else(|| anyhow!("--arm wants NAME=COMMAND, got {s:?}"))?;
        if Arm::parse(name).is_ok() {
            bail!("--arm {name}: the name is taken by a built-in arm");
        }
        Ok(Arm {
            name: name.to_string(),
            kind: ArmKind::External {
                command: command.to_string(),
            },
        })
    }

    pub fn is_external(&self) -> bool {
        matches!(self.kind, ArmKind::External { .. })
    }

    pub fn is_scx(&self) -> bool {
        matches!(self.kind, ArmKind::Scx { .. })
    }

    /// A kernel arm counted by the observer.
    pub fn is_observed(&self) -> bool {
        matches!(
            self.kind,
            ArmKind::Eevdf { observed: true } | ArmKind::EevdfNoSisUtil { observed: true }
        )
    }

    /// Whether its samples carry the statistics record (this scheduler's,
    /// or the observer's of the kernel).
    pub fn has_stats(&self) -> bool {
        self.is_scx() || self.runs_this_scheduler() || self.is_observed()
    }

    /// An external arm whose command starts this scheduler with options
    /// of its own (`scx_sisutil --policy util --no-wake-affine`): it
    /// answers on the same socket, so its runs are counted as a policy
    /// arm's are, and the report can say what the options changed.
    pub fn runs_this_scheduler(&self) -> bool {
        let ArmKind::External { command } = &self.kind else {
            return false;
        };
        command
            .split_whitespace()
            .next()
            .and_then(|w| Path::new(w).file_name())
            .is_some_and(|n| n == SCHEDULER)
    }

    /// One wakeup in how many this arm puts on record (0: none).
    pub fn trace_every(&self) -> u32 {
        match self.kind {
            ArmKind::Scx { trace_every, .. } => trace_every,
            _ => 0,
        }
    }
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> Result<bool>) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while !done()? {
        if Instant::now() >= deadline {
            bail!("timed out after {}s waiting for {what}", timeout.as_secs());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// Stops a child: SIGINT, then SIGKILL if it does not go. Returns whether
/// it exited successfully.
fn stop_child(child: &mut Child, grace: Duration) -> bool {
    // SAFETY: kill() with a pid we started has no memory effects.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + grace;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}

/// What entering an arm took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// The arm was already in place.
    Stay,
    /// A policy change in the running scx_sisutil, through its socket: the
    /// same switch a user makes, so the run that follows measures the policy
    /// as it takes over.
    Live,
    /// A scheduler was loaded or unloaded: every task moved between
    /// schedulers and the utilisation sums start from nothing, a transient
    /// the warm-up run absorbs.
    Reload,
}

/// The machine's state for the arms, and putting it back.
pub struct Machine {
    exe: PathBuf,
    sched_args: Vec<String>,
    log: PathBuf,
    settle: Duration,
    sched: Option<Child>,
    external: Option<(String, Child)>,
    /// `scx_sisutil observe`, while an observed kernel arm runs.
    observer: Option<Child>,
    /// Why the observer could not start, said once; kernel arms then run
    /// without it.
    observer_failed: Option<String>,
    /// The kernel's SIS_UTIL feature as found, to restore.
    sis_util_orig: Option<bool>,
    current: Option<String>,
}

impl Machine {
    pub fn new(exe: PathBuf, sched_args: Vec<String>, log: PathBuf, settle: Duration) -> Self {
        Self {
            exe,
            sched_args,
            log,
            settle,
            sched: None,
            external: None,
            observer: None,
            observer_failed: None,
            sis_util_orig: None,
            current: None,
        }
    }

    /// Whether the kernel's SIS_UTIL feature is on.
    pub fn sis_util() -> Result<bool> {
        let text = std::fs::read_to_string(FEATURES)
            .with_context(|| format!("cannot read {FEATURES} (is debugfs mounted?)"))?;
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.contains(&"SIS_UTIL") {
            Ok(true)
        } else if words.contains(&"NO_SIS_UTIL") {
            Ok(false)
        } else {
            bail!("this kernel has no SIS_UTIL scheduler feature")
        }
    }

    fn set_sis_util(&mut self, on: bool) -> Result<()> {
        let cur = Self::sis_util()?;
        self.sis_util_orig.get_or_insert(cur);
        if cur != on {
            std::fs::write(FEATURES, if on { "SIS_UTIL" } else { "NO_SIS_UTIL" })
                .with_context(|| format!("cannot write {FEATURES}"))?;
        }
        Ok(())
    }

    /// Puts the machine into `arm`'s state, and says what that took.
    pub fn enter(&mut self, arm: &Arm) -> Result<Transition> {
        if self.current.as_deref() == Some(arm.name.as_str()) && self.healthy(arm).is_ok() {
            return Ok(Transition::Stay);
        }
        let was_scx = self.sched.is_some();
        match &arm.kind {
            ArmKind::Eevdf { observed } => {
                self.stop_external()?;
                self.stop_sched()?;
                self.restore_sis_util()?;
                self.observe(*observed)?;
            }
            ArmKind::EevdfNoSisUtil { observed } => {
                self.stop_external()?;
                self.stop_sched()?;
                self.set_sis_util(false)?;
                self.observe(*observed)?;
            }
            ArmKind::Scx {
                policy,
                small_llc,
                sis_cache,
                sis_current,
                ..
            } => {
                self.stop_observer()?;
                self.stop_external()?;
                self.restore_sis_util()?;
                self.start_sched()?;
                control::send(&Change {
                    policy: Some(*policy),
                    small_llc: Some(*small_llc),
                    sis_cache: Some(*sis_cache),
                    sis_current: Some(*sis_current),
                    ..Default::default()
                })
                .with_context(|| format!("cannot switch to {}", arm.name))?;
                // A trace an arm before left running (a run that failed)
                // is not this arm's.
                self.stop_trace()
                    .with_context(|| format!("cannot stop the trace before {}", arm.name))?;
            }
            ArmKind::External { command } => {
                self.stop_observer()?;
                self.stop_sched()?;
                self.restore_sis_util()?;
                self.stop_external()?;
                self.start_external(&arm.name, command)?;
            }
        }
        let live = was_scx && matches!(arm.kind, ArmKind::Scx { .. });
        self.current = Some(arm.name.clone());
        Ok(if live {
            Transition::Live
        } else {
            Transition::Reload
        })
    }

    /// Puts one wakeup in @every on record into @dir (an absolute path),
    /// for one run: an hour at most, and @max_mb of rows.
    pub fn start_trace(&self, dir: &Path, every: u32, max_mb: u32) -> Result<()> {
        control::send(&Change {
            trace: Some(control::TraceCmd::Start(control::TraceStart {
                dir: dir.display().to_string(),
                every,
                seconds: 3600,
                max_mb,
                // The harness owns its results folder.
                replace: true,
            })),
            ..Default::default()
        })
        .with_context(|| format!("cannot start a trace into {}", dir.display()))?;
        Ok(())
    }

    /// Ends the running trace, if one runs; what the last one recorded.
    pub fn stop_trace(&self) -> Result<Option<control::TraceState>> {
        let status = control::send(&Change {
            trace: Some(control::TraceCmd::Stop),
            ..Default::default()
        })?;
        Ok(status.trace)
    }

    /// Takes `arm`'s scheduler off the machine, whatever state it is in.
    pub fn leave(&mut self, arm: &Arm) -> Result<()> {
        if self.current.as_deref() == Some(arm.name.as_str()) {
            self.current = None;
        }
        match arm.kind {
            ArmKind::External { .. } => self.stop_external(),
            ArmKind::Scx { .. } => self.stop_sched(),
            ArmKind::Eevdf { .. } | ArmKind::EevdfNoSisUtil { .. } => {
                let a = self.stop_observer();
                self.restore_sis_util().and(a)
            }
        }
    }

    /// Whether the arm's state still holds (a scheduler may have been
    /// unloaded by the kernel during a run).
    pub fn healthy(&mut self, arm: &Arm) -> Result<()> {
        match &arm.kind {
            ArmKind::Scx { .. } => {
                let alive = self
                    .sched
                    .as_mut()
                    .is_some_and(|c| matches!(c.try_wait(), Ok(None)));
                if !alive || sysfs::state() != "enabled" {
                    bail!(
                        "scx_sisutil is no longer running (its log: {})",
                        log_tail(&self.log)
                    );
                }
            }
            ArmKind::External { .. } => {
                if sysfs::state() != "enabled" {
                    bail!("{} is no longer loaded", arm.name);
                }
            }
            ArmKind::Eevdf { observed } | ArmKind::EevdfNoSisUtil { observed } => {
                if sysfs::state() != "disabled" {
                    bail!("a sched_ext scheduler got loaded during the eevdf arm");
                }
                let lost = self
                    .observer
                    .as_mut()
                    .is_some_and(|c| !matches!(c.try_wait(), Ok(None)));
                if *observed && lost {
                    bail!(
                        "the observer is no longer running (its log: {})",
                        log_tail(&self.log)
                    );
                }
            }
        }
        Ok(())
    }

    /// Starts @cmd with its output appended to the run's log.
    fn spawn_logged(&self, mut cmd: Command) -> Result<Child> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .with_context(|| format!("cannot open {}", self.log.display()))?;
        Ok(cmd
            .stdout(log.try_clone()?)
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()?)
    }

    fn start_sched(&mut self) -> Result<()> {
        if self.sched.is_some() {
            return Ok(());
        }
        let mut cmd = Command::new(&self.exe);
        cmd.args(["--policy", "util"]);
        // The report's found-rates, waits and hand-backs are the detailed
        // statistics', which a run without statistics cannot have.
        if !self
            .sched_args
            .iter()
            .any(|a| a == "--no-scan-stats" || a == "--detail-stats")
        {
            cmd.arg("--detail-stats");
        }
        cmd.args(&self.sched_args);
        let child = self.spawn_logged(cmd).context("cannot start scx_sisutil")?;
        self.sched = Some(child);
        let log = self.log.clone();
        let started = wait_until("scx_sisutil to load", Duration::from_secs(180), || {
            if let Some(Ok(Some(st))) = self.sched.as_mut().map(|c| c.try_wait()) {
                bail!(
                    "scx_sisutil exited ({st}) while loading: {}",
                    log_tail(&log)
                );
            }
            Ok(sysfs::ours_enabled())
        });
        if let Err(e) = started {
            self.stop_sched()?;
            return Err(e);
        }
        info!("scx_sisutil loaded; settling {:?}", self.settle);
        std::thread::sleep(self.settle);
        Ok(())
    }

    /// Whether the kernel arm now running is counted by the observer.
    pub fn observing(&self) -> bool {
        self.observer.is_some()
    }

    /// Starts the observer, or stops it, for a kernel arm. One that cannot
    /// start (a kernel without what it probes) is said once, and the
    /// kernel arms run without it.
    fn observe(&mut self, on: bool) -> Result<()> {
        if !on {
            return self.stop_observer();
        }
        if self.observer.is_some() || self.observer_failed.is_some() {
            return Ok(());
        }
        if let Err(e) = self.start_observer() {
            warn!("the kernel arms run without the observer: {e:#}");
            self.observer_failed = Some(format!("{e:#}"));
        }
        Ok(())
    }

    fn start_observer(&mut self) -> Result<()> {
        let mut cmd = Command::new(&self.exe);
        cmd.args(["observe", "--shadow", "all"]);
        // Timing the BPF is asked of every program the run loads.
        if self.sched_args.iter().any(|a| a == "--bpf-stats") {
            cmd.arg("--bpf-stats");
        }
        let child = self
            .spawn_logged(cmd)
            .context("cannot start scx_sisutil observe")?;
        self.observer = Some(child);
        let log = self.log.clone();
        let started = wait_until("the observer to load", Duration::from_secs(180), || {
            if let Some(Ok(Some(st))) = self.observer.as_mut().map(|c| c.try_wait()) {
                bail!(
                    "the observer exited ({st}) while loading: {}",
                    log_tail(&log)
                );
            }
            Ok(
                sisutil_proto::socket::connect_to(sisutil_proto::socket::OBSERVER, Some(200))
                    .is_ok(),
            )
        });
        if let Err(e) = started {
            self.stop_observer()?;
            return Err(e);
        }
        info!("observer loaded");
        Ok(())
    }

    fn stop_observer(&mut self) -> Result<()> {
        if let Some(mut child) = self.observer.take() {
            if !stop_child(&mut child, Duration::from_secs(30)) {
                warn!("the observer did not exit cleanly: {}", log_tail(&self.log));
            }
        }
        Ok(())
    }

    fn stop_sched(&mut self) -> Result<()> {
        if let Some(mut child) = self.sched.take() {
            if !stop_child(&mut child, Duration::from_secs(30)) {
                warn!("scx_sisutil did not exit cleanly: {}", log_tail(&self.log));
            }
            wait_until("sched_ext to be disabled", Duration::from_secs(30), || {
                Ok(sysfs::state() == "disabled")
            })?;
        }
        Ok(())
    }

    fn start_external(&mut self, name: &str, command: &str) -> Result<()> {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", command]);
        let child = self
            .spawn_logged(cmd)
            .with_context(|| format!("cannot start arm {name}"))?;
        self.external = Some((name.to_string(), child));
        let started = wait_until(&format!("{name} to load"), Duration::from_secs(180), || {
            if let Some((_, c)) = self.external.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    bail!("{name} exited ({st}) while loading");
                }
            }
            Ok(sysfs::state() == "enabled")
        });
        if let Err(e) = started {
            self.stop_external()?;
            return Err(e);
        }
        std::thread::sleep(self.settle);
        Ok(())
    }

    fn stop_external(&mut self) -> Result<()> {
        if let Some((name, mut child)) = self.external.take() {
            if !stop_child(&mut child, Duration::from_secs(30)) {
                warn!("{name} did not exit cleanly");
            }
            wait_until("sched_ext to be disabled", Duration::from_secs(30), || {
                Ok(sysfs::state() == "disabled")
            })?;
        }
        Ok(())
    }

    fn restore_sis_util(&mut self) -> Result<()> {
        if let Some(orig) = self.sis_util_orig {
            self.set_sis_util(orig)?;
        }
        Ok(())
    }

    /// Restarts the running scheduler's counters.
    pub fn reset_stats(&self) -> Result<()> {
        control::send(&Change {
            reset: true,
            ..Default::default()
        })
        .map(|_| ())
    }

    pub fn fetch_stats(&self) -> Result<Metrics> {
        sisutil_proto::monitor::fetch()
    }

    /// Unloads whatever runs and restores the kernel's SIS_UTIL feature.
    pub fn shutdown(&mut self) -> Result<()> {
        let o = self.stop_observer();
        let a = self.stop_external().and(o);
        let b = self.stop_sched();
        let c = self.restore_sis_util();
        self.current = None;
        a.and(b).and(c)
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            warn!("could not restore the machine's state: {e:#}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_builtin_arms() {
        assert_eq!(
            Arm::parse("eevdf").unwrap().kind,
            ArmKind::Eevdf { observed: true }
        );
        assert_eq!(
            Arm::parse("eevdf-nosisutil").unwrap().kind,
            ArmKind::EevdfNoSisUtil { observed: true }
        );
        assert_eq!(
            Arm::parse("eevdf+bare").unwrap().kind,
            ArmKind::Eevdf { observed: false }
        );
        assert!(!Arm::parse("eevdf-nosisutil+bare").unwrap().has_stats());
        assert!(Arm::parse("eevdf#2").unwrap().has_stats());
        assert!(Arm::parse("util+bare").is_err());
        assert_eq!(
            Arm::parse("prop").unwrap().kind,
            ArmKind::Scx {
                policy: Policy::Prop,
                small_llc: 0,
                sis_cache: false,
                sis_current: false,
                trace_every: 0
            }
        );
        assert_eq!(
            Arm::parse("util-small").unwrap().kind,
            ArmKind::Scx {
                policy: Policy::Util,
                small_llc: 16,
                sis_cache: false,
                sis_current: false,
                trace_every: 0
            }
        );
        assert_eq!(
            Arm::parse("util-small=8").unwrap().kind,
            ArmKind::Scx {
                policy: Policy::Util,
                small_llc: 8,
                sis_cache: false,
                sis_current: false,
                trace_every: 0
            }
        );
        assert_eq!(
            Arm::parse("prop+cache").unwrap().kind,
            ArmKind::Scx {
                policy: Policy::Prop,
                small_llc: 0,
                sis_cache: true,
                sis_current: false,
                trace_every: 0
            }
        );
        assert_eq!(
            Arm::parse("util+cache+current").unwrap().kind,
            ArmKind::Scx {
                policy: Policy::Util,
                small_llc: 0,
                sis_cache: true,
                sis_current: true,
                trace_every: 0
            }
        );
        assert_eq!(
            Arm::parse("util+trace64").unwrap().kind,
            ArmKind::Scx {
                policy: Policy::Util,
                small_llc: 0,
                sis_cache: false,
                sis_current: false,
                trace_every: 64
            }
        );
        assert!(matches!(
            Arm::parse("prop+current+trace").unwrap().kind,
            ArmKind::Scx {
                sis_current: true,
                trace_every: 1,
                ..
            }
        ));
        assert!(Arm::parse("util+trace0").is_err());
        assert!(Arm::parse("eevdf+trace").is_err());
        assert!(Arm::parse("auto").unwrap().is_scx());
        assert!(Arm::parse("eevdf+current").is_err());
        assert_eq!(
            Arm::parse("util-small=8+cache").unwrap().name,
            "util-small=8+cache"
        );
        assert!(Arm::parse("eevdf+cache").is_err());
        assert!(Arm::parse("util-small=0").is_err());
        assert!(Arm::parse("prop=3").is_err());
        assert!(Arm::parse("fast").is_err());
        assert!(Arm::parse("builtin").unwrap().is_scx());
        assert!(!Arm::parse("eevdf").unwrap().is_scx());
    }

    #[test]
    fn a_tag_names_the_same_arm_again() {
        let again = Arm::parse("util+cache#2").unwrap();
        assert_eq!(again.name, "util+cache#2");
        assert_eq!(again.kind, Arm::parse("util+cache").unwrap().kind);
        assert_eq!(
            Arm::parse("eevdf#b").unwrap().kind,
            ArmKind::Eevdf { observed: true }
        );
        assert!(Arm::parse("util#").is_err());
        assert!(Arm::parse("util#a b").is_err());
        assert!(Arm::parse("fast#2").is_err());
    }

    #[test]
    fn parses_external_arms() {
        let a = Arm::parse_external("bpfland=scx_bpfland -s 5000").unwrap();
        assert_eq!(a.name, "bpfland");
        assert_eq!(
            a.kind,
            ArmKind::External {
                command: "scx_bpfland -s 5000".into()
            }
        );
        assert!(Arm::parse_external("bpfland").is_err());
        assert!(Arm::parse_external("=cmd").is_err());
        assert!(Arm::parse_external("x=  ").is_err());
        assert!(Arm::parse_external("util=scx_other").is_err());
        assert!(!a.has_stats());
        // This scheduler under another name is counted; a command that
        // only mentions it is not.
        for ours in ["u=scx_sisutil --no-wake-affine", "u=/usr/bin/scx_sisutil"] {
            assert!(Arm::parse_external(ours).unwrap().has_stats(), "{ours}");
        }
        for other in [
            "u=sh /tmp/scx_sisutil.sh",
            "u=scx_sisutil_old",
            "u=echo scx_sisutil",
        ] {
            assert!(!Arm::parse_external(other).unwrap().has_stats(), "{other}");
        }
    }

    #[test]
    fn kernel_arms_saved_before_the_observer_read_as_unobserved() {
        let old: Arm = serde_json::from_str(r#"{"name":"eevdf","kind":"eevdf"}"#).unwrap();
        assert_eq!(old.kind, ArmKind::Eevdf { observed: false });
        let j = serde_json::to_string(&Arm::parse("eevdf").unwrap()).unwrap();
        assert_eq!(j, r#"{"name":"eevdf","kind":"eevdf","observed":true}"#);
    }

    #[test]
    fn arms_serialise_with_their_kind() {
        let a = Arm::parse("util-small=8").unwrap();
        let j = serde_json::to_string(&a).unwrap();
        assert_eq!(
            j,
            r#"{"name":"util-small=8","kind":"scx","policy":"util","small_llc":8}"#
        );
        assert_eq!(serde_json::from_str::<Arm>(&j).unwrap(), a);
        let c = Arm::parse("util+cache").unwrap();
        let j = serde_json::to_string(&c).unwrap();
        assert!(j.contains(r#""sis_cache":true"#), "{j}");
        assert_eq!(serde_json::from_str::<Arm>(&j).unwrap(), c);
    }
}
