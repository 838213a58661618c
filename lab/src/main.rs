//! sisutil-lab: the idle-search lab beside the scheduler. It runs A/B
//! comparisons with real benchmarks (starting and switching scx_sisutil
//! as a client of its socket, never as a second scheduler), carries the
//! workloads that stand for schbench, STREAM and YCSB, and turns results
//! files into reports, plots, the study's summary and the tables the docs
//! quote.

mod bench;
mod cost;
mod get;
mod shape;
mod streambench;
mod trace;
mod wakebench;
mod ycsb;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use clap::{Parser, Subcommand};
use sisutil_proto::console;
use sisutil_proto::policy::Policy;

#[derive(Debug, Parser)]
#[command(
    name = "sisutil-lab",
    version,
    about = "The idle-search lab beside scx_sisutil: A/B runs with real benchmarks, the workloads, reports and plots",
    long_about = "The idle-search lab beside scx_sisutil: A/B comparisons of its policies \
        with real benchmarks (arms interleaved, Welch's t-test), the workloads that stand for \
        schbench, STREAM and YCSB, and the reports, plots, study summaries and quoted tables \
        made from results files. `bench` needs root and a kernel with sched_ext, and \
        scx_sisutil beside this program or in the PATH."
)]
struct Opts {
    #[command(subcommand)]
    cmd: Cmd,
    /// Verbose output
    #[arg(short, long, global = true)]
    verbose: bool,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Compare policies with real benchmarks (A/B), arms interleaved;
    /// prints, saves and plots the comparison (run as root)
    Bench(Box<bench::BenchOpts>),
    /// Compare two results files of `bench`
    Compare {
        a: PathBuf,
        b: PathBuf,
        /// Significance level of the t-test
        #[arg(long, default_value_t = 0.05)]
        alpha: f64,
    },
    /// Print the report and write the plots of a results file again
    Plot {
        results: PathBuf,
        /// Folder for the plots (default: plots/ beside the file)
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Summarize a study (scripts/study.sh's folder): DIR/summary.md, with
    /// every shape's results and search figures, and DIR/plots
    StudySummary { dir: PathBuf },
    /// Print one table (or verdict) of one or more results files, as the
    /// documents quote them
    Table(bench::cite::TableOpts),
    /// The kernel's SIS_UTIL (an eevdf arm the observer counted) beside a
    /// policy arm, per point: found-rate, depth, the depth distributions'
    /// distance, waits
    Fidelity(bench::fidelity::FidelityOpts),
    /// Check that every table a document quotes still matches its results
    /// (paths from the current folder: run it at the top of the repository)
    Docs {
        /// Markdown files
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Write the commands' output into the documents instead
        #[arg(long)]
        update: bool,
    },
    /// Read a trace of the scheduler (`scx_sisutil trace --out DIR`): the
    /// waits from wakeup to first run by rule and by what the placement
    /// found, the wakers whose wakees missed most; writes DIR/report.txt,
    /// DIR/waits.svg and a Perfetto trace, DIR/trace.pftrace
    TraceReport { dir: PathBuf },
    /// The table of scripts/cost.sh's runs (its RESULT lines): each arm's
    /// figures, and their change against the first arm's with Welch's p
    CostSummary { runs: PathBuf },
    /// Print values of a JSON document (`scx_sisutil stats --json`, a
    /// results file) by path, e.g. `llcs.0.found`: for scripts
    Get(get::GetOpts),
    /// Print the scheduler's policies (the values of its --policy), one
    /// per line: for scripts that go through every rule
    Rules {
        /// Only those that can be judged in the shadow (--shadow's values)
        #[arg(long)]
        shadow: bool,
    },
    /// Print a VM shape's numbers (scripts/vm.sh's grammar: LxC[xT] or
    /// SsLlCc[Tt][-npsN]) as shell assignments
    Shape { shape: String },
    /// The wakeup-latency workload: message threads waking worker threads
    Wakebench(wakebench::Config),
    /// The memory-bandwidth workload: STREAM's four kernels on threads that
    /// start together
    Streambench(streambench::Config),
    /// The key-value load: YCSB's workloads A, B, C against PostgreSQL
    Ycsb(ycsb::Config),
}

fn main() -> ExitCode {
    let opts = match Opts::try_parse() {
        Ok(opts) => opts,
        Err(e) => return console::usage_error("sisutil-lab", e),
    };
    console::init_logging(opts.verbose);
    if !matches!(opts.cmd, Cmd::Bench(_)) {
        // Like any command-line tool, end quietly when the reader of its
        // output goes away (`sisutil-lab plot F | head`). The harness keeps
        // SIGPIPE ignored: it must clean up first.
        // SAFETY: resetting a signal disposition has no preconditions.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    match run(opts.cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sisutil-lab: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Bench(b) => bench::run(&b, shutdown_flag()?),
        Cmd::Compare { a, b, alpha } => {
            if !(alpha > 0.0 && alpha < 1.0) {
                return Err(anyhow!("--alpha must be between 0 and 1"));
            }
            bench::compare(&a, &b, alpha)
        }
        Cmd::Fidelity(o) => bench::fidelity::run(&o),
        Cmd::Plot { results, out } => bench::replot(&results, out.as_deref()),
        Cmd::StudySummary { dir } => {
            let path = bench::study::summarize(&dir)?;
            println!("{}", path.display());
            Ok(())
        }
        Cmd::Table(t) => {
            print!("{}", bench::cite::render(&t, Path::new("."))?);
            Ok(())
        }
        Cmd::Docs { files, update } => bench::cite::docs(&files, update),
        Cmd::Get(o) => get::main(&o),
        Cmd::Rules { shadow } => {
            for p in Policy::ALL.iter().filter(|p| !shadow || p.can_shadow()) {
                println!("{p}");
            }
            Ok(())
        }
        Cmd::Shape { shape } => shape::main(&shape),
        Cmd::TraceReport { dir } => trace::main(&dir),
        Cmd::CostSummary { runs } => cost::main(&runs),
        Cmd::Wakebench(cfg) => wakebench::main(&cfg),
        Cmd::Streambench(cfg) => streambench::main(&cfg),
        Cmd::Ycsb(cfg) => ycsb::main(&cfg),
    }
}

fn shutdown_flag() -> Result<Arc<AtomicBool>> {
    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("cannot install the SIGINT/SIGTERM handler")?;
    Ok(shutdown)
}
