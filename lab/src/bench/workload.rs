//! The benchmarks: which points a matrix has, the command each point runs,
//! and how its output turns into measurements.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};

use super::stat::Better;
pub use crate::ycsb::Workload;

pub const TBENCH_LOADFILE: &str = "/usr/share/dbench/client.txt";

/// What a point measures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub unit: String,
    pub better: Better,
}

fn metric(name: &str, unit: &str, better: Better) -> Metric {
    Metric {
        name: name.into(),
        unit: unit.into(),
        better,
    }
}

/// The benchmark families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// hackbench (rt-tests): groups of senders and receivers
    Hackbench,
    /// tbench (dbench) against tbench_srv on loopback
    Tbench,
    /// perf bench sched messaging
    PerfMessaging,
    /// perf bench sched pipe
    PerfPipe,
    /// message threads waking worker threads (sisutil-lab wakebench)
    Wakeup,
    /// the real schbench, where it is installed: wakeup's points, to check
    /// wakebench against the benchmark it stands for
    Schbench,
    /// STREAM's memory-bandwidth kernels (sisutil-lab streambench)
    Stream,
    /// YCSB's workloads against PostgreSQL (sisutil-lab ycsb)
    Ycsb,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Hackbench => "hackbench",
            Family::Tbench => "tbench",
            Family::PerfMessaging => "perf-messaging",
            Family::PerfPipe => "perf-pipe",
            Family::Wakeup => "wakeup",
            Family::Schbench => "schbench",
            Family::Stream => "stream",
            Family::Ycsb => "ycsb",
        }
    }

    /// The program the family needs in the PATH; ours are built in.
    pub fn program(self) -> Option<&'static str> {
        match self {
            Family::Hackbench => Some("hackbench"),
            Family::Tbench => Some("tbench"),
            Family::Schbench => Some("schbench"),
            Family::PerfMessaging | Family::PerfPipe => Some("perf"),
            Family::Wakeup | Family::Stream | Family::Ycsb => None,
        }
    }

    /// Whether the family runs as a subcommand of this executable.
    pub fn is_ours(self) -> bool {
        matches!(self, Family::Wakeup | Family::Stream | Family::Ycsb)
    }

    /// The measurements, the one the tables lead with first.
    pub fn metrics(self) -> Vec<Metric> {
        match self {
            Family::Hackbench | Family::PerfMessaging => vec![metric("time", "s", Better::Lower)],
            Family::Tbench => vec![metric("throughput", "MB/s", Better::Higher)],
            Family::PerfPipe => vec![
                metric("usecs_per_op", "us/op", Better::Lower),
                metric("time", "s", Better::Lower),
            ],
            Family::Wakeup | Family::Schbench => vec![
                metric("p99_us", "us", Better::Lower),
                metric("p50_us", "us", Better::Lower),
                metric("p90_us", "us", Better::Lower),
                metric("p999_us", "us", Better::Lower),
                metric("rps", "req/s", Better::Higher),
            ],
            Family::Stream => STREAM_KERNELS
                .iter()
                .map(|k| metric(k, "MB/s", Better::Higher))
                .collect(),
            Family::Ycsb => vec![
                metric("ops", "ops/s", Better::Higher),
                metric("p99_us", "us", Better::Lower),
                metric("p50_us", "us", Better::Lower),
            ],
        }
    }
}

/// STREAM's kernels, as its report names them.
pub const STREAM_KERNELS: [&str; 4] = ["Copy", "Scale", "Add", "Triad"];

/// Where the STREAM threads ran: the keys of a sample's values beside the
/// kernels' rates.
pub const STREAM_PLACEMENT: [&str; 6] = [
    "llcs_used",
    "llc_max",
    "nodes_used",
    "node_max",
    "remote_pct",
    "moved_pct",
];

/// One benchmark configuration of the matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub family: Family,
    /// The section the point belongs to, e.g. "hackbench process pipe".
    pub section: String,
    /// The row label, as the review writes it: "4-groups", "8 clients".
    pub label: String,
    /// The varying parameter (groups, clients, workers), for plots.
    pub param: u64,
    pub argv: Vec<String>,
    pub metrics: Vec<Metric>,
}

/// The matrix to run, per family.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Matrix {
    pub families: Vec<Family>,
    pub hackbench_groups: Vec<u64>,
    pub hackbench_loops: u64,
    pub hackbench_threads: Vec<bool>,
    pub hackbench_pipe: Vec<bool>,
    pub tbench_clients: Vec<u64>,
    pub tbench_secs: u64,
    pub perf_groups: Vec<u64>,
    pub perf_loops: u64,
    pub perf_pipe_loops: u64,
    pub wakeup_messengers: u64,
    pub wakeup_workers: Vec<u64>,
    pub wakeup_secs: f64,
    #[serde(default)]
    pub stream_threads: Vec<u64>,
    #[serde(default)]
    pub stream_runs: Vec<u32>,
    #[serde(default)]
    pub stream_elements: u64,
    #[serde(default)]
    pub ycsb_workloads: Vec<Workload>,
    #[serde(default)]
    pub ycsb_clients: Vec<u64>,
    #[serde(default)]
    pub ycsb_secs: u64,
    #[serde(default)]
    pub ycsb_records: u64,
}

fn s(v: impl ToString) -> String {
    v.to_string()
}

impl Matrix {
    pub fn points(&self, exe: &str) -> Vec<Point> {
        let mut out = Vec::new();
        for &f in &self.families {
            match f {
                Family::Hackbench => self.hackbench(&mut out),
                Family::Tbench => self.tbench(&mut out),
                Family::PerfMessaging => self.perf_messaging(&mut out),
                Family::PerfPipe => out.push(Point {
                    family: f,
                    section: "perf bench sched pipe".into(),
                    label: format!("{} loops", self.perf_pipe_loops),
                    param: 1,
                    argv: ["perf", "bench", "sched", "pipe", "-l"]
                        .map(s)
                        .into_iter()
                        .chain([s(self.perf_pipe_loops)])
                        .collect(),
                    metrics: f.metrics(),
                }),
                Family::Wakeup => self.wakeup(exe, &mut out),
                Family::Schbench => self.schbench(&mut out),
                Family::Stream => self.stream(exe, &mut out),
                Family::Ycsb => self.ycsb(exe, &mut out),
            }
        }
        out
    }

    fn hackbench(&self, out: &mut Vec<Point>) {
        for &threads in &self.hackbench_threads {
            for &pipe in &self.hackbench_pipe {
                let section = format!(
                    "hackbench {} {}",
                    if threads { "thread" } else { "process" },
                    if pipe { "pipe" } else { "socket" }
                );
                for &g in &self.hackbench_groups {
                    let mut argv = vec![
                        s("hackbench"),
                        s("-g"),
                        s(g),
                        s("-l"),
                        s(self.hackbench_loops),
                    ];
                    argv.push(s(if threads { "-T" } else { "-P" }));
                    if pipe {
                        argv.push(s("-p"));
                    }
                    out.push(Point {
                        family: Family::Hackbench,
                        section: section.clone(),
                        label: format!("{g}-groups"),
                        param: g,
                        argv,
                        metrics: Family::Hackbench.metrics(),
                    });
                }
            }
        }
    }

    fn tbench(&self, out: &mut Vec<Point>) {
        for &c in &self.tbench_clients {
            out.push(Point {
                family: Family::Tbench,
                section: "tbench".into(),
                label: format!("{c} clients"),
                param: c,
                argv: vec![
                    s("tbench"),
                    s("-t"),
                    s(self.tbench_secs),
                    s("-c"),
                    s(TBENCH_LOADFILE),
                    s(c),
                    s("127.0.0.1"),
                ],
                metrics: Family::Tbench.metrics(),
            });
        }
    }

    fn perf_messaging(&self, out: &mut Vec<Point>) {
        for &g in &self.perf_groups {
            out.push(Point {
                family: Family::PerfMessaging,
                section: "perf bench sched messaging".into(),
                label: format!("{g}-groups"),
                param: g,
                argv: ["perf", "bench", "sched", "messaging", "-g"]
                    .map(s)
                    .into_iter()
                    .chain([s(g), s("-l"), s(self.perf_loops)])
                    .collect(),
                metrics: Family::PerfMessaging.metrics(),
            });
        }
    }

    fn wakeup(&self, exe: &str, out: &mut Vec<Point>) {
        for &w in &self.wakeup_workers {
            out.push(Point {
                family: Family::Wakeup,
                section: format!(
                    "wakeup latency, {} message thread(s)",
                    self.wakeup_messengers
                ),
                label: format!("{w} workers"),
                param: w,
                argv: vec![
                    s(exe),
                    s("wakebench"),
                    s("--messengers"),
                    s(self.wakeup_messengers),
                    s("--workers"),
                    s(w),
                    s("--seconds"),
                    s(self.wakeup_secs),
                    s("--json"),
                ],
                metrics: Family::Wakeup.metrics(),
            });
        }
    }
}

impl Matrix {
    /// schbench at wakeup's points: the same message threads, workers and
    /// run time (whole seconds, as schbench takes them).
    fn schbench(&self, out: &mut Vec<Point>) {
        let secs = (self.wakeup_secs.ceil() as u64).max(1);
        for &w in &self.wakeup_workers {
            out.push(Point {
                family: Family::Schbench,
                section: format!("schbench, {} message thread(s)", self.wakeup_messengers),
                label: format!("{w} workers"),
                param: w,
                argv: vec![
                    s("schbench"),
                    s("-m"),
                    s(self.wakeup_messengers),
                    s("-t"),
                    s(w),
                    s("-r"),
                    s(secs),
                ],
                metrics: Family::Schbench.metrics(),
            });
        }
    }

    /// STREAM at each of its lengths (the review's 10 and 100 runs).
    fn stream(&self, exe: &str, out: &mut Vec<Point>) {
        for &runs in &self.stream_runs {
            for &t in &self.stream_threads {
                out.push(Point {
                    family: Family::Stream,
                    section: format!("STREAM, {runs} runs"),
                    label: format!("{t} threads"),
                    param: t,
                    argv: [s(exe), s("streambench"), s("--threads"), s(t)]
                        .into_iter()
                        .chain([s("--runs"), s(runs), s("--json")])
                        .chain(
                            // 0: streambench's own size, STREAM's rule.
                            (self.stream_elements > 0)
                                .then(|| [s("--elements"), s(self.stream_elements)])
                                .into_iter()
                                .flatten(),
                        )
                        .collect(),
                    metrics: Family::Stream.metrics(),
                });
            }
        }
    }

    /// The run's server is added to the command when it runs (`--host`).
    fn ycsb(&self, exe: &str, out: &mut Vec<Point>) {
        for &w in &self.ycsb_workloads {
            for &c in &self.ycsb_clients {
                out.push(Point {
                    family: Family::Ycsb,
                    section: format!("YCSB workload {}", w.name().to_uppercase()),
                    label: format!("{c} clients"),
                    param: c,
                    argv: vec![
                        s(exe),
                        s("ycsb"),
                        s("--workload"),
                        s(w.name()),
                        s("--clients"),
                        s(c),
                        s("--seconds"),
                        s(self.ycsb_secs),
                        s("--records"),
                        s(self.ycsb_records),
                        s("--json"),
                    ],
                    metrics: Family::Ycsb.metrics(),
                });
            }
        }
    }
}

/// The last line of @stdout that is a JSON object, as @what's report.
fn json_report<T: serde::de::DeserializeOwned>(stdout: &str, what: &str) -> Result<T> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| anyhow!("no JSON report in {what}'s output"))?;
    Ok(serde_json::from_str(line)?)
}

/// The measurements in a benchmark's output.
pub fn parse(family: Family, stdout: &str) -> Result<BTreeMap<String, f64>> {
    let mut m = BTreeMap::new();
    match family {
        Family::Hackbench => {
            m.insert("time".into(), after(stdout, "Time:")?);
        }
        Family::Tbench => {
            let mbs = after(stdout, "Throughput")?;
            // dbench counts only once every client has started: a run
            // that ended before is not a measurement of zero.
            if mbs == 0.0 {
                bail!("tbench measured 0 MB/s: its run ended before all clients started (raise --tbench-secs)");
            }
            m.insert("throughput".into(), mbs);
        }
        Family::PerfMessaging => {
            m.insert("time".into(), after(stdout, "Total time:")?);
        }
        Family::PerfPipe => {
            m.insert("time".into(), after(stdout, "Total time:")?);
            let line = stdout
                .lines()
                .find(|l| l.contains("usecs/op"))
                .ok_or_else(|| anyhow!("no usecs/op in perf's output"))?;
            m.insert("usecs_per_op".into(), first_number(line)?);
        }
        Family::Wakeup => {
            let r: crate::wakebench::Report = json_report(stdout, "wakebench")?;
            for (k, v) in [
                ("p50_us", r.p50_us),
                ("p90_us", r.p90_us),
                ("p99_us", r.p99_us),
                ("p999_us", r.p999_us),
                ("rps", r.rps),
            ] {
                m.insert(k.into(), v);
            }
        }
        Family::Schbench => schbench(stdout, &mut m)?,
        Family::Stream => {
            let r: crate::streambench::Report = json_report(stdout, "streambench")?;
            let values = [r.copy_mbs, r.scale_mbs, r.add_mbs, r.triad_mbs];
            let placement = [
                r.llcs_used,
                r.llc_max,
                r.nodes_used,
                r.node_max,
                r.remote_pct,
                r.moved_pct,
            ];
            for (k, v) in STREAM_KERNELS.iter().zip(values) {
                m.insert((*k).into(), v);
            }
            for (k, v) in STREAM_PLACEMENT.iter().zip(placement) {
                m.insert((*k).into(), v);
            }
        }
        Family::Ycsb => {
            let r: crate::ycsb::Report = json_report(stdout, "ycsb")?;
            for (k, v) in [
                ("ops", r.ops),
                ("p50_us", r.p50_us),
                ("p99_us", r.p99_us),
                ("p999_us", r.p999_us),
            ] {
                m.insert(k.into(), v);
            }
        }
    }
    if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_finite() || **v < 0.0) {
        bail!("{} reported {k} = {v}", family.name());
    }
    Ok(m)
}

/// schbench's final report: the last "Wakeup Latencies" block (it prints
/// one every interval, and the whole run's last) and the average rps.
fn schbench(stdout: &str, m: &mut BTreeMap<String, f64>) -> Result<()> {
    let (_, block) = stdout
        .rsplit_once("Wakeup Latencies")
        .ok_or_else(|| anyhow!("no wakeup latencies in schbench's output"))?;
    let block = block.split("Request Latencies").next().unwrap_or(block);
    for (k, pct) in [
        ("p50_us", "50.0th:"),
        ("p90_us", "90.0th:"),
        ("p99_us", "99.0th:"),
        ("p999_us", "99.9th:"),
    ] {
        m.insert(k.into(), after(block, pct)?);
    }
    m.insert("rps".into(), after(stdout, "average rps:")?);
    Ok(())
}

/// The number that follows `key` on the last line that has it.
fn after(text: &str, key: &str) -> Result<f64> {
    let line = text
        .lines()
        .rev()
        .find_map(|l| l.split_once(key).map(|(_, rest)| rest))
        .ok_or_else(|| anyhow!("no {key:?} in the output"))?;
    first_number(line)
}

fn first_number(text: &str) -> Result<f64> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find(|t| !t.is_empty() && t.parse::<f64>().is_ok())
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| anyhow!("no number in {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_real_outputs() {
        let hb =
            "Running in process mode with 2 groups using 40 file descriptors each (== 80 tasks)\n\
                  Each sender will pass 200 messages of 100 bytes\nTime: 1.586\n";
        assert_eq!(parse(Family::Hackbench, hb).unwrap()["time"], 1.586);

        let tb = "   1     14789    35.49 MB/sec  execute 4 sec  latency 12.3 ms\n\
                  Throughput 35.4974 MB/sec  8 clients  8 procs  max_latency=48.506 ms\n";
        assert_eq!(parse(Family::Tbench, tb).unwrap()["throughput"], 35.4974);

        let pm = "# Running 'sched/messaging' benchmark:\n# 20 sender and receiver processes per group\n\
                  # 1 groups == 40 processes run\n\n     Total time: 0.023 [sec]\n";
        assert_eq!(parse(Family::PerfMessaging, pm).unwrap()["time"], 0.023);

        let pp = "# Executed 1000 pipe operations between two processes\n\n     Total time: 0.041 [sec]\n\n\
                  41.398000 usecs/op\n          24155 ops/sec\n";
        let m = parse(Family::PerfPipe, pp).unwrap();
        assert_eq!((m["time"], m["usecs_per_op"]), (0.041, 41.398));

        let sb = r#"{"copy_mbs":100.0,"scale_mbs":90.0,"add_mbs":110.0,"triad_mbs":120.0,"threads":2,"elements":1024,"runs":10,"llcs_used":2.0,"llc_max":1.0,"nodes_used":1.0,"node_max":2.0,"remote_pct":0.0,"moved_pct":12.5,"seconds":1.0}"#;
        let m = parse(Family::Stream, sb).unwrap();
        assert_eq!(
            (m["Copy"], m["Triad"], m["moved_pct"]),
            (100.0, 120.0, 12.5)
        );
        let yc = r#"{"ops":6380.6,"p50_us":243.0,"p99_us":4883.0,"p999_us":7275.0,"transactions":18988}"#;
        let m = parse(Family::Ycsb, yc).unwrap();
        assert_eq!((m["ops"], m["p99_us"]), (6380.6, 4883.0));

        let wb = r#"{"p50_us":12.5,"p90_us":30.0,"p99_us":80.1,"p999_us":150.0,"max_us":300.0,"rps":12000.0,"wakeups":60000}"#;
        let m = parse(Family::Wakeup, wb).unwrap();
        assert_eq!((m["p99_us"], m["rps"]), (80.1, 12000.0));

        // schbench prints a block per interval; the last one is the run's.
        let block = |p50, p99| {
            format!(
                "Wakeup Latencies percentiles (usec) runtime 3 (s) (398 total samples)\n\
                 \t  50.0th: {p50}         (71 samples)\n\t  90.0th: 4712       (161 samples)\n\
                 \t* 99.0th: {p99}       (35 samples)\n\t  99.9th: 9200       (3 samples)\n\
                 \t  min=2, max=9208\n\
                 Request Latencies percentiles (usec) runtime 3 (s) (398 total samples)\n\
                 \t  50.0th: 10128      (114 samples)\n\t* 99.0th: 33600      (36 samples)\n\
                 RPS percentiles (requests) runtime 3 (s) (4 total samples)\n\
                 \t* 50.0th: 98         (1 samples)\n"
            )
        };
        let sch = format!("{}{}average rps: 132.67\n", block(40, 900), block(25, 8592));
        let m = parse(Family::Schbench, &sch).unwrap();
        assert_eq!(
            (
                m["p50_us"],
                m["p90_us"],
                m["p99_us"],
                m["p999_us"],
                m["rps"]
            ),
            (25.0, 4712.0, 8592.0, 9200.0, 132.67)
        );
    }

    #[test]
    fn refuses_outputs_without_the_measurement() {
        assert!(parse(Family::Hackbench, "Running in process mode\n").is_err());
        assert!(parse(Family::Tbench, "Throughput nan MB/sec").is_err());
        assert!(parse(
            Family::Tbench,
            "Throughput 0 MB/sec  128 clients  128 procs"
        )
        .is_err());
        assert!(parse(Family::PerfPipe, "Total time: 1.0 [sec]\n").is_err());
        assert!(parse(Family::Wakeup, "not json").is_err());
        assert!(parse(Family::Schbench, "schbench usage:\n").is_err());
        assert!(parse(Family::Ycsb, "pgbench: error: connection refused").is_err());
    }

    fn matrix() -> Matrix {
        Matrix {
            families: vec![
                Family::Hackbench,
                Family::Tbench,
                Family::PerfPipe,
                Family::Wakeup,
            ],
            hackbench_groups: vec![1, 4],
            hackbench_loops: 100,
            hackbench_threads: vec![false, true],
            hackbench_pipe: vec![true],
            tbench_clients: vec![1, 8],
            tbench_secs: 3,
            perf_groups: vec![1],
            perf_loops: 10,
            perf_pipe_loops: 1000,
            wakeup_messengers: 1,
            wakeup_workers: vec![2],
            wakeup_secs: 1.0,
            ..Matrix::default()
        }
    }

    #[test]
    fn matrix_expands_into_points() {
        let pts = matrix().points("/usr/bin/scx_sisutil");
        assert_eq!(pts.len(), 4 + 2 + 1 + 1);
        assert_eq!(pts[0].section, "hackbench process pipe");
        assert_eq!(pts[0].label, "1-groups");
        assert_eq!(
            pts[0].argv,
            ["hackbench", "-g", "1", "-l", "100", "-P", "-p"]
        );
        assert_eq!(pts[2].section, "hackbench thread pipe");
        assert!(pts[2].argv.contains(&"-T".to_string()));
        assert_eq!(pts[5].argv[5], "8");
        assert_eq!(pts[5].metrics[0].better, Better::Higher);
        assert_eq!(pts[7].argv[..2], ["/usr/bin/scx_sisutil", "wakebench"]);
    }

    #[test]
    fn stream_and_ycsb_points() {
        let m = Matrix {
            families: vec![Family::Stream, Family::Ycsb],
            stream_threads: vec![4],
            stream_runs: vec![10, 100],
            stream_elements: 0,
            ycsb_workloads: vec![Workload::A, Workload::C],
            ycsb_clients: vec![1, 8],
            ycsb_secs: 5,
            ycsb_records: 1000,
            ..matrix()
        };
        let pts = m.points("scx_sisutil");
        assert_eq!(pts.len(), 2 + 4);
        assert_eq!(
            (pts[0].section.as_str(), pts[0].label.as_str()),
            ("STREAM, 10 runs", "4 threads")
        );
        assert_eq!(pts[1].section, "STREAM, 100 runs");
        // No size: streambench's own, STREAM's rule.
        assert!(!pts[0].argv.contains(&"--elements".to_string()));
        let with_size = Matrix {
            stream_elements: 4096,
            ..m.clone()
        }
        .points("x");
        assert!(with_size[0]
            .argv
            .ends_with(&["--elements".into(), "4096".into()]));
        assert_eq!(pts[2].section, "YCSB workload A");
        assert_eq!(pts[5].section, "YCSB workload C");
        assert_eq!(pts[3].argv[4..6], ["--clients", "8"]);
        assert_eq!(pts[2].metrics[0].name, "ops");
    }
}
