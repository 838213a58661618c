//! The benchmarks: which points a matrix has, the command each point runs,
//! and how its output turns into measurements.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};

use super::stat::Better;

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
    /// message threads waking worker threads (scx_sisutil wakebench)
    Wakeup,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Hackbench => "hackbench",
            Family::Tbench => "tbench",
            Family::PerfMessaging => "perf-messaging",
            Family::PerfPipe => "perf-pipe",
            Family::Wakeup => "wakeup",
        }
    }

    /// The program the family needs.
    pub fn program(self) -> &'static str {
        match self {
            Family::Hackbench => "hackbench",
            Family::Tbench => "tbench",
            Family::PerfMessaging | Family::PerfPipe => "perf",
            Family::Wakeup => "scx_sisutil",
        }
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
            Family::Wakeup => vec![
                metric("p99_us", "us", Better::Lower),
                metric("p50_us", "us", Better::Lower),
                metric("p90_us", "us", Better::Lower),
                metric("p999_us", "us", Better::Lower),
                metric("rps", "req/s", Better::Higher),
            ],
        }
    }
}

/// One benchmark configuration of the matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub family: Family,
    /// The section the point belongs to, e.g. "hackbench process pipe".
    pub section: String,
    /// The row label, as the seed writes it: "4-groups", "8 clients".
    pub label: String,
    /// The varying parameter (groups, clients, workers), for plots.
    pub param: u64,
    pub argv: Vec<String>,
    pub metrics: Vec<Metric>,
}

/// The matrix to run, per family.
#[derive(Clone, Debug, Serialize, Deserialize)]
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

/// The measurements in a benchmark's output.
pub fn parse(family: Family, stdout: &str) -> Result<BTreeMap<String, f64>> {
    let mut m = BTreeMap::new();
    match family {
        Family::Hackbench => {
            m.insert("time".into(), after(stdout, "Time:")?);
        }
        Family::Tbench => {
            m.insert("throughput".into(), after(stdout, "Throughput")?);
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
            let line = stdout
                .lines()
                .rev()
                .find(|l| l.starts_with('{'))
                .ok_or_else(|| anyhow!("no JSON report in wakebench's output"))?;
            let r: crate::wakebench::Report = serde_json::from_str(line)?;
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
    }
    if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_finite() || **v < 0.0) {
        bail!("{} reported {k} = {v}", family.name());
    }
    Ok(m)
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

        let wb = r#"{"p50_us":12.5,"p90_us":30.0,"p99_us":80.1,"p999_us":150.0,"max_us":300.0,"rps":12000.0,"wakeups":60000}"#;
        let m = parse(Family::Wakeup, wb).unwrap();
        assert_eq!((m["p99_us"], m["rps"]), (80.1, 12000.0));
    }

    #[test]
    fn refuses_outputs_without_the_measurement() {
        assert!(parse(Family::Hackbench, "Running in process mode\n").is_err());
        assert!(parse(Family::Tbench, "Throughput nan MB/sec").is_err());
        assert!(parse(Family::PerfPipe, "Total time: 1.0 [sec]\n").is_err());
        assert!(parse(Family::Wakeup, "not json").is_err());
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
}
