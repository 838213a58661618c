//! A results file to test the reports, plots and study pages against.

use std::collections::BTreeMap;

use super::arms::Arm;
use super::results::{Env, Method, Order, PointResult, Results, Sample, FORMAT};
use super::workload::{Family, Matrix};
use sisutil_proto::stats::Metrics;

pub fn sample(it: u32, metric: &str, v: f64) -> Sample {
    Sample {
        iteration: it,
        values: BTreeMap::from([(metric.to_string(), v)]),
        wall_s: v,
        stats: None,
        failed: None,
        trace: None,
    }
}

pub fn results() -> Results {
    let matrix = Matrix {
        families: vec![Family::Hackbench],
        hackbench_groups: vec![1, 16],
        hackbench_loops: 100,
        hackbench_threads: vec![false],
        hackbench_pipe: vec![false],
        tbench_clients: vec![],
        tbench_secs: 1,
        perf_groups: vec![],
        perf_loops: 1,
        perf_pipe_loops: 1,
        wakeup_messengers: 1,
        wakeup_workers: vec![],
        wakeup_secs: 1.0,
        ..Matrix::default()
    };
    let points = matrix.points("scx_sisutil");
    let mut util_stats = Metrics {
        scans: 10,
        idle_found: 3,
        idle_missed: 1,
        limit: vec![5, 0, 0, 0, 5],
        examined: vec![6, 4, 0, 0, 0],
        ..Default::default()
    };
    util_stats.policy = "util".into();
    let mk = |arm_vals: [(&str, [f64; 3]); 2]| -> BTreeMap<String, Vec<Sample>> {
        arm_vals
            .iter()
            .map(|(arm, vs)| {
                let ss = vs
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let mut s = sample(i as u32, "time", *v);
                        if *arm == "util" {
                            s.stats = Some(util_stats.clone());
                        }
                        s
                    })
                    .collect();
                (arm.to_string(), ss)
            })
            .collect()
    };
    Results {
        format: FORMAT.into(),
        created: "2026-11-30 12:00:00 UTC".into(),
        env: Env {
            kernel: "7.3.4".into(),
            topology: "1 node x 1 LLC x 16 CPUs, SMT off".into(),
            cpus: 16,
            ..Default::default()
        },
        method: Method {
            iterations: 3,
            order: Order::Alternate,
            order_per_point: true,
            warmup: true,
            settle_s: 2.0,
            alpha: 0.05,
            baseline: "eevdf".into(),
            margin_pct: None,
            declared: Vec::new(),
            matrix,
        },
        arms: vec![Arm::parse("eevdf").unwrap(), Arm::parse("util").unwrap()],
        points: vec![
            PointResult {
                point: points[0].clone(),
                samples: mk([("eevdf", [4.64, 4.70, 4.61]), ("util", [4.70, 4.75, 4.72])]),
            },
            PointResult {
                point: points[1].clone(),
                samples: mk([("eevdf", [10.7, 10.5, 10.9]), ("util", [11.69, 11.5, 11.8])]),
            },
        ],
        incomplete: None,
        dropped: BTreeMap::new(),
        resumed: Vec::new(),
    }
}

/// A run of STREAM (10 runs, 2 threads) and ycsb workload A (4 clients)
/// under eevdf and util, whose util ycsb samples failed.
pub fn services() -> Results {
    let mut r = results();
    r.method.matrix = Matrix {
        families: vec![Family::Stream, Family::Ycsb],
        stream_threads: vec![2],
        stream_runs: vec![10],
        ycsb_workloads: vec![super::workload::Workload::A],
        ycsb_clients: vec![4],
        ycsb_secs: 2,
        ycsb_records: 1000,
        ..Matrix::default()
    };
    let points = r.method.matrix.points("scx_sisutil");
    let stream = |base: f64| -> Vec<Sample> {
        (0..3)
            .map(|i| {
                let mut s = sample(i, "Copy", base + f64::from(i));
                for (k, v) in [("Scale", 2.0), ("Add", 3.0), ("Triad", 4.0)] {
                    s.values.insert(k.into(), base * v);
                }
                for (k, v) in [("llcs_used", 2.0), ("llc_max", 1.0), ("remote_pct", 5.0)] {
                    s.values.insert(k.into(), v);
                }
                s
            })
            .collect()
    };
    let ops: Vec<Sample> = [1000.0, 1010.0, 990.0]
        .iter()
        .enumerate()
        .map(|(i, v)| sample(i as u32, "ops", *v))
        .collect();
    let failed = (0..3)
        .map(|i| Sample::failed(i, "the database server exited (signal: 9 (SIGKILL))".into()))
        .collect();
    r.points = vec![
        PointResult {
            point: points[0].clone(),
            samples: BTreeMap::from([
                ("eevdf".into(), stream(100.0)),
                ("util".into(), stream(110.0)),
            ]),
        },
        PointResult {
            point: points[1].clone(),
            samples: BTreeMap::from([("eevdf".into(), ops), ("util".into(), failed)]),
        },
    ];
    r
}
