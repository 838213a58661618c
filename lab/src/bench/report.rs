//! The report of an A/B run: the review-style text tables made from its
//! results file, and the comparison of two result files.

use std::fmt::Write as _;

use super::arms::Arm;
use super::layouts;
use super::order::{self, Order};
use super::results::{Results, Sample};
use super::stat::{self, Better};
use super::table::{align, banner, cell, change_with_ci, num};
use super::verdict;
use super::workload::{Family, Metric};
use sisutil_proto::stats::{Metrics, SCAN_WAITS};

/// One section's table for one metric, in the review's layout.
pub fn metric_table(r: &Results, section: &str, metric: &Metric) -> String {
    let base = &r.method.baseline;
    let pts = r.section_points(section);
    let mut rows = vec![std::iter::once("Test:".to_string())
        .chain(r.arms.iter().map(|a| a.name.clone()))
        .collect::<Vec<_>>()];
    for p in pts {
        let base_vals = p.values(base, &metric.name);
        let mut row = vec![format!("{}:", p.point.label)];
        for a in &r.arms {
            let vals = p.values(&a.name, &metric.name);
            if vals.is_empty() && p.failed(&a.name) {
                row.push("failed".into());
                continue;
            }
            row.push(cell(
                &vals,
                &base_vals,
                metric.better,
                r.method.alpha,
                &a.name == base,
                verdict::margin_of(r, &metric.name, &a.name).as_ref(),
            ));
        }
        rows.push(row);
    }
    let better = match metric.better {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
    };
    format!(
        "{}{}",
        banner(&format!(
            "{section}: {} ({}), {better}",
            metric.name, metric.unit
        )),
        align(&rows)
    )
}

/// Mean of `f` over the runs that carry the scheduler's counters.
pub fn mean_of(samples: &[Sample], f: impl Fn(&Metrics) -> f64) -> Option<f64> {
    let xs: Vec<f64> = samples
        .iter()
        .filter_map(|s| s.stats.as_ref())
        .map(&f)
        .collect();
    (!xs.is_empty()).then(|| stat::mean(&xs))
}

/// Mean of a histogram's index, weighted by its counts.
pub fn hist_mean(h: &[u64]) -> f64 {
    let n: u64 = h.iter().sum();
    if n == 0 {
        return 0.0;
    }
    h.iter()
        .enumerate()
        .map(|(i, c)| i as f64 * *c as f64)
        .sum::<f64>()
        / n as f64
}

/// The arms whose samples in @section carry the statistics record: this
/// scheduler's, and the kernel's where the observer counted it.
pub fn counted_arms<'a>(r: &'a Results, section: &str) -> Vec<&'a Arm> {
    let points = r.section_points(section);
    r.arms
        .iter()
        .filter(|a| a.has_stats())
        .filter(|a| {
            points.iter().any(|p| {
                p.samples
                    .get(&a.name)
                    .is_some_and(|ss| ss.iter().any(|s| s.stats.is_some()))
            })
        })
        .collect()
}

/// What the scheduler (or the kernel, observed) saw during a section's
/// runs, per point and counted arm.
pub fn scan_table(r: &Results, section: &str) -> Option<String> {
    let scx = counted_arms(r, section);
    if scx.is_empty() {
        return None;
    }
    let mut rows = vec![[
        "point",
        "arm",
        "wakeups",
        "scans",
        "found %",
        "depth 0 %",
        "mean limit",
        "mean examined",
        "scan ns",
        "select_cpu ns",
        "running ns",
    ]
    .map(String::from)
    .to_vec()];
    // BPF run time is only there when the scheduler ran with --bpf-stats.
    let timed = r.section_points(section).iter().any(|p| {
        p.samples
            .values()
            .flatten()
            .any(|s| s.stats.as_ref().is_some_and(|m| !m.ops.is_empty()))
    });
    for p in r.section_points(section) {
        for a in &scx {
            let Some(ss) = p.samples.get(&a.name) else {
                continue;
            };
            let f = |g: &dyn Fn(&Metrics) -> f64| mean_of(ss, g).map_or("-".into(), num);
            rows.push(vec![
                p.point.label.clone(),
                a.name.clone(),
                f(&|m| m.wakeups as f64),
                f(&|m| m.scans as f64),
                f(&|m| m.found_rate()),
                f(&|m| {
                    100.0 * m.limit.first().copied().unwrap_or(0) as f64 / m.scans.max(1) as f64
                }),
                f(&|m| hist_mean(&m.limit)),
                f(&|m| hist_mean(&m.examined)),
                f(&|m| m.scan_ns_mean),
                f(&select_ns),
                f(&running_ns),
            ]);
        }
    }
    let mut note = "";
    if !timed {
        rows.iter_mut().for_each(|r| {
            r.truncate(r.len() - 2);
        });
    } else if scx.iter().any(|a| a.is_observed()) {
        note = "(an observed kernel arm's ns are its observer's probes: select_task_rq_fair's entry and exit, sched_switch)\n";
    }
    Some(format!(
        "{}{}{note}",
        banner(&format!(
            "{section}: scan statistics (means over iterations)"
        )),
        align(&rows)
    ))
}

/// Whether the scheduler's (or observer's) own loop and socket kept time
/// during a section's runs: per point and counted arm, the worst
/// iteration's lateness and request time (a tail is not averaged), and
/// the sums of intervals skipped and scans that found a depth too old.
/// None where no run recorded it (results made before it was counted).
pub fn timeliness_table(r: &Results, section: &str) -> Option<String> {
    let arms = counted_arms(r, section);
    let mut rows = vec![[
        "point",
        "arm",
        "intervals",
        "late p99 ms (worst run)",
        "late max ms",
        "skipped",
        "requests",
        "request p99 ms (worst run)",
        "request max ms",
        "stale depths",
    ]
    .map(String::from)
    .to_vec()];
    let ms = |us: u64| format!("{:.1}", us as f64 / 1000.0);
    for p in r.section_points(section) {
        for a in &arms {
            let Some(ss) = p.samples.get(&a.name) else {
                continue;
            };
            let ms_: Vec<&Metrics> = ss
                .iter()
                .filter_map(|s| s.stats.as_ref())
                .filter(|m| m.loop_intervals > 0)
                .collect();
            if ms_.is_empty() {
                continue;
            }
            let worst = |f: fn(&Metrics) -> u64| ms_.iter().map(|m| f(m)).max().unwrap_or(0);
            let sum = |f: fn(&Metrics) -> u64| ms_.iter().map(|m| f(m)).sum::<u64>();
            rows.push(vec![
                p.point.label.clone(),
                a.name.clone(),
                sum(|m| m.loop_intervals).to_string(),
                ms(worst(|m| m.loop_late_p99_us)),
                ms(worst(|m| m.loop_late_max_us)),
                sum(|m| m.loop_skipped).to_string(),
                sum(|m| m.requests).to_string(),
                ms(worst(|m| m.request_p99_us)),
                ms(worst(|m| m.request_max_us)),
                sum(|m| m.stale_depths).to_string(),
            ]);
        }
    }
    (rows.len() > 1).then(|| {
        format!(
            "{}{}",
            banner(&format!(
                "{section}: the loop's timeliness (sums and worst runs over iterations)"
            )),
            align(&rows)
        )
    })
}

/// The waits of @kind over @samples: the iterations' histograms summed
/// (BPF's wait slots), whose percentiles a mean of percentiles would not
/// be.
pub fn summed_waits(samples: &[Sample], kind: &str) -> Vec<u64> {
    let mut hist = vec![0u64; sisutil_proto::waits::SLOTS];
    for m in samples.iter().filter_map(|s| s.stats.as_ref()) {
        if let Some(w) = m.waits.get(kind) {
            for (h, n) in hist.iter_mut().zip(&w.hist) {
                *h += n;
            }
        }
    }
    hist
}

/// The wait from a wakeup's placement to its first run, per point and scx
/// arm, by what the placement found (`summed_waits`).
pub fn waits_table(r: &Results, section: &str) -> Option<String> {
    use sisutil_proto::waits;
    let scx = counted_arms(r, section);
    let mut rows = vec![vec!["point".to_string(), "arm".to_string()]];
    for k in SCAN_WAITS {
        rows[0].extend([format!("{k} n"), format!("{k} p50"), format!("{k} p99")]);
    }
    let mut any = false;
    for p in r.section_points(section) {
        for a in &scx {
            let Some(ss) = p.samples.get(&a.name) else {
                continue;
            };
            let mut row = vec![p.point.label.clone(), a.name.clone()];
            for k in SCAN_WAITS {
                let hist = summed_waits(ss, k);
                let n: u64 = hist.iter().sum();
                any |= n > 0;
                let q =
                    |x: f64| waits::quantile(&hist, x).map_or("-".into(), |ns| num(ns / 1000.0));
                row.extend([n.to_string(), q(0.5), q(0.99)]);
            }
            rows.push(row);
        }
    }
    any.then(|| {
        format!(
            "{}{}",
            banner(&format!(
                "{section}: wait from placement to first run (us), by what the scan found (iterations summed)"
            )),
            align(&rows)
        )
    })
}

/// How far the scheduler moved work during a section's runs, per point
/// and scx arm: wakeups placed in another LLC or node than the task's
/// previous CPU, and tasks pulled by idle or balancing CPUs, by span.
/// Only for machines with more than one LLC, where there is a distance.
pub fn span_table(r: &Results, section: &str) -> Option<String> {
    let scx: Vec<&Arm> = r.arms.iter().filter(|a| a.is_scx()).collect();
    let moved_any = r.section_points(section).iter().any(|p| {
        p.samples.values().flatten().any(|s| {
            s.stats.as_ref().is_some_and(|m| {
                m.wake_moved_llc + m.pull_node + m.pull_package + m.pull_remote > 0
            })
        })
    });
    if scx.is_empty() || !moved_any {
        return None;
    }
    let mut rows = vec![[
        "point",
        "arm",
        "moved LLC %",
        "moved node %",
        "pull LLC",
        "pull node",
        "pull package",
        "pull remote",
        "of them running",
    ]
    .map(String::from)
    .to_vec()];
    for p in r.section_points(section) {
        for a in &scx {
            let Some(ss) = p.samples.get(&a.name) else {
                continue;
            };
            let f = |g: &dyn Fn(&Metrics) -> f64| mean_of(ss, g).map_or("-".into(), num);
            let pct = |n: u64, m: &Metrics| 100.0 * n as f64 / m.wakeups.max(1) as f64;
            rows.push(vec![
                p.point.label.clone(),
                a.name.clone(),
                f(&|m| pct(m.wake_moved_llc, m)),
                f(&|m| pct(m.wake_moved_node, m)),
                f(&|m| m.pull_llc as f64),
                f(&|m| m.pull_node as f64),
                f(&|m| m.pull_package as f64),
                f(&|m| m.pull_remote as f64),
                f(&|m| m.pull_running as f64),
            ]);
        }
    }
    Some(format!(
        "{}{}",
        banner(&format!(
            "{section}: work moved by distance (means over iterations)"
        )),
        align(&rows)
    ))
}

/// Adds `b`'s histogram counts to `a`'s, slot by slot.
fn add_hist(a: &mut Vec<u64>, b: &[u64]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
}

/// The scan counters of several runs of one arm, summed: what the review's
/// tables count.
pub fn summed<'a>(mut runs: impl Iterator<Item = &'a Metrics>) -> Option<Metrics> {
    let mut t = runs.next()?.clone();
    for m in runs {
        t.scans += m.scans;
        t.idle_found += m.idle_found;
        t.idle_missed += m.idle_missed;
        t.no_idle += m.no_idle;
        t.no_idle_found += m.no_idle_found;
        t.shadow_both += m.shadow_both;
        t.shadow_active_only += m.shadow_active_only;
        t.shadow_shadow_only += m.shadow_shadow_only;
        t.shadow_neither += m.shadow_neither;
        add_hist(&mut t.examined, &m.examined);
        add_hist(&mut t.limit, &m.limit);
        add_hist(&mut t.shadow_limit, &m.shadow_limit);
        for (name, r) in &m.rules {
            let s = t.rules.entry(name.clone()).or_default();
            s.searched_mean = (s.searched_mean * s.judged as f64
                + r.searched_mean * r.judged as f64)
                / (s.judged + r.judged).max(1) as f64;
            s.judged += r.judged;
            s.would_find += r.would_find;
            s.would_miss += r.would_miss;
            s.walk_ns += r.walk_ns;
            add_hist(&mut s.limit_hist, &r.limit_hist);
            add_hist(&mut s.searched_hist, &r.searched_hist);
        }
        for (key, p) in &m.pairs {
            let s = t.pairs.entry(key.clone()).or_default();
            s.both += p.both;
            s.first_only += p.first_only;
            s.second_only += p.second_only;
            s.neither += p.neither;
        }
    }
    for r in t.rules.values_mut() {
        r.would_find_pct =
            100.0 * sisutil_proto::stats::ratio(r.would_find, r.would_find + r.would_miss);
        r.limit_mean = hist_mean(&r.limit_hist);
    }
    Some(t.with_depths())
}

/// BPF time per wakeup placed: the scheduler's select_cpu, or what the
/// observer's two probes add to the kernel's select_task_rq_fair.
fn select_ns(m: &Metrics) -> f64 {
    let per = |op: &str| m.ops.get(op).map_or(0.0, |o| o.ns_per_call);
    per("select_cpu") + per("select_task_rq_fair_entry") + per("select_task_rq_fair_exit")
}

/// BPF time per task switched in: the scheduler's running, or the
/// observer's sched_switch probe.
fn running_ns(m: &Metrics) -> f64 {
    let per = |op: &str| m.ops.get(op).map_or(0.0, |o| o.ns_per_call);
    per("running") + per("sched_switch")
}

/// The review's explanatory tables (found-rate, the "able to find" matrix
/// against the (first) shadow rule, "CPU Searched | Count"), summed over
/// the iterations, for the arms that ran with a shadow rule
/// (`--scheduler-args "--shadow prop"`): the runs made to explain.
pub fn shadow_tables(r: &Results, section: &str) -> Option<String> {
    shadow_tables_of(r, section, &[])
}

/// The same for the points labelled @labels only (all when empty).
pub fn shadow_tables_of(r: &Results, section: &str, labels: &[&str]) -> Option<String> {
    let mut out = String::new();
    for p in r.section_points(section) {
        if !labels.is_empty() && !labels.contains(&p.point.label.as_str()) {
            continue;
        }
        for (arm, samples) in &p.samples {
            let Some(m) = summed(samples.iter().filter_map(|s| s.stats.as_ref())) else {
                continue;
            };
            if m.shadow.is_empty() {
                continue;
            }
            let _ = writeln!(
                out,
                "{} {}, arm {arm} (shadow {}), {} scans:\n{}",
                section,
                p.point.label,
                m.shadow,
                m.scans,
                m.review_tables()
            );
        }
    }
    (!out.is_empty()).then(|| {
        format!(
            "{}{out}",
            banner(&format!(
                "{section}: the review's tables (sums over iterations)"
            ))
        )
    })
}

/// How the run was made and how its tables are to be read: the order the
/// arms took, what the marks mean, and the equivalence margins.
pub fn method_line(r: &Results) -> String {
    let m = &r.method;
    let order = match m.order {
        Order::Alternate => "in alternating order",
        Order::Balanced => "in a balanced (Williams) order",
    };
    let mut s = format!(
        "mean +- sample stddev of {} iteration(s); arms interleaved in every iteration of every point, {order} ({}){}; \
         pct is the change vs {} with positive = better (lower times and latencies, higher throughputs), \
         [lo, hi] its {:.0}% confidence interval (Welch); * = significant by Welch's t-test at p < {}",
        m.iterations,
        order::balance(m.order, r.arms.len(), m.iterations, m.order_per_point),
        if m.warmup {
            ", a warm-up run discarded after every scheduler load or unload"
        } else {
            ""
        },
        m.baseline,
        verdict::LEVEL * 100.0,
        m.alpha
    );
    let mut margins: Vec<String> = Vec::new();
    for name in r
        .points
        .iter()
        .filter_map(|p| p.point.metrics.first())
        .map(|x| &x.name)
    {
        if margins.iter().any(|x| x.starts_with(&format!("{name} "))) {
            continue;
        }
        if let Some(g) = verdict::margin_of(r, name, "") {
            margins.push(format!("{name} ±{:.1}%", g.pct));
        }
    }
    match (m.margin_pct, margins.is_empty()) {
        (Some(pct), _) => {
            let _ = write!(s, "; = = level: inside ±{pct:.1}% (stated before the run) by two one-sided tests at p < {}", m.alpha);
        }
        (None, false) => {
            let (control, twin) = verdict::controls(r).into_iter().next().unwrap_or_default();
            let _ = write!(
                s,
                "; = = level: inside the margin by two one-sided tests at p < {}, the margin being the largest difference between {control} and {twin} (one arm run twice) over the run's points: {}",
                m.alpha,
                margins.join(", ")
            );
        }
        (None, true) => s.push_str(
            "; no margin was stated and no control arm ran, so no change is called level",
        ),
    }
    match r.env.build() {
        Some(b) => {
            let _ = write!(s, "; build {b}");
        }
        None => s.push_str("; build not recorded"),
    }
    s
}

/// The whole report.
pub fn text(r: &Results) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scx_sisutil A/B: kernel {}, {} ({} CPUs), host {}",
        r.env.kernel, r.env.topology, r.env.cpus, r.env.hostname
    );
    let _ = writeln!(out, "method: {}", method_line(r));
    if let Some(why) = &r.incomplete {
        let _ = writeln!(out, "INCOMPLETE: {why}");
    }
    for (arm, why) in &r.dropped {
        let _ = writeln!(out, "DROPPED {arm} for the rest of the run: {why}");
    }
    for when in &r.resumed {
        let _ = writeln!(out, "RESUMED after its machine died: {when} kept");
    }
    for (section, label, arm, why) in r.failures() {
        let _ = writeln!(out, "FAILED {section} {label} under {arm}: {why}");
    }
    for section in r.sections() {
        let Some(first) = r.section_points(&section).first().map(|p| p.point.clone()) else {
            continue;
        };
        match first.family {
            Family::Stream => {
                let _ = writeln!(out, "\n{}", layouts::stream_table(r, &section));
                let _ = writeln!(out, "{}", layouts::placement_table(r, &section));
            }
            Family::Ycsb => {
                let _ = writeln!(out, "\n{}", layouts::ycsb_table(r, &section));
                for m in first.metrics.iter().filter(|m| m.name != "ops") {
                    let _ = writeln!(out, "{}", metric_table(r, &section, m));
                }
            }
            _ => {
                for m in &first.metrics {
                    let _ = writeln!(out, "\n{}", metric_table(r, &section, m));
                }
            }
        }
        if let Some(t) = scan_table(r, &section) {
            let _ = writeln!(out, "\n{t}");
        }
        if let Some(t) = waits_table(r, &section) {
            let _ = writeln!(out, "\n{t}");
        }
        if let Some(t) = timeliness_table(r, &section) {
            let _ = writeln!(out, "\n{t}");
        }
        if let Some(t) = span_table(r, &section) {
            let _ = writeln!(out, "\n{t}");
        }
        if let Some(t) = shadow_tables(r, &section) {
            let _ = writeln!(out, "\n{t}");
        }
    }
    if let Some(t) = traces_table(r) {
        let _ = writeln!(out, "\n{t}");
    }
    out
}

/// The traces a run kept (`+traceN` arms): per point and arm, what the
/// last run put on record and where its rows and its report are.
pub fn traces_table(r: &Results) -> Option<String> {
    let traces = r.traces();
    if traces.is_empty() {
        return None;
    }
    let mut rows = vec![[
        "point", "arm", "one in", "rows", "dropped", "unread", "folder",
    ]
    .map(String::from)
    .to_vec()];
    for (p, arm, t) in traces {
        rows.push(vec![
            format!("{} {}", p.point.section, p.point.label),
            arm.to_string(),
            t.every.to_string(),
            t.records.to_string(),
            t.dropped.to_string(),
            t.unread.to_string(),
            match &t.ended {
                Some(why) => format!("{} (ended early: {why})", t.dir),
                None => t.dir.clone(),
            },
        ]);
    }
    Some(format!(
        "{}{}",
        banner("Traces kept: each point's last run under each tracing arm (wakeups.csv, and trace-report's report.txt, waits.svg, trace.pftrace)"),
        align(&rows)
    ))
}

/// Two result files side by side: for every point and arm both have, the
/// change from A to B (positive = B better) and its significance.
pub fn compare(a: &Results, b: &Results, alpha: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "A: {} | {} | {}",
        a.created, a.env.kernel, a.env.topology
    );
    let _ = writeln!(
        out,
        "B: {} | {} | {}",
        b.created, b.env.kernel, b.env.topology
    );
    let _ = writeln!(
        out,
        "pct: change from A to B, positive = B better, [lo, hi] its 95% confidence interval; * = Welch's t-test p < {alpha}"
    );
    if a.env.topology != b.env.topology || a.env.kernel != b.env.kernel {
        let _ = writeln!(out, "note: the two runs differ in kernel or topology");
    }
    let arms: Vec<&Arm> = a
        .arms
        .iter()
        .filter(|x| b.arms.iter().any(|y| y.name == x.name))
        .collect();
    for section in a.sections() {
        for pa in a.section_points(&section) {
            let Some(pb) = b
                .points
                .iter()
                .find(|p| p.point.section == section && p.point.label == pa.point.label)
            else {
                continue;
            };
            let metric = &pa.point.metrics[0];
            let mut rows = vec![vec![
                format!("{section} {}:", pa.point.label),
                "A".into(),
                "B".into(),
                "pct".into(),
            ]];
            for arm in &arms {
                let (va, vb) = (
                    pa.values(&arm.name, &metric.name),
                    pb.values(&arm.name, &metric.name),
                );
                if va.is_empty() || vb.is_empty() {
                    continue;
                }
                rows.push(vec![
                    arm.name.clone(),
                    format!("{} +-{}", num(stat::mean(&va)), num(stat::stddev(&va))),
                    format!("{} +-{}", num(stat::mean(&vb)), num(stat::stddev(&vb))),
                    change_with_ci(&vb, &va, metric.better, alpha, None),
                ]);
            }
            if rows.len() > 1 {
                let _ = write!(
                    out,
                    "\n{} ({}):\n{}",
                    metric.name,
                    metric.unit,
                    align(&rows)
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::fixture::results;

    #[test]
    fn a_kept_trace_is_the_last_runs_and_the_report_says_where() {
        use sisutil_proto::control::TraceState;
        let mut r = results();
        assert!(traces_table(&r).is_none());
        let util = r.points[1].samples.get_mut("util").unwrap();
        for (s, records) in util.iter_mut().zip([300, 200, 100]) {
            s.trace = Some(TraceState {
                dir: "traces/hackbench-16-groups/util-trace8".into(),
                every: 8,
                records,
                dropped: 2,
                ..Default::default()
            });
        }
        let traces = r.traces();
        assert_eq!(traces.len(), 1);
        assert_eq!((traces[0].1, traces[0].2.records), ("util", 100));
        let text = text(&r);
        let row = text
            .lines()
            .find(|l| l.contains("traces/hackbench-16-groups/util-trace8"))
            .unwrap_or_else(|| panic!("{text}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert!(
            cells.windows(4).any(|w| w == ["8", "100", "2", "0"]),
            "{row}"
        );
    }

    #[test]
    fn the_report_names_dropped_arms() {
        let mut r = results();
        assert!(!text(&r).contains("DROPPED"));
        r.dropped
            .insert("peer".into(), "peer is no longer loaded".into());
        assert!(text(&r).contains("DROPPED peer for the rest of the run: peer is no longer loaded"));
        let json = serde_json::to_string(&r).unwrap();
        let back: Results = serde_json::from_str(&json).unwrap();
        assert_eq!(back.dropped, r.dropped);
    }

    #[test]
    fn review_style_table() {
        let r = results();
        let t = metric_table(
            &r,
            "hackbench process socket",
            &r.points[0].point.metrics[0],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].contains("hackbench process socket: time (s), lower is better"));
        assert!(lines[3].trim_start().starts_with("Test:"));
        assert!(lines[3].contains("eevdf") && lines[3].contains("util"));
        assert!(lines[4].contains(" 1-groups:"));
        assert!(lines[4].contains("(0.00 pct)"));
        // 16 groups: 10.70 -> 11.66 s is 9 % worse, and significant.
        assert!(lines[5].starts_with("16-groups:"));
        assert!(
            lines[5].contains("11.66 +-0.152 (-9.00 pct [-12.9, -5.1]) *"),
            "{}",
            lines[5]
        );
        assert!(!lines[4].contains('*'), "1 group: not significant");
    }

    #[test]
    fn scan_statistics_table() {
        let r = results();
        let t = scan_table(&r, "hackbench process socket").unwrap();
        let row = t
            .lines()
            .find(|l| l.contains("16-groups") && l.contains("util"))
            .unwrap();
        // found 3 of 4 = 75 %, depth 0 in 5 of 10 scans, mean limit 2,
        // mean examined 0.4.
        assert!(row.contains("75.00"), "{row}");
        assert!(row.contains("50.00"), "{row}");
        assert!(row.contains("2.000") && row.contains("0.400"), "{row}");
    }

    #[test]
    fn span_table_only_where_work_moved() {
        let mut r = results();
        assert!(span_table(&r, "hackbench process socket").is_none());
        for p in &mut r.points {
            for s in p.samples.get_mut("util").unwrap() {
                let m = s.stats.as_mut().unwrap();
                m.wakeups = 200;
                m.wake_moved_llc = 50;
                m.wake_moved_node = 10;
                m.pull_llc = 7;
                m.pull_remote = 3;
            }
        }
        let t = span_table(&r, "hackbench process socket").unwrap();
        let row = t
            .lines()
            .find(|l| l.contains("16-groups") && l.contains("util"))
            .unwrap();
        // 50 and 10 of 200 wakeups: 25 % and 5 %.
        assert!(row.contains("25.00") && row.contains("5.000"), "{row}");
        assert!(row.contains("7.000") && row.contains("3.000"), "{row}");
        assert!(!t.contains("eevdf"), "{t}");
    }

    #[test]
    fn review_tables_only_for_shadow_runs_and_summed() {
        let mut r = results();
        assert!(shadow_tables(&r, "hackbench process socket").is_none());
        for p in &mut r.points {
            for s in p.samples.get_mut("util").unwrap() {
                let m = s.stats.as_mut().unwrap();
                m.shadow = "prop".into();
                m.shadow_both = 2;
                m.shadow_shadow_only = 1;
                m.shadow_limit = vec![0, 0, 0, 0, 10];
            }
        }
        let t = shadow_tables(&r, "hackbench process socket").unwrap();
        let block = t.split("16-groups").nth(1).unwrap();
        // Three iterations: 3 x (found 3, missed 1, both 2, prop only 1,
        // examined 6 at depth 0, prop's limit 10 at >= 4).
        let row = |a: &str, b: &str, n: &str| {
            block.lines().any(|l| {
                let c: Vec<&str> = l
                    .split('|')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .collect();
                c == [a, b, n] || c == ["1", a, b, n]
            })
        };
        assert!(row("1", "1", "9"), "{block}");
        assert!(row("1", "0", "3"), "{block}");
        assert!(row("1", "1", "6"), "matrix: both found, {block}");
        assert!(row("0", "1", "3"), "matrix: prop only, {block}");
        assert!(block.contains("30 scans"), "{block}");
        assert!(
            block.lines().any(|l| l.contains(">=4") && l.contains("30")),
            "{block}"
        );
    }

    #[test]
    fn several_shadow_rules_are_summed_rule_by_rule() {
        use sisutil_proto::stats::{PairMetrics, RuleMetrics};
        let mut r = results();
        for p in &mut r.points {
            for s in p.samples.get_mut("util").unwrap() {
                let m = s.stats.as_mut().unwrap();
                m.shadow = "prop,full".into();
                let rule = |would_find, would_miss, limit_hist: Vec<u64>| RuleMetrics {
                    judged: 10,
                    would_find,
                    would_miss,
                    searched_mean: 2.0,
                    limit_hist,
                    ..Default::default()
                };
                m.rules
                    .insert("prop".into(), rule(1, 3, vec![0, 0, 0, 0, 10]));
                m.rules
                    .insert("full".into(), rule(4, 0, vec![0, 0, 0, 0, 10]));
                let pair = PairMetrics {
                    both: 1,
                    second_only: 3,
                    ..Default::default()
                };
                m.pairs.insert("prop/full".into(), pair);
            }
        }
        let point = &r.points[0];
        let m = summed(
            point.samples["util"]
                .iter()
                .filter_map(|s| s.stats.as_ref()),
        )
        .unwrap();
        let prop = &m.rules["prop"];
        assert_eq!((prop.judged, prop.would_find, prop.would_miss), (30, 3, 9));
        assert_eq!(
            (prop.would_find_pct, prop.limit_mean, prop.searched_mean),
            (25.0, 4.0, 2.0)
        );
        assert_eq!(m.rules["full"].would_find_pct, 100.0);
        assert_eq!(m.pairs["prop/full"].second_only, 9);
        let t = shadow_tables(&r, "hackbench process socket").unwrap();
        assert!(
            t.contains("Shadow rule") && t.contains("full Limit Count"),
            "{t}"
        );
    }

    #[test]
    fn file_round_trip_and_format_check() {
        let r = results();
        let dir = std::env::temp_dir().join(format!("sisu-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.json");
        r.save(&path).unwrap();
        let back = Results::load(&path).unwrap();
        assert_eq!(back.points, r.points);
        assert_eq!(back.arms, r.arms);
        let mut wrong = r.clone();
        wrong.format = "other".into();
        wrong.save(&path).unwrap();
        assert!(Results::load(&path).is_err());
        std::fs::write(&path, "{}").unwrap();
        assert!(Results::load(&path).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn compare_two_runs() {
        let a = results();
        let mut b = results();
        for s in b.points[1].samples.get_mut("util").unwrap() {
            s.values.insert("time".into(), s.values["time"] - 1.0);
        }
        let t = compare(&a, &b, 0.05);
        let row = t
            .lines()
            .skip_while(|l| !l.contains("16-groups"))
            .find(|l| l.trim_start().starts_with("util"))
            .unwrap();
        assert!(row.contains("+8.6% [+5.6, +11.5] *"), "{row}");
        assert!(!t.contains("differ in kernel"));
    }

    #[test]
    fn report_has_every_section() {
        let t = text(&results());
        assert!(t.contains("method: mean +- sample stddev of 3 iteration(s)"));
        assert!(t.contains("Welch"));
        assert!(t.contains("scan statistics"));
    }
}
