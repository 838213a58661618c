//! scx_sisutil: wires the command line to the scheduler, the run-time
//! switch and the statistics monitor. What the lab shares with it (the
//! policies' names, the topology, the statistics' schema, the socket's
//! client) is sisutil_proto's.

mod auto;
mod bpf_intf;
mod bpf_skel;
mod cli;
mod config;
mod observe;
mod observe_skel;
mod op_time;
mod policy;
mod sched;
mod server;
mod socket;
mod stats;
mod timeliness;
mod trace;
mod utilisation;

use sisutil_proto::{console, control, monitor};

use std::mem::MaybeUninit;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use clap::Parser;
use log::{info, warn};

use cli::{Cmd, Opts, RunOpts, SetCmd};
use control::Change;

fn main() -> ExitCode {
    let opts = match Opts::try_parse() {
        Ok(opts) => opts,
        Err(e) => return console::usage_error("scx_sisutil", e),
    };
    console::init_logging(opts.run.verbose);
    if is_client(&opts) {
        // Like any command-line tool, end quietly when the reader of its
        // output goes away (`scx_sisutil stats | head`). The scheduler and
        // the harness keep SIGPIPE ignored: they must clean up first.
        // SAFETY: resetting a signal disposition has no preconditions.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    match run(opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scx_sisutil: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn is_client(opts: &Opts) -> bool {
    match &opts.cmd {
        None => opts.run.monitor.is_some(),
        Some(Cmd::WatchSocket) | Some(Cmd::Observe(_)) => false,
        Some(_) => true,
    }
}

fn run(opts: Opts) -> Result<()> {
    if opts.run.version {
        println!("scx_sisutil {}", sched::version());
        return Ok(());
    }
    if opts.run.help_stats {
        return stats::describe(&mut std::io::stdout()).context("cannot describe the statistics");
    }
    match opts.cmd {
        Some(Cmd::Set { what }) => {
            let change = match what {
                SetCmd::Policy { policy } => Change {
                    policy: Some(policy),
                    ..Default::default()
                },
                SetCmd::Shadow { shadow } => Change {
                    shadow: Some(shadow),
                    ..Default::default()
                },
                SetCmd::SmallLlc { n } => Change {
                    small_llc: Some(n),
                    ..Default::default()
                },
                SetCmd::SisCache { on } => Change {
                    sis_cache: Some(on),
                    ..Default::default()
                },
                SetCmd::SisCurrent { on } => Change {
                    sis_current: Some(on),
                    ..Default::default()
                },
            };
            println!("{}", control::send(&change)?);
            Ok(())
        }
        Some(Cmd::Stats { json }) => {
            sisutil_proto::socket::require_instance()?;
            monitor::print_once(json)
        }
        Some(Cmd::ResetStats) => {
            let change = Change {
                reset: true,
                ..Default::default()
            };
            println!("{}", control::send(&change)?);
            Ok(())
        }
        Some(Cmd::Trace(t)) => trace(&t),
        Some(Cmd::WatchSocket) => socket::run_watcher(),
        Some(Cmd::Observe(o)) => observe(&o),
        Some(Cmd::Status) => {
            println!("{}", control::send(&Change::default())?);
            Ok(())
        }
        None => match opts.run.monitor {
            Some(secs) => monitor(secs, opts.run.json),
            None => run_scheduler(&opts.run),
        },
    }
}

/// `scx_sisutil trace`: asks the running instance to put wakeups on
/// record, waits, and asks it to stop. The instance ends the trace by
/// itself at the time asked for, so a killed client leaves nothing on.
fn trace(t: &cli::TraceOpts) -> Result<()> {
    let dir = std::path::absolute(&t.out)
        .with_context(|| format!("cannot resolve {}", t.out.display()))?;
    let start = control::TraceStart {
        dir: dir.to_string_lossy().into_owned(),
        every: t.every,
        seconds: t.seconds,
        max_mb: t.max_mb,
        replace: t.replace,
    };
    let shutdown = shutdown_flag()?;
    control::send(&Change {
        trace: Some(control::TraceCmd::Start(start)),
        ..Default::default()
    })?;
    println!(
        "tracing one wakeup in {} per CPU into {} for {} s (Ctrl-C ends it sooner)",
        t.every,
        dir.display(),
        t.seconds
    );
    let until = std::time::Instant::now() + Duration::from_secs(t.seconds as u64);
    // The instance may end the trace sooner (its size cap, a failed
    // write): a look every second sees it.
    let mut look = std::time::Instant::now();
    while std::time::Instant::now() < until && !shutdown.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if look.elapsed() >= Duration::from_secs(1) {
            look = std::time::Instant::now();
            let status = control::send(&Change::default())?;
            if !status.trace.is_some_and(|st| st.running) {
                break;
            }
        }
    }
    let status = control::send(&Change {
        trace: Some(control::TraceCmd::Stop),
        ..Default::default()
    })?;
    let Some(st) = status.trace else {
        return Err(anyhow!("the running instance kept no trace"));
    };
    if st.removed {
        return Err(anyhow!(
            "the trace into {} failed: {}",
            st.dir,
            st.ended.as_deref().unwrap_or("a write failed")
        ));
    }
    if let Some(why) = &st.ended {
        println!("the trace stopped early, its files whole: {why}");
    }
    println!(
        "{} wakeups on record in {}/wakeups.csv, {} dropped (the ring was full), {} unread (the scheduler fell behind); `sisutil-lab trace-report {}` reads them",
        st.records, st.dir, st.dropped, st.unread, st.dir
    );
    Ok(())
}

fn shutdown_flag() -> Result<Arc<AtomicBool>> {
    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("cannot install the SIGINT/SIGTERM handler")?;
    Ok(shutdown)
}

fn monitor(secs: f64, json: bool) -> Result<()> {
    sisutil_proto::socket::require_instance()?;
    monitor::monitor(Duration::from_secs_f64(secs), json, shutdown_flag()?)
}

/// `scx_sisutil observe`: the kernel's placement, counted until Ctrl-C.
fn observe(o: &cli::ObserveOpts) -> Result<()> {
    let shutdown = shutdown_flag()?;
    let mut open_object = MaybeUninit::uninit();
    let mut obs = observe::Observer::init(&o.shadow, o.bpf_stats, o.verbose, &mut open_object)?;
    if let Some(secs) = o.stats {
        let (flag, json) = (shutdown.clone(), o.json);
        std::thread::spawn(move || {
            if let Err(e) = monitor::monitor(Duration::from_secs_f64(secs), json, flag) {
                warn!("statistics printer stopped: {e:#}");
            }
        });
    }
    obs.run(shutdown)
}

fn run_scheduler(opts: &RunOpts) -> Result<()> {
    let config = opts.config().map_err(|e| anyhow!(e))?;
    sched::preflight()?;
    let shutdown = shutdown_flag()?;
    let mut printer = opts.stats.map(|secs| (secs, opts.json));
    let mut watcher = socket::Watcher::spawn()?;

    let mut open_object = MaybeUninit::uninit();
    loop {
        let mut sched = sched::Scheduler::init(&config, &mut open_object)?;
        watcher.watch()?;
        // The printer is a client of the stats server, which now exists.
        if let Some((secs, json)) = printer.take() {
            let flag = shutdown.clone();
            std::thread::spawn(move || {
                if let Err(e) = monitor::monitor(Duration::from_secs_f64(secs), json, flag) {
                    warn!("statistics printer stopped: {e:#}");
                }
            });
        }
        let exit = sched.run(shutdown.clone())?;
        if !exit.should_restart() {
            return Ok(());
        }
        info!("the kernel asked for a restart (CPU hotplug?): reloading");
    }
}
