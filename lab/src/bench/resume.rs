//! A run that outlives its machine. A study in the VM runs for hours, and
//! the guest can die under it (the kernel's own bugs, the emulator's):
//! everything the guest held would go with it. So the results file goes
//! out now and then while the run goes on (a checkpoint: a command the
//! caller gives, between samples, never during one), and a new run can
//! take an earlier file up again (`--resume`): it keeps the samples that
//! file holds and runs only the rest, in the order the plan had them.
//!
//! Only the same run can be taken up: the same arms, points, iterations,
//! order and analyses, measured by the same build on the same kernel and
//! topology. Anything else would mix two experiments in one table.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use log::{info, warn};
use serde::Serialize;

use super::results::Results;

/// When the next checkpoint is due: after the first sample, then at most
/// once per period, so that a slow link out of the guest does not stretch
/// a long run.
pub struct Checkpoint<'a> {
    cmd: Option<&'a str>,
    period: Duration,
    last: Option<Instant>,
}

impl<'a> Checkpoint<'a> {
    pub fn new(cmd: Option<&'a str>, period_s: u64) -> Self {
        Self {
            cmd,
            period: Duration::from_secs(period_s),
            last: None,
        }
    }

    /// Runs the command if one is due; the results file is saved by then.
    /// A checkpoint that fails costs the run nothing but its safety net,
    /// so it is said and the run goes on.
    pub fn after_sample(&mut self) {
        let Some(cmd) = self.cmd else { return };
        if self.last.is_some_and(|t| t.elapsed() < self.period) {
            return;
        }
        self.last = Some(Instant::now());
        match Command::new("sh").arg("-c").arg(cmd).status() {
            Ok(s) if s.success() => {}
            Ok(s) => warn!("checkpoint command `{cmd}` failed ({s})"),
            Err(e) => warn!("cannot run the checkpoint command `{cmd}`: {e}"),
        }
    }
}

/// What must be equal for two runs to be one: the plan and what measured
/// it. `created`, the command line and the host name may differ.
fn plan(r: &Results) -> Result<serde_json::Value> {
    #[derive(Serialize)]
    struct Plan<'a> {
        arms: &'a [super::arms::Arm],
        method: &'a super::results::Method,
        kernel: &'a str,
        topology: &'a str,
        scheduler_args: &'a [String],
        commit: &'a str,
        dirty: bool,
    }
    serde_json::to_value(Plan {
        arms: &r.arms,
        method: &r.method,
        kernel: &r.env.kernel,
        topology: &r.env.topology,
        scheduler_args: &r.env.scheduler_args,
        commit: &r.env.commit,
        dirty: r.env.dirty,
    })
    .context("cannot compare the runs' plans")
}

/// The first top-level key whose values differ, to name in the refusal.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value) -> String {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => a
            .iter()
            .find(|(k, v)| b.get(*k) != Some(v))
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| "?".into()),
        _ => "?".into(),
    }
}

/// Takes the samples of the earlier run in @from into @results, whose
/// points are laid out already, noting that it did so @now; returns how
/// many it took. The run then skips every (point, arm, iteration) that
/// has its sample.
pub fn take_up(results: &mut Results, from: &Path, now: &str) -> Result<usize> {
    let old = Results::load(from).context("cannot resume")?;
    let (want, have) = (plan(results)?, plan(&old)?);
    if want != have {
        bail!(
            "cannot resume from {}: it is another run (its {} differs from this one's)",
            from.display(),
            first_difference(&want, &have)
        );
    }
    if old.points.len() != results.points.len() {
        bail!(
            "cannot resume from {}: it has {} point(s), the plan {}",
            from.display(),
            old.points.len(),
            results.points.len()
        );
    }
    let mut taken = 0;
    for (mine, theirs) in results.points.iter_mut().zip(old.points) {
        taken += theirs.samples.values().map(Vec::len).sum::<usize>();
        mine.samples = theirs.samples;
    }
    results.dropped = old.dropped;
    results.created = old.created;
    results.resumed = old.resumed;
    results
        .resumed
        .push(format!("{now} with {taken} sample(s)"));
    info!("resuming {}: {taken} sample(s) kept", from.display());
    Ok(taken)
}

/// Whether the run has this sample already (taken up from an earlier one).
pub fn has_sample(results: &Results, point: usize, arm: &str, iteration: u32) -> bool {
    results.points[point]
        .samples
        .get(arm)
        .is_some_and(|s| s.len() > iteration as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::fixture;

    const NOW: &str = "2026-12-07 06:00:00 UTC";

    /// The plan afresh, as a new run lays it out: no samples yet.
    fn fresh() -> Results {
        let mut r = fixture::results();
        r.created = "later".into();
        r.env.command_line = vec!["--resume".into()];
        for p in &mut r.points {
            p.samples.clear();
        }
        r
    }

    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("sisu-resume-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn saved(r: &Results, tag: &str) -> std::path::PathBuf {
        let path = scratch(tag).join("results.json");
        r.save(&path).unwrap();
        path
    }

    #[test]
    fn keeps_the_earlier_samples_and_skips_only_them() {
        let mut old = fixture::results();
        // The guest died in the third round: util's last sample at the
        // second point never ran.
        old.points[1].samples.get_mut("util").unwrap().pop();
        let path = saved(&old, "keeps");
        let mut r = fresh();
        assert_eq!(take_up(&mut r, &path, NOW).unwrap(), 11);
        assert_eq!(r.created, old.created);
        assert_eq!(r.points[0].samples, old.points[0].samples);
        assert!(has_sample(&r, 1, "util", 1));
        assert!(!has_sample(&r, 1, "util", 2));
        assert!(has_sample(&r, 1, "eevdf", 2));
        assert_eq!(r.resumed.len(), 1);
        assert!(
            r.resumed[0] == format!("{NOW} with 11 sample(s)"),
            "{:?}",
            r.resumed
        );
        assert!(super::super::report::text(&r).contains("RESUMED after its machine died"));
    }

    #[test]
    fn refuses_another_run() {
        let old = fixture::results();
        let path = saved(&old, "refuses");
        let mut r = fresh();
        r.method.iterations = 5;
        let e = format!("{:#}", take_up(&mut r, &path, NOW).unwrap_err());
        assert!(e.contains("it is another run (its method differs"), "{e}");
        let mut r = fresh();
        r.env.commit = "gabc".into();
        let e = format!("{:#}", take_up(&mut r, &path, NOW).unwrap_err());
        assert!(e.contains("its commit differs"), "{e}");
        let mut r = fresh();
        r.arms.pop();
        assert!(take_up(&mut r, &path, NOW).is_err());
    }

    #[test]
    fn a_checkpoint_runs_first_then_once_a_period() {
        let log = scratch("checkpoint").join("log");
        let _ = std::fs::remove_file(&log);
        let cmd = format!("echo x >> '{}'", log.display());
        let mut c = Checkpoint::new(Some(&cmd), 3600);
        c.after_sample();
        c.after_sample();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "x\n");
        let mut c = Checkpoint::new(Some(&cmd), 0);
        c.after_sample();
        c.after_sample();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "x\nx\nx\n");
        // A failing command costs the run nothing.
        Checkpoint::new(Some("exit 3"), 0).after_sample();
    }
}
