//! The A/B harness: runs a matrix of real benchmarks under several arms,
//! arms interleaved in every iteration of every point, and prints, saves
//! and plots the comparison. It is a client of the scheduler (it starts it,
//! switches its policy at run time and reads its statistics), never a
//! second scheduler.

pub mod arms;
#[cfg(test)]
mod fixture;
pub mod plot;
pub mod report;
pub mod stat;
pub mod study;
pub mod workload;

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

use crate::sysfs;
use arms::{Arm, ArmKind, Lab, Switch};
use report::{Env, Method, PointResult, Results, Sample, FORMAT};
use workload::{Family, Matrix, Point};

/// Sizes of the matrix for where it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Preset {
    /// Tiny loops, 2 iterations: checks the harness end to end
    Quick,
    /// Sized for a small VM under software emulation
    Vm,
    /// Sized for a real machine
    Host,
}

#[derive(Clone, Debug, clap::Args)]
pub struct BenchOpts {
    /// Arms, the first being the baseline: eevdf, eevdf-nosisutil, util,
    /// prop, full, none, builtin, util-small[=N]
    #[arg(long, value_delimiter = ',', default_value = "eevdf,util,prop")]
    pub arms: Vec<String>,
    /// Another sched_ext scheduler as an arm: NAME=COMMAND (repeatable)
    #[arg(long = "arm", value_name = "NAME=COMMAND")]
    pub external: Vec<String>,
    /// Benchmark families
    #[arg(long = "bench", value_enum, value_delimiter = ',')]
    pub families: Option<Vec<Family>>,
    /// Sizes: quick, vm or host (default: vm)
    #[arg(long, value_enum, default_value_t = Preset::Vm)]
    pub preset: Preset,
    /// Iterations per point (at least 2 for the t-test)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub iterations: Option<u32>,
    /// hackbench and perf messaging groups
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub groups: Option<Vec<u64>>,
    /// hackbench loops
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub loops: Option<u64>,
    /// hackbench modes: process, thread
    #[arg(long, value_delimiter = ',')]
    pub modes: Option<Vec<String>>,
    /// hackbench IPC: pipe, socket
    #[arg(long, value_delimiter = ',')]
    pub ipc: Option<Vec<String>>,
    /// tbench clients (default: powers of two up to 4x the CPUs)
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub clients: Option<Vec<u64>>,
    /// tbench seconds per run
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub tbench_secs: Option<u64>,
    /// wakeup benchmark workers per message thread (default: powers of two
    /// up to the CPUs)
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub workers: Option<Vec<u64>>,
    /// Discard no warm-up run after a scheduler load or unload
    #[arg(long)]
    pub no_warmup: bool,
    /// Seconds to let the scheduler settle after it reports enabled
    #[arg(long, default_value_t = 2.0)]
    pub settle_secs: f64,
    /// Significance level of the t-test
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Give up on a benchmark run after this many seconds
    #[arg(long, default_value_t = 900)]
    pub run_timeout: u64,
    /// Extra options for scx_sisutil (e.g. "--slice-us 2000"; "--bpf-stats"
    /// adds each BPF op's run time to the report, at a cost to every op)
    #[arg(long, allow_hyphen_values = true)]
    pub scheduler_args: Option<String>,
    /// Where to write results.json, report.txt, plots/ and scheduler.log
    /// (default: results/ab-<date>-<time>)
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn by_preset<T>(p: Preset, quick: T, vm: T, host: T) -> T {
    match p {
        Preset::Quick => quick,
        Preset::Vm => vm,
        Preset::Host => host,
    }
}

fn powers_of_two(upto: u64) -> Vec<u64> {
    std::iter::successors(Some(1u64), |v| Some(v * 2))
        .take_while(|v| *v <= upto.max(1))
        .collect()
}

fn flags(names: &[String], yes: &str, no: &str) -> Result<Vec<bool>> {
    names
        .iter()
        .map(|n| match n.as_str() {
            s if s == yes => Ok(true),
            s if s == no => Ok(false),
            s => bail!("{s:?}: expected {yes} or {no}"),
        })
        .collect()
}

impl BenchOpts {
    pub fn arms(&self) -> Result<Vec<Arm>> {
        let mut arms: Vec<Arm> = self
            .arms
            .iter()
            .map(|a| Arm::parse(a))
            .collect::<Result<_>>()?;
        for e in &self.external {
            arms.push(Arm::parse_external(e)?);
        }
        if arms.is_empty() {
            bail!("no arms to compare");
        }
        for (i, a) in arms.iter().enumerate() {
            if arms[..i].iter().any(|b| b.name == a.name) {
                bail!("arm {} is given twice", a.name);
            }
        }
        Ok(arms)
    }

    pub fn iterations(&self) -> u32 {
        self.iterations.unwrap_or(match self.preset {
            Preset::Quick => 2,
            Preset::Vm => 3,
            Preset::Host => 5,
        })
    }

    pub fn matrix(&self, cpus: u64) -> Result<Matrix> {
        let p = self.preset;
        let families = self.families.clone().unwrap_or(match p {
            Preset::Quick => vec![Family::Hackbench, Family::Tbench],
            _ => vec![
                Family::Hackbench,
                Family::Tbench,
                Family::PerfMessaging,
                Family::PerfPipe,
                Family::Wakeup,
            ],
        });
        let groups = self.groups.clone().unwrap_or_else(|| {
            by_preset(p, vec![1, 2], vec![1, 2, 4, 8, 16], vec![1, 2, 4, 8, 16])
        });
        Ok(Matrix {
            families,
            hackbench_loops: self.loops.unwrap_or(by_preset(p, 50, 200, 2000)),
            hackbench_threads: flags(
                self.modes.as_deref().unwrap_or(&by_preset(
                    p,
                    vec!["process".into()],
                    vec!["process".into(), "thread".into()],
                    vec!["process".into(), "thread".into()],
                )),
                "thread",
                "process",
            )?,
            hackbench_pipe: flags(
                self.ipc.as_deref().unwrap_or(&by_preset(
                    p,
                    vec!["pipe".into()],
                    vec!["pipe".into(), "socket".into()],
                    vec!["pipe".into(), "socket".into()],
                )),
                "pipe",
                "socket",
            )?,
            perf_groups: groups.iter().copied().filter(|g| *g <= 8).collect(),
            hackbench_groups: groups,
            tbench_clients: self.clients.clone().unwrap_or_else(|| {
                by_preset(p, vec![1], powers_of_two(4 * cpus), powers_of_two(4 * cpus))
            }),
            tbench_secs: self.tbench_secs.unwrap_or(by_preset(p, 2, 5, 10)),
            perf_loops: by_preset(p, 10, 50, 200),
            perf_pipe_loops: by_preset(p, 2_000, 20_000, 200_000),
            wakeup_messengers: 2,
            wakeup_workers: self
                .workers
                .clone()
                .unwrap_or_else(|| by_preset(p, vec![2], powers_of_two(cpus), powers_of_two(cpus))),
            wakeup_secs: by_preset(p, 1.0, 3.0, 10.0),
        })
    }
}

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

fn in_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|d| d.join(program).is_file())
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

/// Runs one benchmark command, killing it on timeout or interruption.
fn run_point(
    point: &Point,
    exe: &Path,
    log: &Path,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<(BTreeMap<String, f64>, f64)> {
    let out =
        std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut argv = point.argv.clone();
    if point.family == Family::Wakeup {
        argv[0] = exe.display().to_string();
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
        if stop.load(Ordering::Relaxed) || start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            if stop.load(Ordering::Relaxed) {
                bail!("interrupted");
            }
            bail!("{} ran longer than {}s", argv.join(" "), timeout.as_secs());
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
    if arms.iter().any(|a| a.kind == ArmKind::EevdfNoSisUtil) {
        Lab::sis_util().context("arm eevdf-nosisutil")?;
    }
    for f in &matrix.families {
        if *f != Family::Wakeup && !in_path(f.program()) {
            bail!("{} needs {}, which is not installed", f.name(), f.program());
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
    if !opts.settle_secs.is_finite() || !(0.0..=600.0).contains(&opts.settle_secs) {
        bail!("--settle-secs must be between 0 and 600");
    }
    let arms = opts.arms()?;
    let topo = scx_utils::Topology::new().context("cannot read the CPU topology")?;
    let layout = crate::topology::Layout::new(&topo)?;
    let cpus = layout.nr_cpus() as u64;
    let matrix = opts.matrix(cpus)?;
    preflight(&arms, &matrix)?;

    let exe = std::env::current_exe().context("cannot find scx_sisutil's executable")?;
    let out = opts.out.clone().unwrap_or_else(|| {
        let stamp = utc(SystemTime::now()).replace(['-', ':'], "");
        PathBuf::from(format!(
            "results/ab-{}",
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
        },
        method: Method {
            iterations,
            warmup: !opts.no_warmup,
            settle_s: opts.settle_secs,
            alpha: opts.alpha,
            baseline: arms[0].name.clone(),
            matrix: matrix.clone(),
        },
        arms: arms.clone(),
        points: Vec::new(),
        incomplete: None,
        dropped: BTreeMap::new(),
    };
    let points = matrix.points(&exe.display().to_string());
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
    let mut lab = Lab::new(
        exe.clone(),
        sched_args,
        out.join("scheduler.log"),
        Duration::from_secs_f64(opts.settle_secs),
    );
    let outcome = run_matrix(&mut results, &points, &mut lab, opts, &exe, &out, &stop);
    let restored = lab.shutdown();
    if let Err(e) = &outcome {
        results.incomplete = Some(format!("{e:#}"));
    }
    finish(&results, &out)?;
    restored.context("could not restore the machine's state")?;
    outcome
}

fn run_matrix(
    results: &mut Results,
    points: &[Point],
    lab: &mut Lab,
    opts: &BenchOpts,
    exe: &Path,
    out: &Path,
    stop: &AtomicBool,
) -> Result<()> {
    let arms = results.arms.clone();
    let iterations = results.method.iterations;
    let timeout = Duration::from_secs(opts.run_timeout);
    let run_log = out.join("last-run.log");
    let total = points.len() * iterations as usize * arms.len();
    let started = Instant::now();
    let mut done = 0usize;

    results.points = points
        .iter()
        .map(|point| PointResult {
            point: point.clone(),
            samples: BTreeMap::new(),
        })
        .collect();
    for (p, it, a) in report::run_order(points.len(), iterations, arms.len()) {
        let (point, arm) = (&points[p], &arms[a]);
        if stop.load(Ordering::Relaxed) {
            bail!("interrupted");
        }
        if results.dropped.contains_key(&arm.name) {
            done += 1;
            continue;
        }
        let sample = match take_sample(point, arm, lab, opts, exe, &run_log, timeout, stop) {
            Ok((values, wall_s, stats)) => Sample {
                iteration: it,
                values,
                wall_s,
                stats,
            },
            // Another project's scheduler failing is a finding about it,
            // not a reason to lose the other arms' hours: the run goes on
            // without it and says so. Our own arms failing stops the run.
            Err(e) if arm.is_external() && !stop.load(Ordering::Relaxed) => {
                let why = format!("{e:#}");
                warn!("dropping arm {} for the rest of the run: {why}", arm.name);
                results.dropped.insert(arm.name.clone(), why);
                lab.leave(arm)
                    .with_context(|| format!("cannot unload the dropped arm {}", arm.name))?;
                results.save(&out.join("results.json"))?;
                done += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let lead = &point.metrics[0];
        done += 1;
        let left = started
            .elapsed()
            .mul_f64((total - done) as f64 / done as f64);
        let _ = writeln!(
            std::io::stderr(),
            "[{done:>4}/{total}] {} {}, iteration {}/{iterations}, {}: {} = {:.3} {} (elapsed {}, ~{} left)",
            point.section,
            point.label,
            it + 1,
            arm.name,
            lead.name,
            sample.values.get(&lead.name).copied().unwrap_or(f64::NAN),
            lead.unit,
            fmt_duration(started.elapsed()),
            fmt_duration(left)
        );
        results.points[p]
            .samples
            .entry(arm.name.clone())
            .or_default()
            .push(sample);
        results.save(&out.join("results.json"))?;
    }
    Ok(())
}

/// One run of `point` under `arm`: its values, wall time and, for our
/// own arms, the scheduler's counters over the run.
#[allow(clippy::too_many_arguments)]
fn take_sample(
    point: &Point,
    arm: &Arm,
    lab: &mut Lab,
    opts: &BenchOpts,
    exe: &Path,
    run_log: &Path,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<(BTreeMap<String, f64>, f64, Option<crate::stats::Metrics>)> {
    let switch = lab
        .enter(arm)
        .with_context(|| format!("cannot set up arm {}", arm.name))?;
    if switch == Switch::Reload && !opts.no_warmup {
        run_point(point, exe, run_log, timeout, stop).context("warm-up run")?;
    }
    if arm.is_scx() {
        lab.reset_stats()?;
    }
    let ran = run_point(point, exe, run_log, timeout, stop);
    // An arm that lost its scheduler during the run explains a failed run
    // better than the benchmark's own complaint does.
    lab.healthy(arm)
        .with_context(|| format!("{} under {}", point.label, arm.name))?;
    let (values, wall_s) = ran?;
    let stats = if arm.is_scx() {
        Some(lab.fetch_stats()?)
    } else {
        None
    };
    Ok((values, wall_s, stats))
}

/// Writes the results file, the report and the plots, and prints the
/// report.
fn finish(results: &Results, out: &Path) -> Result<()> {
    results.save(&out.join("results.json"))?;
    let text = report::text(results);
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

/// `compare A B`.
pub fn compare(a: &Path, b: &Path, alpha: f64) -> Result<()> {
    let (ra, rb) = (Results::load(a)?, Results::load(b)?);
    print!("{}", report::compare(&ra, &rb, alpha));
    Ok(())
}

/// `plot RESULTS`: the report and plots again, from a results file.
pub fn replot(path: &Path, out: Option<&Path>) -> Result<()> {
    let r = Results::load(path)?;
    let dir = out
        .map(Path::to_path_buf)
        .or_else(|| path.parent().map(|p| p.join("plots")))
        .ok_or_else(|| anyhow!("no folder for the plots"))?;
    let files = plot::write_all(&r, &dir)?;
    print!("{}", report::text(&r));
    if files.is_empty() {
        warn!("nothing to plot");
    }
    println!("{} plot(s) in {}", files.len(), dir.display());
    Ok(())
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

    #[test]
    fn presets_size_the_matrix() {
        let opts = |args: &[&str]| {
            #[derive(clap::Parser)]
            struct W {
                #[command(flatten)]
                b: BenchOpts,
            }
            <W as clap::Parser>::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
                .map(|w| w.b)
        };
        let q = opts(&["--preset", "quick"]).unwrap();
        let m = q.matrix(8).unwrap();
        assert_eq!(q.iterations(), 2);
        assert_eq!(m.families, [Family::Hackbench, Family::Tbench]);
        assert_eq!(m.tbench_clients, [1]);

        let v = opts(&[]).unwrap();
        let m = v.matrix(8).unwrap();
        assert_eq!(v.iterations(), 3);
        assert_eq!(m.tbench_clients, [1, 2, 4, 8, 16, 32]);
        assert_eq!(m.wakeup_workers, [1, 2, 4, 8]);
        assert_eq!(m.hackbench_groups, [1, 2, 4, 8, 16]);
        assert_eq!(m.hackbench_threads, [false, true]);
        assert_eq!(m.perf_groups, [1, 2, 4, 8]);

        let o = opts(&[
            "--groups",
            "3",
            "--modes",
            "thread",
            "--ipc",
            "socket",
            "--clients",
            "5",
        ])
        .unwrap();
        let m = o.matrix(4).unwrap();
        assert_eq!(
            (m.hackbench_groups.clone(), m.hackbench_threads.clone()),
            (vec![3], vec![true])
        );
        assert_eq!(
            (m.hackbench_pipe.clone(), m.tbench_clients.clone()),
            (vec![false], vec![5])
        );
        assert!(opts(&["--modes", "fibre"]).unwrap().matrix(4).is_err());
        assert!(opts(&["--iterations", "0"]).is_err());
    }

    #[test]
    fn arms_are_checked() {
        #[derive(clap::Parser)]
        struct W {
            #[command(flatten)]
            b: BenchOpts,
        }
        let parse = |args: &[&str]| {
            <W as clap::Parser>::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
                .unwrap()
                .b
                .arms()
        };
        let arms = parse(&["--arms", "eevdf,util", "--arm", "bpfland=scx_bpfland"]).unwrap();
        assert_eq!(
            arms.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
            ["eevdf", "util", "bpfland"]
        );
        assert!(parse(&["--arms", "util,util"]).is_err());
        assert!(parse(&["--arms", "eevdf,turbo"]).is_err());
    }
}
