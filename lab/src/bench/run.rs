//! One A/B run from start to end: the checks before it, the tbench server,
//! every point under every arm in the interleaved order, and the results
//! file, report and plots at the end, whatever happened.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use log::{info, warn};

use super::arms::{Arm, ArmKind, Machine, Transition, SCHEDULER};
use super::options::BenchOpts;
use super::order::{self, run_order};
use super::plot;
use super::report;
use super::results::{Env, Method, PointResult, Results, Sample, FORMAT};
use super::resume::{self, Checkpoint};
use super::workload::{self, Family, Matrix, Point};
use crate::ycsb;
use sisutil_proto::sysfs;

/// "2026-11-30 12:00:00 UTC" for a time since the epoch.
fn utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn uname() -> (String, String) {
    // SAFETY: uname() fills the struct it is given.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return (String::new(), String::new());
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (field(&u.release), field(&u.nodename))
}

/// Where the PATH has `program`, if it does.
fn find_in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

fn in_path(program: &str) -> bool {
    find_in_path(program).is_some()
}

/// A statistics request's answer. An external arm that runs this
/// scheduler may run another build of it (an older one, say), which need
/// not answer as this one asks: its runs go uncounted, with a warning,
/// not failed.
fn read_stats<T>(answer: Result<T>, arm: &Arm) -> Result<Option<T>> {
    match answer {
        Ok(v) => Ok(Some(v)),
        Err(e) if arm.runs_this_scheduler() => {
            warn!("{}: its statistics cannot be read: {e:#}", arm.name);
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The scheduler the arms run: scx_sisutil beside this program (where a
/// build or an install puts both), else the one in the PATH.
fn scheduler_exe(lab: &Path) -> Result<PathBuf> {
    if let Some(beside) = lab
        .parent()
        .map(|d| d.join(SCHEDULER))
        .filter(|p| p.is_file())
    {
        return Ok(beside);
    }
    find_in_path(SCHEDULER)
        .ok_or_else(|| anyhow!("{SCHEDULER} is neither beside this program nor in the PATH"))
}

fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

/// A descriptor that becomes readable when @child exits (None where the
/// kernel has no pidfd_open).
fn pidfd(child: &std::process::Child) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // or -1; our child is not reaped until try_wait() says it exited.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id() as libc::pid_t, 0) };
    // SAFETY: a non-negative result is a descriptor that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Waits up to @max for the child behind @exit_fd to exit. The harness
/// runs beside the benchmark it measures: polling the child every few ms
/// woke it 50 times a second in every run, on the CPUs being measured.
fn await_exit(exit_fd: Option<&OwnedFd>, max: Duration) {
    let Some(fd) = exit_fd else {
        return std::thread::sleep(Duration::from_millis(20));
    };
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = max.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd for the length of the call. An error or a
    // signal just ends the wait early; the caller looks again.
    unsafe { libc::poll(&mut pfd, 1, ms) };
}

/// A point's trace stops at this size, its file closed whole: enough for
/// every wakeup of a few seconds of hackbench on 8 CPUs.
const TRACE_MAX_MB: u32 = 64;

/// Where a `+traceN` arm's trace of a point goes, within the results'
/// folder: one folder per point and arm, each run overwriting the last.
fn trace_folder(point: &Point, arm: &Arm) -> PathBuf {
    Path::new("traces")
        .join(format!(
            "{}-{}",
            plot::slug(&point.section),
            plot::slug(&point.label)
        ))
        .join(plot::slug(&arm.name))
}

/// What every sample of a run needs besides its point and arm.
struct Runner<'a> {
    opts: &'a BenchOpts,
    exe: &'a Path,
    /// The results' folder, absolute: the scheduler writes the traces.
    out: PathBuf,
    /// The benchmark's output, kept until the next sample.
    log: PathBuf,
    timeout: Duration,
    stop: &'a AtomicBool,
    db: Database,
}

impl Runner<'_> {
    /// Runs one benchmark command, killing it on timeout or interruption.
    fn run_point(&self, point: &Point) -> Result<(BTreeMap<String, f64>, f64)> {
        let log = &self.log;
        let out = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let mut argv = point.argv.clone();
        if point.family.is_ours() {
            argv[0] = self.exe.display().to_string();
        }
        if point.family == Family::Ycsb {
            argv.extend(self.db.args());
        }
        let start = Instant::now();
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdout(out.try_clone()?)
            .stderr(out)
            .stdin(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot run {}", argv[0]))?;
        let exit_fd = pidfd(&child);
        let status = loop {
            if let Some(st) = child.try_wait()? {
                break st;
            }
            if self.stop.load(Ordering::Relaxed) || start.elapsed() > self.timeout {
                let _ = child.kill();
                let _ = child.wait();
                if self.stop.load(Ordering::Relaxed) {
                    bail!("interrupted");
                }
                bail!(
                    "{} ran longer than {}s",
                    argv.join(" "),
                    self.timeout.as_secs()
                );
            }
            await_exit(exit_fd.as_ref(), Duration::from_millis(250));
        };
        let wall = start.elapsed().as_secs_f64();
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if !status.success() {
            let tail: Vec<&str> = text.lines().rev().take(3).collect();
            bail!("{} failed ({status}): {}", argv.join(" "), tail.join(" | "));
        }
        let values = workload::parse(point.family, &text)
            .with_context(|| format!("cannot read the result of {}", argv.join(" ")))?;
        Ok((values, wall))
    }

    /// One run of @point under @arm: its values, wall time and, for our
    /// own arms, the scheduler's counters over the run. A benchmark that
    /// fails, or a ycsb run whose server is gone, is a failed sample; a
    /// scheduler that fails ends the run.
    fn take_sample(
        &mut self,
        point: &Point,
        arm: &Arm,
        machine: &mut Machine,
        iteration: u32,
    ) -> Result<Sample> {
        let transition = machine
            .enter(arm)
            .with_context(|| format!("cannot set up arm {}", arm.name))?;
        let needs_db = point.family == Family::Ycsb;
        if needs_db {
            if let Some(why) = self.db.failure() {
                return Ok(Sample::failed(iteration, why));
            }
        }
        if transition == Transition::Reload && !self.opts.no_warmup {
            if let Err(e) = self.run_point(point).context("warm-up run") {
                return self.benchmark_failed(e, needs_db, iteration);
            }
        }
        let mut counted =
            arm.is_scx() || arm.runs_this_scheduler() || (arm.is_observed() && machine.observing());
        if counted {
            counted = read_stats(machine.reset_stats(), arm)?.is_some();
        }
        let trace = (arm.trace_every() > 0).then(|| trace_folder(point, arm));
        if let Some(rel) = &trace {
            machine.start_trace(&self.out.join(rel), arm.trace_every(), TRACE_MAX_MB)?;
        }
        let ran = self.run_point(point);
        // An arm that lost its scheduler during the run explains a failed run
        // better than the benchmark's own complaint does.
        machine
            .healthy(arm)
            .with_context(|| format!("{} under {}", point.label, arm.name))?;
        let trace = match trace {
            Some(rel) => machine.stop_trace()?.map(|mut st| {
                if let Some(why) = &st.ended {
                    warn!(
                        "{} under {}: the trace ended early: {why}",
                        point.label, arm.name
                    );
                }
                st.dir = rel.display().to_string();
                st
            }),
            None => None,
        };
        let (values, wall_s) = match ran {
            Ok(v) => v,
            Err(e) => {
                return self
                    .benchmark_failed(e, needs_db, iteration)
                    .map(|s| Sample { trace, ..s })
            }
        };
        let stats = if counted {
            read_stats(machine.fetch_stats(), arm)?
        } else {
            None
        };
        Ok(Sample {
            iteration,
            values,
            wall_s,
            stats,
            failed: None,
            trace,
        })
    }

    /// A benchmark that failed while its scheduler stayed healthy is a
    /// failed sample: the other points still run, and the run's exit says
    /// so. For a client of the database server, the server's end, when
    /// that is the cause, says why.
    fn benchmark_failed(&mut self, e: anyhow::Error, needs_db: bool, it: u32) -> Result<Sample> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(e);
        }
        let server_gone = if needs_db { self.db.failure() } else { None };
        Ok(Sample::failed(
            it,
            server_gone.unwrap_or_else(|| format!("{e:#}")),
        ))
    }
}

/// The database server of the ycsb points, started and loaded once for
/// the whole run, so that every arm reads the same data.
enum Database {
    Unused,
    Up(ycsb::postgres::Server),
    /// It could not start, or it ended: why.
    Down(String),
}

impl Database {
    fn start(matrix: &Matrix) -> Self {
        if !matrix.families.contains(&Family::Ycsb) {
            return Database::Unused;
        }
        let clients = matrix.ycsb_clients.iter().copied().max().unwrap_or(1);
        let up = ycsb::postgres::bin_dir(None)
            .and_then(|bin| ycsb::postgres::Server::start(&bin, clients))
            .context("cannot start the database server")
            .and_then(|server| {
                info!("ycsb: loading {} records", matrix.ycsb_records);
                ycsb::load(&server, matrix.ycsb_records).context("cannot load the table")?;
                Ok(server)
            });
        match up {
            Ok(server) => Database::Up(server),
            Err(e) => {
                let why = format!("{e:#}");
                warn!("ycsb: {why}; its samples are marked failed");
                Database::Down(why)
            }
        }
    }

    /// Why the ycsb points cannot run, if they cannot. The server found
    /// gone is said once, and stopped for good.
    fn failure(&mut self) -> Option<String> {
        if let Database::Up(server) = self {
            if let Some(why) = server.failure() {
                warn!("ycsb: {why}; the rest of its samples are marked failed");
                *self = Database::Down(why);
            }
        }
        match self {
            Database::Down(why) => Some(why.clone()),
            _ => None,
        }
    }

    /// The server, for the ycsb command line.
    fn args(&self) -> Vec<String> {
        match self {
            Database::Up(server) => vec![
                "--host".into(),
                server.socket_dir().display().to_string(),
                "--pg-bin".into(),
                server.bin().display().to_string(),
            ],
            _ => Vec::new(),
        }
    }
}

fn preflight(arms: &[Arm], matrix: &Matrix) -> Result<()> {
    sysfs::require_root(
        "must run as root: the harness loads schedulers and changes kernel settings",
    )?;
    let needs_scx = arms
        .iter()
        .any(|a| matches!(a.kind, ArmKind::Scx { .. } | ArmKind::External { .. }));
    if needs_scx && !sysfs::present() {
        bail!(
            "this kernel has no sched_ext ({} is missing)",
            sysfs::SCHED_EXT
        );
    }
    if needs_scx && sysfs::state() != "disabled" {
        bail!("a sched_ext scheduler is already loaded; stop it before an A/B run");
    }
    if arms
        .iter()
        .any(|a| matches!(a.kind, ArmKind::EevdfNoSisUtil { .. }))
    {
        Machine::sis_util().context("arm eevdf-nosisutil")?;
    }
    for f in &matrix.families {
        if let Some(program) = f.program().filter(|p| !in_path(p)) {
            if *f == Family::Schbench {
                bail!("schbench is not installed: Debian packages none; build it from its source and put it in the PATH");
            }
            bail!("{} needs {program}, which is not installed", f.name());
        }
    }
    if matrix.families.contains(&Family::Tbench) {
        if !in_path("tbench_srv") {
            bail!("tbench needs tbench_srv, which is not installed");
        }
        if !Path::new(workload::TBENCH_LOADFILE).exists() {
            bail!("tbench needs {}", workload::TBENCH_LOADFILE);
        }
    }
    Ok(())
}

/// The tbench server, for as long as the run lasts.
struct TbenchServer(std::process::Child);

impl TbenchServer {
    fn start() -> Result<Self> {
        let child = Command::new("tbench_srv")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .stdin(Stdio::null())
            .spawn()
            .context("cannot start tbench_srv")?;
        std::thread::sleep(Duration::from_millis(500));
        Ok(Self(child))
    }
}

impl Drop for TbenchServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn run(opts: &BenchOpts, stop: Arc<AtomicBool>) -> Result<()> {
    if !(opts.alpha > 0.0 && opts.alpha < 1.0) {
        bail!("--alpha must be between 0 and 1");
    }
    let settle_secs = opts.settle_secs();
    if !settle_secs.is_finite() || !(0.0..=600.0).contains(&settle_secs) {
        bail!("--settle-secs must be between 0 and 600");
    }
    let arms = opts.arms()?;
    for d in &opts.declared {
        super::cite::check_declared(d)?;
    }
    let topo = scx_utils::Topology::new().context("cannot read the CPU topology")?;
    let layout = sisutil_proto::topology::Layout::new(&topo)?;
    let cpus = layout.nr_cpus() as u64;
    let matrix = opts.matrix(cpus, layout.llcs.len() as u64)?;
    preflight(&arms, &matrix)?;

    let exe = std::env::current_exe().context("cannot find the lab's executable")?;
    let scheduler = scheduler_exe(&exe)?;
    let out = opts.out.clone().unwrap_or_else(|| {
        let stamp = utc(SystemTime::now()).replace(['-', ':'], "");
        PathBuf::from(format!(
            "runs/ab-{}",
            stamp.trim_end_matches(" UTC").replace(' ', "-")
        ))
    });
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let sched_args: Vec<String> = opts
        .scheduler_args
        .as_deref()
        .unwrap_or("")
        .split_whitespace()
        .map(String::from)
        .collect();

    let (kernel, hostname) = uname();
    let iterations = opts.iterations();
    let mut results = Results {
        format: FORMAT.into(),
        created: utc(SystemTime::now()),
        env: Env {
            kernel,
            hostname,
            topology: layout.describe(),
            cpus,
            scheduler_version: env!("CARGO_PKG_VERSION").into(),
            scheduler_args: sched_args.clone(),
            command_line: std::env::args().collect(),
            commit: Env::split_build(sisutil_proto::BUILD_COMMIT).0,
            dirty: Env::split_build(sisutil_proto::BUILD_COMMIT).1,
        },
        method: Method {
            iterations,
            order: opts.order,
            order_per_point: true,
            warmup: !opts.no_warmup,
            settle_s: opts.settle_secs(),
            alpha: opts.alpha,
            baseline: arms[0].name.clone(),
            margin_pct: opts.margin,
            declared: opts.declared.clone(),
            matrix: matrix.clone(),
        },
        arms: arms.clone(),
        points: Vec::new(),
        incomplete: None,
        dropped: BTreeMap::new(),
        resumed: Vec::new(),
    };
    let points = matrix.points(&exe.display().to_string());
    results.points = points
        .iter()
        .map(|point| PointResult {
            point: point.clone(),
            samples: BTreeMap::new(),
        })
        .collect();
    if let Some(from) = &opts.resume {
        resume::take_up(&mut results, from, &utc(SystemTime::now()))?;
    }
    let cycle = order::cycle(opts.order, arms.len());
    if arms.len() > 1 && !(iterations as usize).is_multiple_of(cycle) {
        warn!(
            "{iterations} iteration(s) of {} arms in the {:?} order: {} (a multiple of {cycle} balances it)",
            arms.len(),
            opts.order,
            order::balance(opts.order, arms.len(), iterations, true)
        );
    }
    info!(
        "A/B: {} point(s) x {iterations} iteration(s) x {} arm(s), results in {}",
        points.len(),
        arms.len(),
        out.display()
    );

    let _tbench = if matrix.families.contains(&Family::Tbench) {
        Some(TbenchServer::start()?)
    } else {
        None
    };
    let mut machine = Machine::new(
        scheduler,
        sched_args,
        out.join("scheduler.log"),
        Duration::from_secs_f64(opts.settle_secs()),
    );
    let mut runner = Runner {
        opts,
        exe: &exe,
        out: std::path::absolute(&out)
            .with_context(|| format!("cannot resolve {}", out.display()))?,
        log: out.join("last-run.log"),
        timeout: Duration::from_secs(opts.run_timeout),
        stop: &stop,
        db: Database::start(&matrix),
    };
    let outcome = run_matrix(&mut results, &points, &mut machine, &mut runner, &out);
    drop(runner);
    let restored = machine.shutdown();
    if let Err(e) = &outcome {
        results.incomplete = Some(format!("{e:#}"));
    }
    finish(&results, &out)?;
    restored.context("could not restore the machine's state")?;
    outcome?;
    let failed = results.failures();
    if let Some((section, label, arm, why)) = failed.first() {
        bail!(
            "{} sample(s) failed, the first ({section} {label} under {arm}) because {why}; \
             the other points ran",
            failed.len()
        );
    }
    Ok(())
}

fn run_matrix(
    results: &mut Results,
    points: &[Point],
    machine: &mut Machine,
    runner: &mut Runner,
    out: &Path,
) -> Result<()> {
    let arms = results.arms.clone();
    let iterations = results.method.iterations;
    let total = points.len() * iterations as usize * arms.len();
    let started = Instant::now();
    let mut done = 0usize;
    // Samples taken here, for the time left: a resumed run's kept ones
    // took no time of this one.
    let mut ran = 0usize;
    let mut checkpoint = Checkpoint::new(
        runner.opts.checkpoint.as_deref(),
        runner.opts.checkpoint_secs,
    );

    for (p, it, a) in run_order(points.len(), iterations, arms.len(), results.method.order) {
        let (point, arm) = (&points[p], &arms[a]);
        if runner.stop.load(Ordering::Relaxed) {
            bail!("interrupted");
        }
        if results.dropped.contains_key(&arm.name) || resume::has_sample(results, p, &arm.name, it)
        {
            done += 1;
            continue;
        }
        let sample = match runner.take_sample(point, arm, machine, it) {
            Ok(sample) => sample,
            // Another project's scheduler failing is a finding about it,
            // not a reason to lose the other arms' hours: the run goes on
            // without it and says so. Our own arms failing stops the run.
            Err(e) if arm.is_external() && !runner.stop.load(Ordering::Relaxed) => {
                let why = format!("{e:#}");
                warn!("dropping arm {} for the rest of the run: {why}", arm.name);
                results.dropped.insert(arm.name.clone(), why);
                machine
                    .leave(arm)
                    .with_context(|| format!("cannot unload the dropped arm {}", arm.name))?;
                results.save(&out.join("results.json"))?;
                done += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let lead = &point.metrics[0];
        done += 1;
        ran += 1;
        let left = started
            .elapsed()
            .mul_f64((total - done) as f64 / ran as f64);
        let value = match &sample.failed {
            Some(why) => format!("FAILED ({why})"),
            None => format!(
                "{} = {:.3} {}",
                lead.name,
                sample.values.get(&lead.name).copied().unwrap_or(f64::NAN),
                lead.unit
            ),
        };
        let _ = writeln!(
            std::io::stderr(),
            "[{done:>4}/{total}] {} {}, iteration {}/{iterations}, {}: {value} (elapsed {}, ~{} left)",
            point.section,
            point.label,
            it + 1,
            arm.name,
            fmt_duration(started.elapsed()),
            fmt_duration(left)
        );
        results.points[p]
            .samples
            .entry(arm.name.clone())
            .or_default()
            .push(sample);
        results.save(&out.join("results.json"))?;
        checkpoint.after_sample();
    }
    Ok(())
}

/// Writes the results file, the report and the plots, and prints the
/// report.
fn finish(results: &Results, out: &Path) -> Result<()> {
    results.save(&out.join("results.json"))?;
    report_traces(results, out);
    let text =
        report::text(results) + &super::cite::declared_section(results, &out.join("results.json"));
    std::fs::write(out.join("report.txt"), &text).context("cannot write report.txt")?;
    let plots = plot::write_all(results, &out.join("plots"))?;
    // The run is over and saved: a closed stdout must not turn into an
    // error here.
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}");
    let _ = writeln!(
        stdout,
        "results: {} | report: {} | {} plot(s) in {}",
        out.join("results.json").display(),
        out.join("report.txt").display(),
        plots.len(),
        out.join("plots").display()
    );
    Ok(())
}

/// The lab's trace report beside every trace the run kept. One that
/// cannot be read is said, and the rest of the run's output still made.
fn report_traces(results: &Results, out: &Path) {
    for (_, _, trace) in results.traces() {
        let dir = out.join(&trace.dir);
        if let Err(e) = crate::trace::write_report(&dir) {
            warn!("no report of the trace in {}: {e:#}", dir.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(UNIX_EPOCH), "1970-01-01 00:00:00 UTC");
        let t = UNIX_EPOCH + Duration::from_secs(1_796_040_000);
        assert_eq!(utc(t), "2026-11-30 12:00:00 UTC");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(utc(leap), "2000-02-29 00:00:00 UTC");
    }
}
