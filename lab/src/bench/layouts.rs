//! The review's own layouts for its two service workloads: STREAM's table,
//! a row per kernel, and ycsb's lines, an arm each with its variation; and
//! where STREAM's threads ran, which is what a scheduler changes there.

use super::results::Results;
use super::stat::{self, Better};
use super::table::{align, banner, cell, num};
use super::verdict::margin_of;
use super::workload::{STREAM_KERNELS, STREAM_PLACEMENT};

/// Per point, "Copy:   189113.11 +-20.1 (0.00 pct)   188490.27 ..." under
/// the arms' names.
pub fn stream_table(r: &Results, section: &str) -> String {
    let base = &r.method.baseline;
    let mut out = String::new();
    for p in r.section_points(section) {
        let mut rows = vec![std::iter::once("Test:".to_string())
            .chain(r.arms.iter().map(|a| a.name.clone()))
            .collect::<Vec<_>>()];
        for k in STREAM_KERNELS {
            let base_vals = p.values(base, k);
            let mut row = vec![format!("{k}:")];
            for a in &r.arms {
                let vals = p.values(&a.name, k);
                let failed = vals.is_empty() && p.failed(&a.name);
                row.push(if failed {
                    "failed".into()
                } else {
                    cell(
                        &vals,
                        &base_vals,
                        Better::Higher,
                        r.method.alpha,
                        &a.name == base,
                        margin_of(r, k, &a.name).as_ref(),
                    )
                });
            }
            rows.push(row);
        }
        out.push_str(&banner(&format!(
            "{section}, {}: best rate (MB/s), higher is better",
            p.point.label
        )));
        out.push_str(&align(&rows));
        out.push('\n');
    }
    out
}

/// Where STREAM's threads ran, per point and arm, means over iterations
/// of the means over every kernel run.
pub fn placement_table(r: &Results, section: &str) -> String {
    let mut rows = vec![[
        "point",
        "arm",
        "LLCs used",
        "max per LLC",
        "nodes used",
        "max per node",
        "off home node %",
        "moved CPU %",
    ]
    .map(String::from)
    .to_vec()];
    for p in r.section_points(section) {
        for a in &r.arms {
            let mut row = vec![p.point.label.clone(), a.name.clone()];
            for key in STREAM_PLACEMENT {
                let vals = p.values(&a.name, key);
                row.push(if vals.is_empty() {
                    "-".into()
                } else {
                    num(stat::mean(&vals))
                });
            }
            rows.push(row);
        }
    }
    format!(
        "{}{}",
        banner(&format!(
            "{section}: where the threads ran (home node: where a thread first touched its arrays)"
        )),
        align(&rows)
    )
}

/// Per point, "util:   303529.33 (var: 0.67)   (-0.06%)": the mean
/// throughput, its sample stddev in percent of the mean, and the change
/// against the baseline (positive = more operations).
pub fn ycsb_table(r: &Results, section: &str) -> String {
    let base = &r.method.baseline;
    let mut out = String::new();
    for p in r.section_points(section) {
        let base_mean = stat::mean(&p.values(base, "ops"));
        let mut rows = Vec::new();
        for a in &r.arms {
            let vals = p.values(&a.name, "ops");
            let name = format!("{}:", a.name);
            if vals.is_empty() {
                let what = if p.failed(&a.name) { "failed" } else { "-" };
                rows.push(vec![name, what.into()]);
                continue;
            }
            let m = stat::mean(&vals);
            let var = 100.0 * stat::stddev(&vals) / m.max(f64::MIN_POSITIVE);
            let mut row = vec![name, format!("{} (var: {var:.2})", num(m))];
            if &a.name != base {
                let star = if stat::significant(&vals, &p.values(base, "ops"), r.method.alpha) {
                    " *"
                } else {
                    ""
                };
                row.push(format!(
                    "({:.2}%){star}",
                    stat::change_pct(base_mean, m, Better::Higher)
                ));
            }
            rows.push(row);
        }
        out.push_str(&banner(&format!(
            "{section}, {}: operations per second (var: stddev in % of the mean)",
            p.point.label
        )));
        out.push_str(&align(&rows));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::fixture::services;
    use crate::bench::report::text;

    #[test]
    fn stream_has_a_row_per_kernel() {
        let r = services();
        let t = stream_table(&r, "STREAM, 10 runs");
        assert!(
            t.contains("STREAM, 10 runs, 2 threads: best rate (MB/s)"),
            "{t}"
        );
        let copy = t
            .lines()
            .find(|l| l.trim_start().starts_with("Copy:"))
            .unwrap();
        // eevdf 100, 101, 102 against util 110, 111, 112: +9.90 pct.
        assert!(copy.contains("101.00 +-1.000 (0.00 pct)"), "{copy}");
        assert!(copy.contains("(9.90 pct [+7.7, +12.1]) *"), "{copy}");
        assert!(t.contains("Triad:"));
    }

    #[test]
    fn placement_shows_every_arm() {
        let r = services();
        let t = placement_table(&r, "STREAM, 10 runs");
        let util = t.lines().find(|l| l.contains("util")).unwrap();
        assert!(util.contains("2.000") && util.contains("5.000"), "{util}");
        // Keys a sample does not carry show as "-".
        assert!(util.contains('-'), "{util}");
    }

    #[test]
    fn ycsb_in_the_reviews_lines_and_failures_named() {
        let r = services();
        let t = ycsb_table(&r, "YCSB workload A");
        assert!(t.contains("eevdf:   1000 (var: 1.00)"), "{t}");
        assert!(t.lines().any(|l| l.trim_start() == "util:   failed"), "{t}");
        let all = text(&r);
        assert!(
            all.contains("FAILED YCSB workload A 4 clients under util: the database server exited")
        );
        // The p99 table marks the failed arm too.
        assert!(all.contains("YCSB workload A: p99_us (us), lower is better"));
        assert_eq!(r.failures().len(), 3);
    }

    #[test]
    fn failed_samples_round_trip_and_older_files_still_load() {
        let r = services();
        let json = serde_json::to_string(&r).unwrap();
        let back: Results = serde_json::from_str(&json).unwrap();
        assert_eq!(back.failures().len(), 3);
        // A sample written before samples could fail has no "failed".
        let old = crate::bench::fixture::results();
        let mut v: serde_json::Value = serde_json::to_value(&old).unwrap();
        v["method"]["matrix"]
            .as_object_mut()
            .unwrap()
            .remove("stream_runs");
        let back: Results = serde_json::from_value(v).unwrap();
        assert!(back.failures().is_empty());
        assert!(!json.contains("\"failed\":null"));
    }
}
