//! What a bench run is asked for: the command line's options, the
//! presets that size the matrix for where it runs, and the arms and points
//! they come to.

use std::path::PathBuf;

use anyhow::{bail, Result};

use super::arms::Arm;
use super::results::Order;
use super::workload::{Family, Matrix, Workload};

/// Sizes of the matrix for where it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Preset {
    /// Tiny loops, 2 iterations: checks the harness end to end
    Quick,
    /// Sized for a small VM under software emulation
    Vm,
    /// Sized for a real machine
    Host,
    /// The study's matrix (scripts/study.sh): the VM's sizes, hackbench on
    /// processes and pipes, tbench and the wakeup benchmark at 1, a quarter
    /// of and all of the CPUs (tbench at 4x them too)
    Study,
}

#[derive(Clone, Debug, clap::Args)]
pub struct BenchOpts {
    /// Arms, the first being the baseline: eevdf, eevdf-nosisutil, any
    /// policy of scx_sisutil (util, prop, full, ...: `scx_sisutil --help`
    /// lists them), util-small[=N]; a policy arm with
    /// +cache (util+cache) runs with SIS_CACHE, with +current with
    /// SIS_CURRENT, with +traceN with one wakeup in N on record during
    /// every measured run (the last iteration's trace of each point is kept
    /// in OUT/traces/, with its trace-report); any of them with #TAG
    /// (util#2) is the same arm again under another name, a control;
    /// `--arms ''` runs the --arm ones alone
    #[arg(long, value_delimiter = ',', default_value = "eevdf,util,prop")]
    pub arms: Vec<String>,
    /// Another sched_ext scheduler as an arm: NAME=COMMAND (repeatable); a
    /// COMMAND that starts scx_sisutil is counted as its policy arms are
    #[arg(long = "arm", value_name = "NAME=COMMAND")]
    pub external: Vec<String>,
    /// Benchmark families
    #[arg(long = "bench", value_enum, value_delimiter = ',')]
    pub families: Option<Vec<Family>>,
    /// Sizes: quick, vm, host or study (default: vm)
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
    /// STREAM threads (default: one per LLC)
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub stream_threads: Option<Vec<u64>>,
    /// STREAM runs per sample (default: the review's 10 and 100)
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(2..=200))]
    pub stream_runs: Option<Vec<u32>>,
    /// Elements of each STREAM array
    #[arg(long, value_parser = clap::value_parser!(u64).range(1024..))]
    pub stream_elements: Option<u64>,
    /// YCSB workloads: a, b, c
    #[arg(long, value_enum, value_delimiter = ',')]
    pub workloads: Option<Vec<Workload>>,
    /// YCSB client connections
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub db_clients: Option<Vec<u64>>,
    /// YCSB seconds per run
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub db_secs: Option<u64>,
    /// Records in the YCSB table, loaded once per run
    #[arg(long, value_parser = clap::value_parser!(u64).range(100..=100_000_000))]
    pub records: Option<u64>,
    /// The arms' order within each round: balanced (every arm in every
    /// place and after every other arm equally often) or alternate (A B C,
    /// C B A: one scheduler load fewer per round)
    #[arg(long, value_enum, default_value_t = Order::Balanced)]
    pub order: Order,
    /// Discard no warm-up run after a scheduler load or unload
    #[arg(long)]
    pub no_warmup: bool,
    /// Seconds to let the scheduler settle after it reports enabled
    /// (default: 0.5 at the quick preset, 2 otherwise)
    #[arg(long)]
    pub settle_secs: Option<f64>,
    /// Significance level of the t-test
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// The equivalence margin in % of the base's mean, stated before the
    /// run: the report calls a change "level" only where two one-sided
    /// tests put it inside (default: the largest difference between a
    /// control arm X#TAG and its X over the run's points, where one ran)
    #[arg(long, value_name = "PCT", value_parser = super::cite::parse_margin)]
    pub margin: Option<f64>,
    /// An analysis declared before the run: `sisutil-lab table` options
    /// (without the run), checked now, recorded in the results file, and
    /// run on it at the end, e.g. --declare '--arms auto --base util
    /// --pooled' (repeatable)
    #[arg(
        long = "declare",
        value_name = "TABLE-OPTIONS",
        allow_hyphen_values = true
    )]
    pub declared: Vec<String>,
    /// Give up on a benchmark run after this many seconds
    #[arg(long, default_value_t = 900)]
    pub run_timeout: u64,
    /// Extra options for scx_sisutil (e.g. "--slice-us 2000"; "--bpf-stats"
    /// adds each BPF op's run time to the report, the observer's probes'
    /// in the kernel arms too, at a cost to every op)
    #[arg(long, allow_hyphen_values = true)]
    pub scheduler_args: Option<String>,
    /// Where to write results.json, report.txt, plots/ and scheduler.log
    /// (default: runs/ab-<date>-<time>)
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Take up the run this results file holds (the same arms, points,
    /// iterations, order and analyses, the same build and kernel): keep
    /// its samples and run only the rest
    #[arg(long, value_name = "RESULTS")]
    pub resume: Option<PathBuf>,
    /// Run this shell command between samples, after the results file is
    /// saved: after the first sample and then at most every
    /// --checkpoint-secs, to carry the file somewhere a dying machine
    /// does not take it (scripts/ab.sh sends it out of the VM)
    #[arg(long, value_name = "COMMAND")]
    pub checkpoint: Option<String>,
    /// The least time between two checkpoints
    #[arg(long, value_name = "SECS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub checkpoint_secs: u64,
}

fn by_preset<T>(p: Preset, quick: T, vm: T, host: T) -> T {
    match p {
        Preset::Quick => quick,
        Preset::Vm | Preset::Study => vm,
        Preset::Host => host,
    }
}

/// The distinct positive values of @sizes, ascending.
fn distinct(sizes: &[u64]) -> Vec<u64> {
    let mut v: Vec<u64> = sizes.iter().copied().filter(|n| *n > 0).collect();
    v.sort_unstable();
    v.dedup();
    v
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

fn all_workloads() -> Vec<Workload> {
    vec![Workload::A, Workload::B, Workload::C]
}

impl BenchOpts {
    pub fn arms(&self) -> Result<Vec<Arm>> {
        // `--arms ''` leaves only the --arm ones.
        let mut arms: Vec<Arm> = self
            .arms
            .iter()
            .filter(|a| !a.is_empty())
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

    /// The quick preset is a check that everything runs, not a
    /// measurement: it need not wait for the scheduler to settle.
    pub fn settle_secs(&self) -> f64 {
        self.settle_secs
            .unwrap_or(by_preset(self.preset, 0.5, 2.0, 2.0))
    }

    pub fn iterations(&self) -> u32 {
        self.iterations.unwrap_or(match self.preset {
            Preset::Quick => 2,
            Preset::Vm | Preset::Study => 3,
            Preset::Host => 5,
        })
    }

    /// The matrix for a machine of @cpus CPUs in @llcs LLCs.
    pub fn matrix(&self, cpus: u64, llcs: u64) -> Result<Matrix> {
        let p = self.preset;
        let families = self.families.clone().unwrap_or(match p {
            Preset::Quick => vec![Family::Hackbench, Family::Tbench],
            _ => vec![
                Family::Hackbench,
                Family::Tbench,
                Family::PerfMessaging,
                Family::PerfPipe,
                Family::Wakeup,
                Family::Stream,
                Family::Ycsb,
            ],
        });
        let groups = self.groups.clone().unwrap_or_else(|| {
            by_preset(p, vec![1, 2], vec![1, 2, 4, 8, 16], vec![1, 2, 4, 8, 16])
        });
        Ok(Matrix {
            families,
            hackbench_loops: self.loops.unwrap_or(by_preset(p, 50, 200, 2000)),
            hackbench_threads: flags(
                self.modes.as_deref().unwrap_or(&match p {
                    Preset::Quick | Preset::Study => vec!["process".into()],
                    _ => vec!["process".into(), "thread".into()],
                }),
                "thread",
                "process",
            )?,
            hackbench_pipe: flags(
                self.ipc.as_deref().unwrap_or(&match p {
                    Preset::Quick | Preset::Study => vec!["pipe".into()],
                    _ => vec!["pipe".into(), "socket".into()],
                }),
                "pipe",
                "socket",
            )?,
            perf_groups: groups.iter().copied().filter(|g| *g <= 8).collect(),
            hackbench_groups: groups,
            tbench_clients: self.clients.clone().unwrap_or_else(|| match p {
                Preset::Study => distinct(&[1, cpus / 4, cpus, 4 * cpus]),
                _ => by_preset(p, vec![1], powers_of_two(4 * cpus), powers_of_two(4 * cpus)),
            }),
            // tbench counts only once all its clients run: 128 clients on 32
            // vCPUs under TCG had not all started within 3 s (0 MB/s in
            // every arm).
            tbench_secs: self.tbench_secs.unwrap_or(match p {
                Preset::Study if cpus > 16 => 10,
                Preset::Study => 3,
                _ => by_preset(p, 2, 5, 10),
            }),
            perf_loops: by_preset(p, 10, 50, 200),
            perf_pipe_loops: by_preset(p, 2_000, 20_000, 200_000),
            wakeup_messengers: 2,
            wakeup_workers: self.workers.clone().unwrap_or_else(|| match p {
                Preset::Study => distinct(&[1, cpus / 4, cpus]),
                _ => by_preset(p, vec![2], powers_of_two(cpus), powers_of_two(cpus)),
            }),
            wakeup_secs: by_preset(p, 1.0, 3.0, 10.0),
            stream_threads: self.stream_threads.clone().unwrap_or(vec![llcs.max(1)]),
            stream_runs: self
                .stream_runs
                .clone()
                .unwrap_or_else(|| by_preset(p, vec![10], vec![10, 100], vec![10, 100])),
            // Under emulation no cache holds anything for long; the VM's
            // arrays are sized for its run time. A machine gets STREAM's
            // rule (streambench's default when no size is given).
            stream_elements: self
                .stream_elements
                .unwrap_or(by_preset(p, 1 << 18, 1 << 21, 0)),
            ycsb_workloads: self.workloads.clone().unwrap_or_else(|| {
                by_preset(p, vec![Workload::A], all_workloads(), all_workloads())
            }),
            ycsb_clients: self.db_clients.clone().unwrap_or_else(|| {
                by_preset(p, vec![2], vec![1, cpus], vec![1, (cpus / 4).max(1), cpus])
            }),
            ycsb_secs: self.db_secs.unwrap_or(by_preset(p, 2, 5, 30)),
            ycsb_records: self.records.unwrap_or(by_preset(p, 2_000, 10_000, 100_000)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let m = q.matrix(8, 2).unwrap();
        assert_eq!(q.iterations(), 2);
        assert_eq!(q.settle_secs(), 0.5);
        assert_eq!(m.families, [Family::Hackbench, Family::Tbench]);
        assert_eq!(m.tbench_clients, [1]);
        let s = opts(&["--preset", "quick", "--settle-secs", "3"]).unwrap();
        assert_eq!(s.settle_secs(), 3.0);

        let v = opts(&[]).unwrap();
        let m = v.matrix(8, 2).unwrap();
        assert_eq!(v.iterations(), 3);
        assert_eq!(v.settle_secs(), 2.0);
        assert_eq!(m.tbench_clients, [1, 2, 4, 8, 16, 32]);
        assert_eq!(m.wakeup_workers, [1, 2, 4, 8]);
        assert_eq!(m.hackbench_groups, [1, 2, 4, 8, 16]);
        assert_eq!(m.hackbench_threads, [false, true]);
        assert_eq!(m.perf_groups, [1, 2, 4, 8]);
        assert_eq!(
            (m.stream_threads.clone(), m.stream_runs.clone()),
            (vec![2], vec![10, 100])
        );
        assert_eq!(m.ycsb_workloads, [Workload::A, Workload::B, Workload::C]);
        assert_eq!(m.ycsb_clients, [1, 8]);

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
        let m = o.matrix(4, 1).unwrap();
        assert_eq!(
            (m.hackbench_groups.clone(), m.hackbench_threads.clone()),
            (vec![3], vec![true])
        );
        assert_eq!(
            (m.hackbench_pipe.clone(), m.tbench_clients.clone()),
            (vec![false], vec![5])
        );
        // The study's sizes, from the CPUs of the machine it runs on.
        let st = opts(&["--preset", "study"]).unwrap();
        let m = st.matrix(16, 2).unwrap();
        assert_eq!(st.iterations(), 3);
        assert_eq!(m.hackbench_groups, [1, 2, 4, 8, 16]);
        assert_eq!(
            (m.hackbench_threads.clone(), m.hackbench_pipe.clone()),
            (vec![false], vec![true])
        );
        assert_eq!(
            (m.tbench_clients.clone(), m.tbench_secs),
            (vec![1, 4, 16, 64], 3)
        );
        assert_eq!(m.wakeup_workers, [1, 4, 16]);
        let m = st.matrix(32, 8).unwrap();
        assert_eq!(
            (m.tbench_clients.clone(), m.tbench_secs),
            (vec![1, 8, 32, 128], 10)
        );
        let m = st.matrix(2, 1).unwrap();
        assert_eq!(
            (m.tbench_clients.clone(), m.wakeup_workers.clone()),
            (vec![1, 2, 8], vec![1, 2])
        );

        assert!(opts(&["--modes", "fibre"]).unwrap().matrix(4, 1).is_err());
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
        let only = parse(&["--arms", "", "--arm", "a=scx_a", "--arm", "b=scx_b"]).unwrap();
        assert_eq!(
            only.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert!(parse(&["--arms", ""]).is_err());
        assert!(parse(&["--arms", "util,util"]).is_err());
        assert!(parse(&["--arms", "eevdf,turbo"]).is_err());
    }
}
