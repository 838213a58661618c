//! The study's summary: every shape's runs, as scripts/study.sh lays them
//! out (`DIR/<shape>/<run>/results.json`: A/B runs with every arm, and a
//! run of util shadowed by prop), on one Markdown page. Per point it sets the
//! benchmark result beside what the review explained it with (how often a
//! wakeup found an idle CPU, how deep the scans went, what they cost),
//! adds the review's own tables from the shadow run, and draws the
//! found-rate, the depth and the idle placements per shape.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::plot::Chart;
use super::report;
use super::results::{PointResult, Results};
use super::search::Search;
use super::stat;
use super::table;
use super::verdict;

/// One shape's runs.
struct Shape {
    name: String,
    /// The A/B runs, in the order of their folders' names.
    ab: Vec<Results>,
    /// The runs made with a shadow rule, for the review's tables.
    shadow: Vec<Results>,
}

/// The results files one level under `dir`, by folder name.
fn runs_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("results.json"))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// The shapes under `dir`, in the order the study runs them when known.
fn shapes(dir: &Path) -> Result<Vec<Shape>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| !runs_in(&e.path()).is_empty())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    let rank = |n: &str| {
        ["1x16", "2x8", "1x8x2"]
            .iter()
            .position(|s| *s == n)
            .unwrap_or(usize::MAX)
    };
    names.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.cmp(b)));
    if names.is_empty() {
        bail!(
            "{} holds no study runs (expected <shape>/<run>/results.json, as scripts/study.sh writes)",
            dir.display()
        );
    }
    let mut out = Vec::new();
    for name in names {
        let (mut ab, mut shadow) = (Vec::new(), Vec::new());
        for file in runs_in(&dir.join(&name)) {
            let r = Results::load(&file)?;
            if r.env.scheduler_args.iter().any(|a| a == "--shadow") {
                shadow.push(r);
            } else {
                ab.push(r);
            }
        }
        out.push(Shape { name, ab, shadow });
    }
    Ok(out)
}

fn fixed(v: Option<f64>) -> String {
    match v {
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
        None => "-".into(),
    }
}

/// A Markdown table.
fn table(head: &[String], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|", head.join(" | "));
    out.push_str(&"---|".repeat(head.len()));
    out.push('\n');
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out
}

/// One section of an A/B run: per point and arm, the result against the
/// baseline and the search figures.
fn section_table(r: &Results, section: &str) -> String {
    let pts = r.section_points(section);
    let Some(metric) = pts.first().and_then(|p| p.point.metrics.first()) else {
        return String::new();
    };
    let base = &r.method.baseline;
    let mut head = vec![
        "point".to_string(),
        "arm".to_string(),
        format!("{} ({})", metric.name, metric.unit),
        format!("vs {base}"),
    ];
    head.extend(Search::ALL.iter().map(|s| s.head().to_string()));
    let mut rows = Vec::new();
    for p in pts {
        let base_vals = p.values(base, &metric.name);
        for a in &r.arms {
            let vals = p.values(&a.name, &metric.name);
            if vals.is_empty() {
                continue;
            }
            let vs = if &a.name == base {
                "".to_string()
            } else {
                table::change_with_ci(
                    &vals,
                    &base_vals,
                    metric.better,
                    r.method.alpha,
                    verdict::margin_of(r, &metric.name, &a.name).as_ref(),
                )
            };
            let mut row = vec![
                p.point.label.clone(),
                a.name.clone(),
                format!(
                    "{} ±{}",
                    table::num(stat::mean(&vals)),
                    table::num(stat::stddev(&vals))
                ),
                vs,
            ];
            let samples = p.samples.get(&a.name).map(Vec::as_slice).unwrap_or(&[]);
            row.extend(Search::ALL.iter().map(|s| fixed(s.mean(samples))));
            rows.push(row);
        }
    }
    table(&head, &rows)
}

/// "hackbench 4-groups": a point's name across sections.
fn point_name(section: &str, label: &str) -> String {
    format!(
        "{} {label}",
        section.split_whitespace().next().unwrap_or(section)
    )
}

/// One search figure at every point of a shape's A/B run, per scx arm.
fn search_chart(s: &Shape, what: Search, title: &str, y_label: &str) -> Option<Chart> {
    let first = s.ab.first()?;
    let arms: Vec<&str> = first
        .arms
        .iter()
        .filter(|a| a.has_stats())
        .map(|a| a.name.as_str())
        .collect();
    let pts: Vec<_> = s.ab.iter().flat_map(|r| &r.points).collect();
    let values: Vec<Vec<(f64, f64)>> = pts
        .iter()
        .map(|p| {
            arms.iter()
                .map(|a| {
                    let samples = p.samples.get(*a).map(Vec::as_slice).unwrap_or(&[]);
                    (what.mean(samples).unwrap_or(f64::NAN), 0.0)
                })
                .collect()
        })
        .collect();
    if values.iter().flatten().all(|(v, _)| v.is_nan()) {
        return None;
    }
    Some(Chart {
        title: format!("{}: {title}", s.name),
        subtitle: format!("{}; means over iterations", first.env.topology),
        y_label: y_label.into(),
        groups: pts
            .iter()
            .map(|p| point_name(&p.point.section, &p.point.label))
            .collect(),
        series: arms.iter().map(|a| a.to_string()).collect(),
        values,
    })
}

fn shape_section(s: &Shape, plots: &[PathBuf], dir: &Path) -> String {
    let topology =
        s.ab.iter()
            .chain(&s.shadow)
            .next()
            .map_or("", |r| r.env.topology.as_str());
    let mut out = format!("## {}: {topology}\n\n", s.name);
    for p in plots {
        let rel = p.strip_prefix(dir).unwrap_or(p);
        let _ = writeln!(out, "![{}]({})\n", rel.display(), rel.display());
    }
    for r in &s.ab {
        let _ = writeln!(
            out,
            "Kernel {}, {} CPUs. {}.\n",
            r.env.kernel,
            r.env.cpus,
            super::report::method_line(r)
        );
        if let Some(why) = &r.incomplete {
            let _ = writeln!(out, "**Incomplete run:** {why}\n");
        }
        for section in r.sections() {
            let _ = writeln!(out, "### {section}\n\n{}", section_table(r, &section));
        }
    }
    for sh in &s.shadow {
        let _ = writeln!(
            out,
            "### The review's tables: {} (scheduler arguments: {})\n",
            sh.arms
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            sh.env.scheduler_args.join(" ")
        );
        for section in sh.sections() {
            if let Some(t) = report::shadow_tables(sh, &section) {
                let _ = writeln!(out, "```\n{t}```\n");
            }
        }
    }
    out
}

/// "2s4l4c" and "2" for a shape named "2s4l4c-nps2" (vm.sh's NUMA modes).
fn numa_mode(name: &str) -> Option<(&str, &str)> {
    crate::shape::Shape::numa_mode(name)
}

/// A point of a shape's A/B runs, by section and label.
fn find_point<'a>(s: &'a Shape, section: &str, label: &str) -> Option<&'a PointResult> {
    s.ab.iter()
        .flat_map(|r| &r.points)
        .find(|p| p.point.section == section && p.point.label == label)
}

/// "1.634 (+0.5%)": @arm's mean and its change against @base's, as the
/// review writes SIS_UTIL's beside tip's.
fn against(p: &PointResult, arm: &str, base: &str, alpha: f64) -> String {
    let Some(metric) = p.point.metrics.first() else {
        return "-".into();
    };
    let (vals, base_vals) = (p.values(arm, &metric.name), p.values(base, &metric.name));
    if vals.is_empty() || base_vals.is_empty() {
        return "-".into();
    }
    let m = stat::mean(&vals);
    if arm == base {
        return table::num(m);
    }
    let change = table::change_with_ci(&vals, &base_vals, metric.better, alpha, None);
    // The mark after the parenthesis, as the documents' tables put it.
    let (change, mark) = match change.strip_suffix(" *") {
        Some(c) => (c, " *"),
        None => (change.as_str(), ""),
    };
    format!("{} ({change}){mark}", table::num(m))
}

/// The review's layout for its NUMA modes: per section, a row per point and,
/// side by side for every mode of one machine, prop's result and util's
/// with its change against prop (positive = better), the question the
/// review's tables ask of every mode.
fn modes_section(shapes: &[Shape]) -> String {
    let mut out = String::new();
    let mut bases: Vec<&str> = shapes
        .iter()
        .filter_map(|s| numa_mode(&s.name))
        .map(|m| m.0)
        .collect();
    bases.dedup();
    for base in bases {
        let modes: Vec<&Shape> = shapes
            .iter()
            .filter(|s| numa_mode(&s.name).is_some_and(|m| m.0 == base))
            .collect();
        if modes.len() < 2 {
            continue;
        }
        let _ = writeln!(
            out,
            "## {base} across its NUMA modes: SIS_UTIL (util) against SIS_PROP (prop)\n\n\
             Each cell is a mean over the iterations of that mode's own run; util's change is \
             against prop in the same run (positive = better, in brackets its 95% confidence \
             interval, `*` = significant). Below each \
             result, the found-rate of the scans (`found %`) that explains it in the review.\n"
        );
        let Some(first) = modes[0].ab.first() else {
            continue;
        };
        let alpha = first.method.alpha;
        for r in &modes[0].ab {
            for section in r.sections() {
                let Some(metric) = r
                    .section_points(&section)
                    .first()
                    .and_then(|p| p.point.metrics.first().cloned())
                else {
                    continue;
                };
                let mut head = vec![format!("{} ({})", metric.name, metric.unit)];
                for m in &modes {
                    let nps = numa_mode(&m.name).map_or("?", |x| x.1);
                    head.push(format!("NPS{nps} prop"));
                    head.push(format!("NPS{nps} util"));
                }
                let mut rows = Vec::new();
                for p in r.section_points(&section) {
                    let mut row = vec![p.point.label.clone()];
                    for m in &modes {
                        match find_point(m, &section, &p.point.label) {
                            Some(q) => {
                                row.push(against(q, "prop", "prop", alpha));
                                row.push(against(q, "util", "prop", alpha));
                            }
                            None => row.extend(["-".to_string(), "-".to_string()]),
                        }
                    }
                    rows.push(row);
                }
                let _ = writeln!(out, "### {section}\n\n{}", table(&head, &rows));
                let found: Vec<Vec<String>> = r
                    .section_points(&section)
                    .iter()
                    .map(|p| {
                        let mut row = vec![p.point.label.clone()];
                        for m in &modes {
                            let q = find_point(m, &section, &p.point.label);
                            for arm in ["prop", "util"] {
                                let samples = q
                                    .and_then(|q| q.samples.get(arm))
                                    .map(Vec::as_slice)
                                    .unwrap_or(&[]);
                                row.push(fixed(Search::Found.mean(samples)));
                            }
                        }
                        row
                    })
                    .collect();
                head[0] = "found %".into();
                let _ = writeln!(out, "{}", table(&head, &found));
            }
        }
    }
    out
}

const LEGEND: &str =
    "Columns: the leading result (mean ± sample stddev) and its change against the \
baseline (positive = better), in brackets that change's 95% confidence interval, `*` = significant \
by Welch's t-test, `=` = level within the run's control margin; then, from the scheduler's \
counters: `on idle %` of wakeups placed on an idle CPU, `scanned %` of wakeups that reached the \
LLC scan, `found %` of scans that found an idle CPU when one existed in the LLC, `depth 0 %` of \
scans the policy allowed no CPU, the mean depth `limit` the policy set and the mean number of \
CPUs `examined`, and the mean time of a scan.";

/// Writes `dir`/summary.md and its charts into `dir`/plots; returns the
/// summary's path.
pub fn summarize(dir: &Path) -> Result<PathBuf> {
    let shapes = shapes(dir)?;
    let plot_dir = dir.join("plots");
    std::fs::create_dir_all(&plot_dir)
        .with_context(|| format!("cannot create {}", plot_dir.display()))?;
    let mut out = format!(
        "# Study summary\n\nGenerated by `sisutil-lab study-summary {}` from the runs below it. \
         Compare arms within a run only.\n\n{LEGEND}\n\n",
        dir.display()
    );
    for s in &shapes {
        let charts = [
            (
                Search::Found,
                "found",
                "found-rate of the scans",
                "% of scans with an idle CPU to find",
            ),
            (
                Search::Examined,
                "examined",
                "CPUs examined per scan",
                "CPUs (mean)",
            ),
            (
                Search::OnIdle,
                "on-idle",
                "wakeups placed on an idle CPU",
                "% of wakeups",
            ),
        ];
        let mut files = Vec::new();
        for (what, slug, title, y) in charts {
            let Some(chart) = search_chart(s, what, title, y) else {
                continue;
            };
            let path = plot_dir.join(format!("{}-{slug}.svg", s.name));
            std::fs::write(&path, chart.svg())
                .with_context(|| format!("cannot write {}", path.display()))?;
            files.push(path);
        }
        out.push_str(&shape_section(s, &files, dir));
    }
    out.push_str(&modes_section(&shapes));
    let path = dir.join("summary.md");
    std::fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::fixture::results;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sisu-study-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn refuses_a_folder_without_runs() {
        let dir = tmp("empty");
        let e = summarize(&dir).unwrap_err().to_string();
        assert!(e.contains("holds no study runs"), "{e}");
        assert!(summarize(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn one_row_per_point_and_arm_with_the_search_figures() {
        let dir = tmp("rows");
        for shape in ["3x4", "2x8", "1x16"] {
            std::fs::create_dir_all(dir.join(shape).join("ab")).unwrap();
            results()
                .save(&dir.join(shape).join("ab/results.json"))
                .unwrap();
        }
        let mut shadow = results();
        shadow.env.scheduler_args = vec!["--shadow".into(), "prop".into()];
        for p in &mut shadow.points {
            for s in p.samples.get_mut("util").unwrap() {
                let m = s.stats.as_mut().unwrap();
                m.shadow = "prop".into();
                m.shadow_shadow_only = 4;
            }
        }
        std::fs::create_dir_all(dir.join("1x16/shadow")).unwrap();
        shadow.save(&dir.join("1x16/shadow/results.json")).unwrap();

        let text = std::fs::read_to_string(summarize(&dir).unwrap()).unwrap();
        // The study's shapes in its order, whatever the folders' order, and
        // any other shape after them.
        let at = |s: &str| text.find(&format!("## {s}:")).unwrap();
        assert!(at("1x16") < at("2x8") && at("2x8") < at("3x4"), "{text}");
        let row = text
            .lines()
            .find(|l| l.starts_with("| 16-groups | util |"))
            .unwrap();
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // 10.70 -> 11.66 s: 9 % worse and significant; the counters of the
        // report's fixture: 10 scans, 3 of 4 found, depth 0 in 5, mean
        // limit 2, mean examined 0.4.
        assert_eq!(cells[4], "-9.0% [-12.9, -5.1] *", "{row}");
        assert_eq!(&cells[7..11], ["75.0", "50.0", "2.0", "0.4"], "{row}");
        assert!(
            text.contains("| 16-groups | eevdf | 10.70 ±0.200 |  | - |"),
            "{text}"
        );
        // The shadow run's tables, for the one shape that has it.
        assert_eq!(text.matches("The review's tables").count(), 1, "{text}");
        assert!(text.contains("prop able to find CPU"), "{text}");
        for f in ["1x16-found.svg", "1x16-examined.svg", "2x8-on-idle.svg"] {
            assert!(dir.join("plots").join(f).is_file(), "{f}");
            assert!(text.contains(&format!("(plots/{f})")) || f.starts_with("2x8"));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn numa_modes_side_by_side() {
        let dir = tmp("modes");
        // The fixture's eevdf arm as prop: prop 10.70 s, util 11.66 s at 16 groups.
        let mut r = results();
        r.arms[0] = crate::bench::arms::Arm::parse("prop").unwrap();
        r.method.baseline = "prop".into();
        for p in &mut r.points {
            let eevdf = p.samples.remove("eevdf").unwrap();
            p.samples.insert("prop".into(), eevdf);
        }
        for shape in ["2s2l2c-nps1", "2s2l2c-nps2", "1x16"] {
            std::fs::create_dir_all(dir.join(shape).join("ab")).unwrap();
            r.save(&dir.join(shape).join("ab/results.json")).unwrap();
        }
        let text = std::fs::read_to_string(summarize(&dir).unwrap()).unwrap();
        assert_eq!(text.matches("across its NUMA modes").count(), 1, "{text}");
        assert!(text.contains("## 2s2l2c across its NUMA modes"), "{text}");
        assert!(
            text.contains("| time (s) | NPS1 prop | NPS1 util | NPS2 prop | NPS2 util |"),
            "{text}"
        );
        assert!(
            text.contains("| 16-groups | 10.70 | 11.66 (-9.0% [-12.9, -5.1]) * | 10.70 | 11.66 (-9.0% [-12.9, -5.1]) * |"),
            "{text}"
        );
        // The found-rate below it: util's counters say 3 of 4; prop's run
        // here carries none.
        assert!(
            text.contains("| found % | NPS1 prop | NPS1 util |"),
            "{text}"
        );
        assert!(
            text.contains("| 16-groups | - | 75.0 | - | 75.0 |"),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
