//! The command line.

use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use scx_utils::libbpf_clap_opts::LibbpfOpts;

use crate::config::Config;
use crate::utilisation;
use sisutil_proto::control::Settings;
use sisutil_proto::policy::{Policy, Shadow};

#[derive(Debug, Parser)]
#[command(
    name = "scx_sisutil",
    disable_version_flag = true,
    about = "A sched_ext scheduler that brings back the kernel's SIS_UTIL and SIS_PROP idle-CPU searches",
    long_about = "A sched_ext scheduler that places waking tasks the way the kernel's \
        select_idle_sibling() does, with the LLC scan limited by SIS_UTIL (default), SIS_PROP \
        or a baseline policy, switchable while it runs, and the scan statistics of the 2022 LKML \
        review of SIS_UTIL (\"sched/fair: Introduce SIS_UTIL to search idle CPU based on sum of \
        util_avg\", v3): found-rate, the \"able to find\" matrix, CPUs searched.\n\n\
        Run it as root on a kernel with sched_ext; Ctrl-C unloads it.",
    args_conflicts_with_subcommands = true
)]
pub struct Opts {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    #[command(flatten)]
    pub run: RunOpts,
}

#[derive(Debug, Args)]
pub struct RunOpts {
    /// Idle-CPU search policy
    #[arg(long, value_enum, default_value_t = Policy::Util)]
    pub policy: Policy,

    /// Judge these rules beside the active policy at every scan, on the
    /// same wakeups, each with its own state, without acting on them: a
    /// comma-separated list of the policies that scan to a depth (util,
    /// prop, full, none, ...), or "all" of them (fills the review's "able
    /// to find" matrix for every pair; auto and builtin cannot be judged
    /// in the shadow)
    #[arg(long, value_name = "RULES", default_value = "off",
          value_parser = |s: &str| s.parse::<Shadow>())]
    pub shadow: Shadow,

    /// util: scan the whole LLC when it has at most N CPUs and
    /// nr_idle_scan > 0 (the review's small-LLC proposal); 0 = off
    #[arg(long, value_name = "N", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=1024))]
    pub small_llc: u32,

    /// SIS_CACHE: keep the CPU of a task that sleeps briefly for it, for
    /// about as long as it sleeps; scans pass over such CPUs (with every
    /// policy; builtin's scan is the kernel's, which it leaves alone)
    #[arg(long)]
    pub sis_cache: bool,

    /// SIS_CURRENT: when the LLC is busy, a short wakee of a short waker
    /// that only they wake each other goes to the waker's CPU instead of a
    /// scan (with every policy but builtin)
    #[arg(long)]
    pub sis_current: bool,

    /// The bound of SIS_CACHE's short sleep and SIS_CURRENT's short run,
    /// in microseconds; default: the kernel's sysctl_sched_migration_cost
    /// (500 us unless tuned). Under emulation, where every run takes ten
    /// times longer, a study raises it as it would that sysctl
    #[arg(long, value_name = "US",
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub migration_cost_us: Option<u64>,

    /// How often utilisation is folded and nr_idle_scan published, in ms.
    /// The default is in the order of the kernel's LLC balance interval
    /// (the LLC's width in ms when idle, twice that when busy: 8-16 ms for
    /// an 8-CPU LLC), which is where the kernel refreshes nr_idle_scan
    #[arg(long, value_name = "MS", default_value_t = utilisation::DEFAULT_INTERVAL_MS,
          value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub interval_ms: u64,

    /// Time slice of a task, in microseconds
    #[arg(long, value_name = "US", default_value_t = 3000,
          value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    pub slice_us: u64,

    /// Also print the statistics every SECS seconds while running
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub stats: Option<f64>,

    /// Print the statistics of the running instance every SECS seconds,
    /// loading nothing
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub monitor: Option<f64>,

    /// With --stats or --monitor: one JSON object per line instead of tables
    #[arg(long)]
    pub json: bool,

    /// Do not count scan statistics (to measure what counting costs)
    #[arg(long)]
    pub no_scan_stats: bool,

    /// Count the statistics' costly part too: whether an idle CPU existed
    /// when a scan missed (the found-rates and the review's tables), scan
    /// times, each wakeup's wait to its first run, and found CPUs taken
    /// before their task ran. Costs select_cpu about a fifth of its time,
    /// so it is off by default; the shadow rules need it
    #[arg(long)]
    pub detail_stats: bool,

    /// Always wake tasks towards their previous CPU, never the waker's
    /// (to measure what wake-affine placement brings)
    #[arg(long)]
    pub no_wake_affine: bool,

    /// Turn on the kernel's BPF run-time statistics while running, and
    /// report each op's time per call with the statistics
    #[arg(long)]
    pub bpf_stats: bool,

    /// Exit debug dump buffer length; 0 = the kernel's default
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    pub exit_dump_len: u32,

    /// Verbose output, libbpf's included
    #[arg(short, long)]
    pub verbose: bool,

    /// Print the version (with the build's git commit and target) and exit
    #[arg(short = 'V', long)]
    pub version: bool,

    /// Describe every statistic and exit
    #[arg(long)]
    pub help_stats: bool,

    #[command(flatten, next_help_heading = "Libbpf Options")]
    pub libbpf: LibbpfOpts,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Change a setting of the running instance, without reloading it
    Set {
        #[command(subcommand)]
        what: SetCmd,
    },
    /// Print the running instance's statistics once
    Stats {
        /// As one JSON object instead of tables
        #[arg(long)]
        json: bool,
    },
    /// Restart the running instance's statistics
    ResetStats,
    /// Put the running instance's wakeups on record, without a reload:
    /// what each placement decided and what the task then waited, into
    /// DIR/wakeups.csv (and every LLC's state each interval into
    /// DIR/llcs.csv); `sisutil-lab trace-report DIR` reads them
    Trace(TraceOpts),
    /// Print the running instance's settings
    Status,
    /// Load no scheduler: watch the kernel's own wakeup placement (its
    /// SIS_UTIL) with BPF probes and serve the same statistics, which
    /// `stats` and `--monitor` then read; Ctrl-C ends it
    Observe(ObserveOpts),
    /// Internal: removes the socket once the scheduler that started it ends
    #[command(name = "__watch-socket", hide = true)]
    WatchSocket,
}

#[derive(Debug, Args)]
pub struct ObserveOpts {
    /// Judge these rules on the kernel's scans, without acting on them: a
    /// comma-separated list of util (at the kernel's own nr_idle_scan), prop
    /// (books from the kernel's avg_idle and the observer's walks), full,
    /// none, or "all"
    #[arg(long, value_name = "RULES", default_value = "off",
          value_parser = |s: &str| s.parse::<Shadow>())]
    pub shadow: Shadow,

    /// Also print the statistics every SECS seconds
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub stats: Option<f64>,

    /// With --stats: one JSON object per line instead of tables
    #[arg(long)]
    pub json: bool,

    /// Turn on the kernel's BPF run-time statistics while observing, and
    /// report each probe's time per call with the statistics: what the
    /// observer adds to every wakeup and switch
    #[arg(long)]
    pub bpf_stats: bool,

    /// Verbose output, libbpf's included
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Debug, Args)]
pub struct TraceOpts {
    /// The folder to write into (made if missing)
    #[arg(long, value_name = "DIR")]
    pub out: std::path::PathBuf,
    /// One wakeup in N per CPU on record (1: every one)
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub every: u32,
    /// How long; the scheduler stops by itself then, even if this command
    /// is killed
    #[arg(long, value_name = "SECS", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub seconds: u32,
    /// The most the records may take, in MB: the trace ends there
    #[arg(long, value_name = "MB", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub max_mb: u32,
    /// Overwrite a trace already in DIR (refused otherwise)
    #[arg(long)]
    pub replace: bool,
}

#[derive(Debug, Subcommand)]
pub enum SetCmd {
    /// The idle-CPU search policy
    Policy {
        #[arg(value_enum)]
        policy: Policy,
    },
    /// The shadow rules (util,prop,...: see --shadow), "all", or "off"
    Shadow {
        #[arg(value_parser = |s: &str| s.parse::<Shadow>())]
        shadow: Shadow,
    },
    /// The small-LLC rule's width, or "off"
    SmallLlc {
        #[arg(value_parser = parse_small_llc)]
        n: u32,
    },
    /// SIS_CACHE, "on" or "off"
    SisCache {
        #[arg(value_parser = parse_on_off, action = clap::ArgAction::Set)]
        on: bool,
    },
    /// SIS_CURRENT, "on" or "off"
    SisCurrent {
        #[arg(value_parser = parse_on_off, action = clap::ArgAction::Set)]
        on: bool,
    },
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("expected on or off, got {s:?}")),
    }
}

fn parse_small_llc(s: &str) -> Result<u32, String> {
    match s {
        "off" => Ok(0),
        _ => match s.parse::<u32>() {
            Ok(n) if n <= 1024 => Ok(n),
            _ => Err(format!("expected a CPU count 0..=1024 or off, got {s:?}")),
        },
    }
}

fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.01..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "expected seconds between 0.01 and 86400, got {s:?}"
        )),
    }
}

impl RunOpts {
    /// The run's configuration, checked: what a start refuses is what a
    /// switch would refuse.
    pub fn config(&self) -> Result<Config, String> {
        let config = Config {
            settings: Settings {
                policy: self.policy,
                shadow: self.shadow.clone(),
                small_llc: self.small_llc,
                sis_cache: self.sis_cache,
                sis_current: self.sis_current,
            },
            migration_cost: self.migration_cost_us.map(Duration::from_micros),
            interval: Duration::from_millis(self.interval_ms),
            slice: Duration::from_micros(self.slice_us),
            scan_stats: !self.no_scan_stats,
            detail_stats: self.detail_stats,
            wake_affine: !self.no_wake_affine,
            bpf_stats: self.bpf_stats,
            verbose: self.verbose,
            exit_dump_len: self.exit_dump_len,
            libbpf: self.libbpf.clone(),
        };
        config.admits(&config.settings)?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Opts, clap::Error> {
        Opts::try_parse_from(std::iter::once("scx_sisutil").chain(args.iter().copied()))
    }

    #[test]
    fn defaults() {
        let o = parse(&[]).unwrap();
        let s = o.run.config().unwrap();
        assert_eq!(s.settings.policy, Policy::Util);
        assert_eq!(s.interval, Duration::from_millis(16));
        assert!(s.scan_stats);
        assert!(!s.detail_stats);
        assert!(o.cmd.is_none());
    }

    #[test]
    fn bad_values_are_refused() {
        for args in [
            &["--policy", "fast"][..],
            &["--interval-ms", "0"],
            &["--interval-ms", "99999999"],
            &["--interval-ms", "-5"],
            &["--small-llc", "5000"],
            &["--migration-cost-us", "0"],
            &["--slice-us", "1"],
            &["--stats", "0"],
            &["--monitor", "nan"],
            &["--stats", "-1"],
            &["set", "policy", "fast"],
            &["set", "shadow", "builtin"],
            &["set", "shadow", "auto"],
            &["set", "small-llc", "lots"],
            &["set", "policy"],
        ] {
            assert!(parse(args).is_err(), "{args:?} was accepted");
        }
    }

    #[test]
    fn inconsistent_settings_are_refused() {
        assert!(parse(&["--shadow", "builtin"]).is_err());
        let o = parse(&["--shadow", "prop", "--no-scan-stats"]).unwrap();
        assert!(o.run.config().is_err());
        // The shadow rules are counted by the detailed statistics alone.
        let o = parse(&["--shadow", "prop", "--small-llc", "16"]).unwrap();
        assert!(o.run.config().unwrap_err().contains("--detail-stats"));
        let o = parse(&["--detail-stats", "--no-scan-stats"]).unwrap();
        assert!(o.run.config().unwrap_err().contains("--no-scan-stats"));
        let o = parse(&["--detail-stats", "--shadow", "prop", "--small-llc", "16"]).unwrap();
        assert!(o.run.config().is_ok());
        // A rule beside itself keeps its own state: allowed.
        let o = parse(&[
            "--detail-stats",
            "--policy",
            "prop",
            "--shadow",
            "prop,full",
        ])
        .unwrap();
        let s = o.run.config().unwrap();
        assert_eq!(s.settings.shadow.to_string(), "prop,full");
        let o = parse(&["--detail-stats", "--shadow", "all"]).unwrap();
        assert_eq!(o.run.config().unwrap().settings.shadow, Shadow::all());
        assert!(parse(&[])
            .unwrap()
            .run
            .config()
            .unwrap()
            .settings
            .shadow
            .is_empty());
    }

    #[test]
    fn set_commands() {
        let o = parse(&["set", "shadow", "off"]).unwrap();
        assert!(matches!(
            o.cmd,
            Some(Cmd::Set {
                what: SetCmd::Shadow { ref shadow }
            }) if shadow.is_empty()
        ));
        let o = parse(&["set", "small-llc", "off"]).unwrap();
        assert!(matches!(
            o.cmd,
            Some(Cmd::Set {
                what: SetCmd::SmallLlc { n: 0 }
            })
        ));
        let o = parse(&["set", "sis-cache", "on"]).unwrap();
        assert!(matches!(
            o.cmd,
            Some(Cmd::Set {
                what: SetCmd::SisCache { on: true }
            })
        ));
        assert!(parse(&["set", "sis-cache", "maybe"]).is_err());
        let o = parse(&["set", "sis-current", "off"]).unwrap();
        assert!(matches!(
            o.cmd,
            Some(Cmd::Set {
                what: SetCmd::SisCurrent { on: false }
            })
        ));
        assert!(
            parse(&["--sis-current"])
                .unwrap()
                .run
                .config()
                .unwrap()
                .settings
                .sis_current
        );
        let o = parse(&["set", "policy", "prop"]).unwrap();
        assert!(matches!(
            o.cmd,
            Some(Cmd::Set {
                what: SetCmd::Policy {
                    policy: Policy::Prop
                }
            })
        ));
        assert!(parse(&["--policy", "prop", "status"]).is_err());
        let o = parse(&["trace", "--out", "/tmp/t", "--every", "64"]).unwrap();
        assert!(matches!(
            o.cmd,
            Some(Cmd::Trace(TraceOpts {
                every: 64,
                seconds: 10,
                ..
            }))
        ));
        for bad in [
            &["trace"][..],
            &["trace", "--out", "/t", "--every", "0"],
            &["trace", "--out", "/t", "--seconds", "0"],
            &["trace", "--out", "/t", "--max-mb", "x"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn version_help_stats_and_libbpf_options() {
        assert!(parse(&["-V"]).unwrap().run.version);
        assert!(parse(&["--help-stats"]).unwrap().run.help_stats);
        let o = parse(&["--pin-root-path", "/sys/fs/bpf/x", "--policy", "prop"]).unwrap();
        assert_eq!(o.run.libbpf.pin_root_path.as_deref(), Some("/sys/fs/bpf/x"));
    }
}
