//! The tables and verdicts the documents quote, made from results files
//! by the report's own statistics, and the check that a document still
//! says what its results say.
//!
//! A document marks every quoted piece with the command that makes it,
//! with paths from the top of the repository:
//!
//! ```text
//! <!-- sisutil-lab table results/RUN --points 1-groups --arms eevdf,util -->
//! | the command's output, verbatim |
//! <!-- end -->
//! ```
//!
//! A mark whose output is one line may stand inside a sentence
//! (`table ... --verdict`). `cat FILE` quotes a file a script wrote, such
//! as a summary table of `scripts/cost.sh`. `sisutil-lab docs FILE...`
//! runs every marked command again and names each mark whose text differs
//! from its output; `--update` writes the output in instead. A unit test
//! runs that check over the README and docs/, so a number cannot drift
//! from the run it cites, and a verdict ("ahead", "behind", "not
//! significant in N runs") is the t-test's, never the writer's.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;

use super::pooled;
use super::rank;
use super::report;
use super::results::{PointResult, Results, Sample};
use super::search::Search;
use super::stat;
use super::table::num;
use super::verdict::{self, fmt_p, Margin};
use super::workload::Metric;

/// `sisutil-lab table`: one table of one or more runs, for a document.
#[derive(Clone, Debug, clap::Args)]
pub struct TableOpts {
    /// Results files of `bench`, or folders that hold one (results.json)
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Names of the runs in the header, comma-separated (default: the
    /// folders' names, when there is more than one run); with --pooled,
    /// files named alike are one run (a study's modes, booted one after
    /// another from one build)
    #[arg(long = "as", value_delimiter = ',')]
    pub names: Vec<String>,
    /// Only this section (as the report heads it: "hackbench process socket")
    #[arg(long)]
    pub section: Option<String>,
    /// Only these points, by label ("1-groups", "4 clients"), in this order
    #[arg(long, value_delimiter = ',')]
    pub points: Vec<String>,
    /// These metrics (default: each point's first); a row per point and metric
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// Only these arms, in this order (default: every arm of the first run)
    #[arg(long, value_delimiter = ',')]
    pub arms: Vec<String>,
    /// The arm every change is against (default: the run's baseline)
    #[arg(long)]
    pub base: Option<String>,
    /// Show the sample standard deviation beside each mean
    #[arg(long)]
    pub sd: bool,
    /// Show Welch's p-value beside each change instead of a star (with
    /// --search, each figure's relative change against the base arm's too)
    #[arg(long)]
    pub p_values: bool,
    /// A row per point and arm with these search figures from the
    /// scheduler's counters
    #[arg(long, value_delimiter = ',', value_enum)]
    pub search: Vec<Search>,
    /// The shadow run's tables (found-rate, "able to find" matrix, CPUs
    /// searched), summed over iterations
    #[arg(long)]
    pub shadow: bool,
    /// One sentence for one point and one arm: the change against the base
    /// and what Welch's test says of it
    #[arg(long)]
    pub verdict: bool,
    /// A row per point: the rules ranked by the shadow's found-rate and by
    /// the measured result, Kendall's tau, and the exact test pooled over
    /// the points (runs with --shadow all and the rules as arms)
    #[arg(long)]
    pub rank: bool,
    /// Under the table, per arm, its changes against the base pooled over
    /// the points of each run (a permutation test within the run), and
    /// over the runs with the run as the unit (Student's t on the runs'
    /// means)
    #[arg(long)]
    pub pooled: bool,
    /// With --pooled, its sentences alone: for pools of many runs, whose
    /// tables the pages show run by run
    #[arg(long, requires = "pooled")]
    pub verdicts_only: bool,
    /// With --pooled, its table of runs and its sentences, not the points
    #[arg(long, requires = "pooled", conflicts_with = "verdicts_only")]
    pub summary: bool,
    /// The equivalence margin in % of the base's mean: "level" only where
    /// two one-sided tests put the change inside it (default: the margin
    /// stated before the run, else the run's own control arm's, X#TAG
    /// beside X)
    #[arg(long, value_parser = parse_margin)]
    pub margin: Option<f64>,
}

pub(crate) fn parse_margin(s: &str) -> std::result::Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(m) if m > 0.0 && m < 100.0 => Ok(m),
        _ => Err(format!("{s:?} is not a margin in % (above 0, below 100)")),
    }
}

/// A run as the table names it.
struct Run {
    name: String,
    results: Results,
    /// The build it measured: the results file's, or for files written
    /// before they recorded one, the version line of the scheduler's log
    /// beside it.
    build: Option<String>,
}

/// "g<sha>[-dirty]" from the first line of a scheduler.log that has one.
fn logged_build(folder: &Path) -> Option<String> {
    let text = std::fs::read_to_string(folder.join("scheduler.log")).ok()?;
    let line = text.lines().find(|l| l.contains("scx_sisutil "))?;
    let version = line.split_whitespace().find(|w| w.contains("-g"))?;
    version.split_once("-g").map(|(_, b)| format!("g{b}"))
}

fn load_runs(opts: &TableOpts, root: &Path) -> Result<Vec<Run>> {
    if !opts.names.is_empty() && opts.names.len() != opts.runs.len() {
        bail!(
            "--as names {} run(s), but {} were given",
            opts.names.len(),
            opts.runs.len()
        );
    }
    opts.runs
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let path = root.join(path);
            let file = if path.is_dir() {
                path.join("results.json")
            } else {
                path.clone()
            };
            let results = Results::load(&file)?;
            let folder = if path.is_dir() {
                path.as_path()
            } else {
                path.parent().unwrap_or(&path)
            };
            let name = opts.names.get(i).cloned().unwrap_or_else(|| {
                folder
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            });
            let build = results.env.build().or_else(|| logged_build(folder));
            Ok(Run {
                name,
                results,
                build,
            })
        })
        .collect()
}

/// The points of the first run the options select, in the order asked for.
fn select_points<'a>(opts: &TableOpts, r: &'a Results) -> Result<Vec<&'a PointResult>> {
    if let Some(s) = &opts.section {
        if !r.sections().contains(s) {
            bail!(
                "no section {s:?} in the run (it has: {})",
                r.sections().join(", ")
            );
        }
    }
    let in_section = |p: &&PointResult| opts.section.as_ref().is_none_or(|s| &p.point.section == s);
    let all: Vec<&PointResult> = r.points.iter().filter(in_section).collect();
    if opts.points.is_empty() {
        return Ok(all);
    }
    // A label names that point in every section it is in, in run order.
    let mut out = Vec::new();
    for label in &opts.points {
        let hits: Vec<&PointResult> = all
            .iter()
            .filter(|p| &p.point.label == label)
            .copied()
            .collect();
        if hits.is_empty() {
            bail!(
                "no point {label:?} (there are: {})",
                all.iter()
                    .map(|p| p.point.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        out.extend(hits);
    }
    if opts.points.len() > 1 {
        // Sections in the run's order, the labels' order within each.
        let order = r.sections();
        out.sort_by_key(|p| order.iter().position(|s| s == &p.point.section));
    }
    Ok(out)
}

/// The same point in another run.
fn same_point<'a>(r: &'a Results, p: &PointResult) -> Option<&'a PointResult> {
    r.points
        .iter()
        .find(|q| q.point.section == p.point.section && q.point.label == p.point.label)
}

fn select_arms(opts: &TableOpts, runs: &[Run]) -> Result<Vec<String>> {
    let first = &runs[0].results;
    if opts.arms.is_empty() {
        return Ok(first.arms.iter().map(|a| a.name.clone()).collect());
    }
    for a in &opts.arms {
        if !runs
            .iter()
            .any(|r| r.results.arms.iter().any(|x| &x.name == a))
        {
            bail!(
                "no arm {a:?} in the runs (the first has: {})",
                first
                    .arms
                    .iter()
                    .map(|x| x.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok(opts.arms.clone())
}

/// The metrics of a point the table shows: a named one may also be a
/// value the benchmark reports beside its metrics (streambench's
/// placement), which has no better direction and so no change.
fn metrics_of(opts: &TableOpts, p: &PointResult) -> Result<Vec<(String, Option<Metric>)>> {
    if opts.metrics.is_empty() {
        let m = p
            .point
            .metrics
            .first()
            .ok_or_else(|| anyhow!("point {:?} has no metric", p.point.label))?;
        return Ok(vec![(m.name.clone(), Some(m.clone()))]);
    }
    opts.metrics
        .iter()
        .map(|name| {
            let metric = p.point.metrics.iter().find(|m| &m.name == name).cloned();
            let valued = p
                .samples
                .values()
                .flatten()
                .any(|s| s.values.contains_key(name));
            if metric.is_none() && !valued {
                bail!("point {:?} has no metric or value {name:?}", p.point.label);
            }
            Ok((name.clone(), metric))
        })
        .collect()
}

fn fmt_mean(vals: &[f64], sd: bool) -> String {
    if sd {
        format!("{} ±{}", num(stat::mean(vals)), num(stat::stddev(vals)))
    } else {
        num(stat::mean(vals))
    }
}

/// The margin @arm's change in @name is judged by in @r: the options', the
/// one stated before the run, or the run's control's (never on the control
/// itself).
fn margin_for(opts: &TableOpts, r: &Results, name: &str, arm: &str) -> Option<Margin> {
    match opts.margin {
        Some(pct) => Some(Margin::stated(pct)),
        None => verdict::margin_of(r, name, arm),
    }
}

/// One arm's result at one point: its mean, and its change against the
/// base's with its confidence interval, a star where Welch's test finds it
/// significant, `=` where it is inside the equivalence margin (or the
/// p-value instead of the marks).
fn cell(
    r: &Results,
    p: &PointResult,
    arm: &str,
    base: &str,
    name: &str,
    metric: Option<&Metric>,
    opts: &TableOpts,
) -> String {
    let vals = p.values(arm, name);
    if vals.is_empty() {
        return if p.failed(arm) { "failed" } else { "-" }.into();
    }
    let shown = fmt_mean(&vals, opts.sd);
    let base_vals = p.values(base, name);
    let Some(metric) = metric.filter(|_| arm != base && !base_vals.is_empty()) else {
        return shown;
    };
    let change = stat::change_pct(stat::mean(&base_vals), stat::mean(&vals), metric.better);
    let margin = margin_for(opts, r, name, arm);
    let Some(j) = verdict::judge(
        &vals,
        &base_vals,
        metric.better,
        r.method.alpha,
        margin.as_ref(),
    ) else {
        return format!("{shown} ({change:+.1}%, no test)");
    };
    let ci = format!("[{:+.1}, {:+.1}]", j.change.lo, j.change.hi);
    if opts.p_values {
        return format!("{shown} ({change:+.1}% {ci}, {})", fmt_p(j.change.p));
    }
    format!("{shown} ({change:+.1}% {ci}){}", j.mark())
}

/// A Markdown table.
pub(crate) fn markdown(head: &[String], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|", head.join(" | "));
    out.push_str(&"---|".repeat(head.len()));
    out.push('\n');
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out
}

fn row_label(p: &PointResult, metric: &str, sections: bool, metrics: bool) -> String {
    let mut s = if sections {
        format!("{}, {}", p.point.section, p.point.label)
    } else {
        p.point.label.clone()
    };
    if metrics {
        let _ = write!(s, ", {metric}");
    }
    s
}

/// Rows of points, a column per run and arm.
fn grid(opts: &TableOpts, runs: &[Run]) -> Result<String> {
    let first = &runs[0].results;
    let points = select_points(opts, first)?;
    let arms = select_arms(opts, runs)?;
    let sections = points
        .iter()
        .any(|p| p.point.section != points[0].point.section);
    let mut rows = Vec::new();
    let mut heads = Vec::new();
    // The margins the cells were judged by, to say under the table.
    let mut margins: Vec<(String, Margin)> = Vec::new();
    for p in &points {
        let metrics = metrics_of(opts, p)?;
        for (name, metric) in &metrics {
            let unit = metric.as_ref().map_or(String::new(), |m| m.unit.clone());
            heads.push(if unit.is_empty() {
                name.clone()
            } else {
                format!("{name} ({unit})")
            });
            let mut row = vec![row_label(p, name, sections, metrics.len() > 1)];
            for run in runs {
                let r = &run.results;
                let base = opts.base.as_deref().unwrap_or(&r.method.baseline);
                match same_point(r, p) {
                    Some(q) => {
                        row.extend(
                            arms.iter()
                                .map(|a| cell(r, q, a, base, name, metric.as_ref(), opts)),
                        );
                        let used = arms
                            .iter()
                            .filter(|a| *a != base && metric.is_some())
                            .filter_map(|a| margin_for(opts, r, name, a));
                        for m in used {
                            if !margins.iter().any(|(n, g)| n == name && *g == m) {
                                margins.push((name.clone(), m));
                            }
                        }
                    }
                    None => row.extend(arms.iter().map(|_| "-".to_string())),
                }
            }
            rows.push(row);
        }
    }
    heads.dedup();
    let corner = match heads.as_slice() {
        [one] => one.clone(),
        _ => "point".into(),
    };
    let mut head = vec![corner];
    for run in runs {
        for a in &arms {
            head.push(if runs.len() > 1 {
                format!("{} {a}", run.name)
            } else {
                a.clone()
            });
        }
    }
    let mut out = String::new();
    if !opts.verdicts_only && !opts.summary {
        out.push_str(&markdown(&head, &rows));
        if !margins.is_empty() && !opts.p_values {
            let said: Vec<String> = margins
                .iter()
                .map(|(n, g)| format!("±{:.1}% for {n} ({})", g.pct, g.source))
                .collect();
            let _ = writeln!(
                out,
                "\n`=`: level, the change inside its margin by two one-sided tests at p < {}: {}.",
                first.method.alpha,
                said.join("; ")
            );
        }
        if opts.pooled {
            out.push('\n');
        }
    }
    if opts.pooled {
        out.push_str(&pooled_part(opts, runs, &points, &arms)?);
    }
    Ok(out)
}

/// The (point, metric) pairs of a run that a pooled analysis averages:
/// the table's points as they are in @r, each with the metrics shown that
/// have a better direction.
fn pooled_items<'a>(
    opts: &TableOpts,
    r: &'a Results,
    points: &[&PointResult],
) -> Result<Vec<(&'a PointResult, String, stat::Better)>> {
    let mut out = Vec::new();
    for p in points {
        let Some(q) = same_point(r, p) else {
            continue;
        };
        for (name, metric) in metrics_of(opts, q)? {
            if let Some(m) = metric {
                out.push((q, name, m.better));
            }
        }
    }
    Ok(out)
}

/// The units of a pooled analysis: the files given, where files named
/// alike with --as (a study's NUMA modes, booted one after another from
/// one build) make one run.
fn pooled_units(runs: &[Run]) -> Vec<(String, Vec<&Run>)> {
    let mut out: Vec<(String, Vec<&Run>)> = Vec::new();
    for run in runs {
        match out.iter_mut().find(|(n, _)| *n == run.name) {
            Some((_, files)) => files.push(run),
            None => out.push((run.name.clone(), vec![run])),
        }
    }
    out
}

/// One unit's pooled change of @arm against @base over @points.
fn pool_unit(
    opts: &TableOpts,
    files: &[&Run],
    points: &[&PointResult],
    arm: &str,
    base: &str,
) -> Result<Option<pooled::RunPool>> {
    let mut items = Vec::new();
    for f in files {
        items.extend(pooled_items(opts, &f.results, points)?);
    }
    Ok(pooled::pool_run(&items, arm, base))
}

/// Under a table with --pooled: per arm, each run's change over its points
/// with the permutation test, and, over two or more runs, the runs'
/// changes judged with the run as the unit.
fn pooled_part(
    opts: &TableOpts,
    runs: &[Run],
    points: &[&PointResult],
    arms: &[String],
) -> Result<String> {
    let base = opts
        .base
        .clone()
        .unwrap_or_else(|| runs[0].results.method.baseline.clone());
    let alpha = runs[0].results.method.alpha;
    let units = pooled_units(runs);
    let others: Vec<&String> = arms.iter().filter(|a| **a != base).collect();
    // pools[arm][unit]: None where the unit lacks the arm.
    let mut pools: Vec<Vec<Option<pooled::RunPool>>> = vec![Vec::new(); others.len()];
    for (_, files) in &units {
        for (k, a) in others.iter().enumerate() {
            pools[k].push(pool_unit(opts, files, points, a, &base)?);
        }
    }
    let build_of = |files: &[&Run]| {
        let mut b: Vec<&str> = files
            .iter()
            .map(|f| f.build.as_deref().unwrap_or("unknown"))
            .collect();
        b.dedup();
        b.join(", ")
    };
    let mut out = String::new();
    if !opts.verdicts_only {
        let _ = writeln!(
            out,
            "Pooled: each run's change against {base} over its points, the geometric mean of the arm's ratios to {base} \
             (positive = better), with a permutation test that swaps the two arms within each round ({} permutations):\n",
            pooled::PERMUTATIONS
        );
        let mut head = vec!["run".to_string(), "build".to_string(), "points".to_string()];
        head.extend(others.iter().map(|a| a.to_string()));
        let rows: Vec<Vec<String>> = units
            .iter()
            .enumerate()
            .map(|(i, (name, files))| {
                let n = pools
                    .iter()
                    .filter_map(|m| m[i].map(|p| p.points))
                    .max()
                    .unwrap_or(0);
                let mut row = vec![name.clone(), build_of(files), n.to_string()];
                row.extend(pools.iter().map(|m| {
                    m[i].map_or("-".into(), |p| format!("{:+.1}% ({})", p.pct(), fmt_p(p.p)))
                }));
                row
            })
            .collect();
        out.push_str(&markdown(&head, &rows));
        out.push('\n');
    }
    if units.len() < 2 {
        for (a, m) in others.iter().zip(&pools) {
            if let Some(p) = m[0] {
                let word = match (p.p < alpha, p.log_mean > 0.0) {
                    (true, true) => "ahead in this run",
                    (true, false) => "behind in this run",
                    (false, _) => "not significant in this run",
                };
                let _ = writeln!(
                    out,
                    "{a} against {base}, the geometric mean change over {} point(s) of one run: {:+.1}%, {word} (permutation {}).",
                    p.points,
                    p.pct(),
                    fmt_p(p.p)
                );
            }
        }
        return Ok(out);
    }
    // The control's own run changes give the margin, where no other is
    // set: over the runs that had the control.
    let mut control_margin = None;
    // The control of the base where one ran, else any: two runs of one arm
    // measure the method's noise whichever arm it is.
    let pairs: Vec<(String, String)> = runs
        .iter()
        .flat_map(|run| verdict::controls(&run.results))
        .collect();
    let pair = pairs
        .iter()
        .find(|(_, twin)| *twin == base)
        .or(pairs.first())
        .cloned();
    if let Some((control, twin)) = pair {
        let mut ms = Vec::new();
        for (_, files) in &units {
            if let Some(p) = pool_unit(opts, files, points, &control, &twin)? {
                ms.push(p.log_mean);
            }
        }
        control_margin = pooled::control_margin(&control, &twin, &ms);
    }
    for (a, m) in others.iter().zip(&pools) {
        let xs: Vec<f64> = m.iter().flatten().map(|p| p.log_mean).collect();
        let margin = match opts.margin {
            Some(pct) => Some(Margin::stated(pct)),
            None => control_margin.clone(),
        }
        .filter(|g| g.control.as_deref() != Some(a.as_str()));
        let Some(j) = pooled::across(&xs, alpha, margin.as_ref()) else {
            continue;
        };
        let mut line = format!(
            "Across {} runs, the run as the unit (Student's t on the runs' mean log ratios, {} df): {a} {:+.1}% against {base}: {}.",
            xs.len(),
            xs.len() - 1,
            j.change.pct,
            j.sentence(&format!("{} runs", xs.len()), xs.len())
        );
        if let Some(g) =
            margin.filter(|_| j.word == verdict::Word::Level || j.word == verdict::Word::Open)
        {
            let _ = write!(line, " Margin: {}.", g.source);
        }
        let _ = writeln!(out, "{line}");
    }
    let mut builds: Vec<&str> = runs
        .iter()
        .map(|r| r.build.as_deref().unwrap_or("unknown"))
        .collect();
    builds.sort_unstable();
    builds.dedup();
    let _ = writeln!(
        out,
        "{}",
        match builds.as_slice() {
            [one] => format!("Every run measured build {one}."),
            many => format!("The runs measured different builds: {}.", many.join(", ")),
        }
    );
    Ok(out)
}

fn fixed(v: Option<f64>) -> String {
    match v {
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
        None => "-".into(),
    }
}

/// A row per run, point and arm: the result, its change against the base,
/// and what the scheduler's counters say about the search.
fn search_rows(opts: &TableOpts, runs: &[Run]) -> Result<String> {
    let points = select_points(opts, &runs[0].results)?;
    let arms = select_arms(opts, runs)?;
    let Some(first) = points.first() else {
        bail!("no point selected");
    };
    // Points of several sections (STREAM beside YCSB) are named with
    // their section, and where their metrics differ each row shows its
    // point's own, its unit beside the value.
    let sections = points
        .iter()
        .any(|p| p.point.section != first.point.section);
    let mut own = Vec::with_capacity(points.len());
    for p in &points {
        own.push(metrics_of(opts, p)?.remove(0));
    }
    let (name, metric) = &own[0];
    let mixed = own.iter().any(|(n, _)| n != name);
    let unit = metric
        .as_ref()
        .filter(|_| !mixed)
        .map_or(String::new(), |m| format!(" ({})", m.unit));
    let base_name = opts
        .base
        .clone()
        .unwrap_or_else(|| runs[0].results.method.baseline.clone());
    let mut head = Vec::new();
    if runs.len() > 1 {
        head.push("run".to_string());
    }
    if points.len() > 1 {
        head.push("point".to_string());
    }
    head.extend([
        "arm".to_string(),
        if mixed {
            "result".to_string()
        } else {
            format!("{name}{unit}")
        },
        format!("vs {base_name}"),
    ]);
    head.extend(opts.search.iter().map(|s| s.head().to_string()));
    let mut rows = Vec::new();
    for run in runs {
        let r = &run.results;
        let base = opts.base.as_deref().unwrap_or(&r.method.baseline);
        for (p, (name, metric)) in points.iter().zip(&own) {
            let Some(q) = same_point(r, p) else {
                continue;
            };
            for a in &arms {
                let samples = q.samples.get(a).map(Vec::as_slice).unwrap_or(&[]);
                let vals = q.values(a, name);
                if samples.is_empty() {
                    continue;
                }
                let mut row = Vec::new();
                if runs.len() > 1 {
                    row.push(run.name.clone());
                }
                if points.len() > 1 {
                    row.push(row_label(q, name, sections, false));
                }
                row.push(a.clone());
                row.push(match (&vals[..], metric) {
                    ([], _) => "-".into(),
                    (_, Some(m)) if mixed => format!("{} {}", fmt_mean(&vals, opts.sd), m.unit),
                    _ => fmt_mean(&vals, opts.sd),
                });
                let change = cell(r, q, a, base, name, metric.as_ref(), opts);
                // The change alone: what follows the mean in the cell.
                row.push(
                    change
                        .split_once(" (")
                        .map_or(String::new(), |(_, c)| format!("({c}")),
                );
                let base_samples = q.samples.get(base).map(Vec::as_slice).unwrap_or(&[]);
                row.extend(opts.search.iter().map(|s| {
                    let cell = fixed(s.mean(samples));
                    if opts.p_values && a != base {
                        format!("{cell}{}", search_change(*s, base_samples, samples))
                    } else {
                        cell
                    }
                }));
                rows.push(row);
            }
        }
    }
    Ok(markdown(&head, &rows))
}

/// A search figure's change against the base arm's (`relative_change`).
fn search_change(s: Search, base: &[Sample], arm: &[Sample]) -> String {
    relative_change(&s.values(base), &s.values(arm))
}

/// The change of @vals' mean against @base's, with no better direction,
/// its 95 % confidence interval and Welch's p over the runs: " (+12.0%
/// [+3.1, +20.9], p 0.03)", " (p 0.03)" where the base's mean is 0, or ""
/// where either lacks two runs.
pub(crate) fn relative_change(base: &[f64], vals: &[f64]) -> String {
    let Some((_, _, p)) = stat::welch(base, vals) else {
        return String::new();
    };
    match stat::change(vals, base, stat::Better::Higher, verdict::LEVEL) {
        Some(c) => format!(" ({:+.1}% [{:+.1}, {:+.1}], p {p:.2})", c.pct, c.lo, c.hi),
        None => format!(" (p {p:.2})"),
    }
}

/// The shadow run's tables for the selected points, as the report prints
/// them.
fn shadow(opts: &TableOpts, runs: &[Run]) -> Result<String> {
    let mut out = String::new();
    for run in runs {
        let points = select_points(opts, &run.results)?;
        let labels: Vec<&str> = points.iter().map(|p| p.point.label.as_str()).collect();
        for section in run.results.sections() {
            if opts.section.as_ref().is_some_and(|s| s != &section) {
                continue;
            }
            if let Some(t) = report::shadow_tables_of(&run.results, &section, &labels) {
                out.push_str(&t);
            }
        }
    }
    if out.is_empty() {
        bail!("no shadow rule's counters at the selected points");
    }
    Ok(format!("```\n{}\n```\n", out.trim_end_matches('\n')))
}

/// "2.02 s against 3.27 s, +38.4%: ahead (p 0.003, 3 runs each)".
fn verdict(opts: &TableOpts, runs: &[Run]) -> Result<String> {
    let [run] = runs else {
        bail!("--verdict takes one run");
    };
    let r = &run.results;
    let points = select_points(opts, r)?;
    let arms = select_arms(opts, runs)?;
    let ([p], [arm]) = (points.as_slice(), arms.as_slice()) else {
        bail!("--verdict takes one point (--points) and one arm (--arms)");
    };
    let (name, metric) = metrics_of(opts, p)?.remove(0);
    let metric = metric.ok_or_else(|| anyhow!("{name} has no better direction to judge by"))?;
    let base = opts.base.as_deref().unwrap_or(&r.method.baseline);
    let (vals, base_vals) = (p.values(arm, &name), p.values(base, &name));
    if vals.is_empty() || base_vals.is_empty() {
        bail!("{arm} or {base} has no {name} at {:?}", p.point.label);
    }
    let (m, b) = (stat::mean(&vals), stat::mean(&base_vals));
    let change = stat::change_pct(b, m, metric.better);
    let runs_n = if vals.len() == base_vals.len() {
        format!("{} runs each", vals.len())
    } else {
        format!("{} and {} runs", vals.len(), base_vals.len())
    };
    let margin = margin_for(opts, r, &name, arm);
    let judged = match verdict::judge(
        &vals,
        &base_vals,
        metric.better,
        r.method.alpha,
        margin.as_ref(),
    ) {
        Some(j) => {
            let mut s = j.sentence(&runs_n, vals.len().min(base_vals.len()));
            if let Some(g) = margin.filter(|g| g.control.is_some()) {
                let _ = write!(s, "; margin: {}", g.source);
            }
            s
        }
        None => format!("not testable ({runs_n})"),
    };
    let unit = match metric.unit.as_str() {
        "" => String::new(),
        u => format!(" {u}"),
    };
    Ok(format!(
        "{}{unit} against {}{unit}, {change:+.1}%: {judged}",
        num(m),
        num(b)
    ))
}

/// The rankings of the selected points of every run, a row each, and the
/// test pooled over them all.
fn rank_rows(opts: &TableOpts, runs: &[Run]) -> Result<String> {
    let mut rows = Vec::new();
    let mut all = Vec::new();
    for run in runs {
        let chosen = select_points(opts, &run.results)?;
        for r in rank::ranks(&run.results) {
            if !chosen
                .iter()
                .any(|p| p.point.section == r.section && p.point.label == r.label)
            {
                continue;
            }
            let (by_found, by_result) = r.orders();
            let found: Vec<String> = r
                .rules
                .iter()
                .map(|(n, f, _)| format!("{n} {f:.1}"))
                .collect();
            let mut label = format!("{}, {}", r.section, r.label);
            if runs.len() > 1 {
                label = format!("{}: {label}", run.name);
            }
            rows.push(vec![
                label,
                found.join(", "),
                by_found,
                format!("{by_result} ({})", r.metric),
                format!("{:+.2}", r.tau),
                if r.spread_significant { "yes" } else { "no" }.into(),
            ]);
            all.push(r);
        }
    }
    let Some((s, p)) = rank::pooled_p(&all) else {
        bail!("no point has three or more rules both measured and judged in the shadow");
    };
    let head = [
        "point",
        "found % (shadow)",
        "by found-rate",
        "by result",
        "Kendall tau",
        "best vs worst significant",
    ]
    .map(String::from);
    Ok(format!(
        "{}\nOver {} points: Kendall's S summed {s:+}, {} (exact, one-sided: that more finding goes with better results).\n",
        markdown(&head, &rows),
        all.len(),
        fmt_p(p)
    ))
}

/// What `sisutil-lab table` prints.
pub fn render(opts: &TableOpts, root: &Path) -> Result<String> {
    let runs = load_runs(opts, root)?;
    if opts.verdict {
        verdict(opts, &runs)
    } else if opts.rank {
        rank_rows(opts, &runs)
    } else if opts.shadow {
        shadow(opts, &runs)
    } else if !opts.search.is_empty() {
        search_rows(opts, &runs)
    } else {
        grid(opts, &runs)
    }
}

/// The analyses declared before a run, each run on its results file
/// (@path), as the report's last section; empty where none was.
pub fn declared_section(r: &Results, path: &Path) -> String {
    let mut out = String::new();
    for args in &r.method.declared {
        let _ = writeln!(
            out,
            "\nDeclared before the run: sisutil-lab table RUN {args}"
        );
        match declared_table(args, path) {
            Ok(t) => out.push_str(&t),
            Err(e) => {
                let _ = writeln!(out, "cannot run it: {e:#}");
            }
        }
    }
    out
}

/// Parses @args as `sisutil-lab table` options with @path as the run.
fn declared_opts(args: &str, path: &Path) -> Result<TableOpts> {
    let mut words = shlex::split(args).ok_or_else(|| anyhow!("unbalanced quotes in {args:?}"))?;
    words.insert(0, path.display().to_string());
    let line = TableLine::try_parse_from(words.iter()).map_err(|e| {
        anyhow!(
            "--declare {args:?}: {}",
            e.to_string().lines().next().unwrap_or("bad options")
        )
    })?;
    Ok(line.opts)
}

/// Checks a declared analysis's options before the run.
pub fn check_declared(args: &str) -> Result<()> {
    declared_opts(args, Path::new("RUN")).map(|_| ())
}

fn declared_table(args: &str, path: &Path) -> Result<String> {
    render(&declared_opts(args, path)?, Path::new(""))
}

/// The command line of a mark, as clap parses it.
#[derive(Debug, Parser)]
#[command(name = "table", no_binary_name = true)]
struct TableLine {
    #[command(flatten)]
    opts: TableOpts,
}

/// The output of a mark's command: `sisutil-lab table ...` or `cat FILE`.
fn run_mark(command: &str, root: &Path) -> Result<String> {
    let words = shlex::split(command).ok_or_else(|| anyhow!("unbalanced quotes"))?;
    match words
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["cat", file] => {
            std::fs::read_to_string(root.join(file)).with_context(|| format!("cannot read {file}"))
        }
        ["sisutil-lab", "table", args @ ..] => {
            let line = TableLine::try_parse_from(args.iter()).map_err(|e| {
                anyhow!("{}", e.to_string().lines().next().unwrap_or("bad options"))
            })?;
            render(&line.opts, root)
        }
        _ => bail!("a mark runs `sisutil-lab table ...` or `cat FILE`"),
    }
}

const OPEN: &str = "<!-- ";
const CLOSE: &str = " -->";
const END: &str = "<!-- end -->";

/// A marked piece of a document.
#[derive(Debug)]
struct Mark {
    /// 1-based line of the mark.
    line: usize,
    command: String,
    /// Byte range of the quoted text.
    body: std::ops::Range<usize>,
    /// The mark ends its line: the quote is whole lines.
    block: bool,
}

/// Whether byte @i of @text is inside a fenced code block (an example of
/// a mark, not a mark), counting the fences from @from, outside any
/// mark's body.
fn fenced(text: &str, from: usize, i: usize, open: bool) -> bool {
    let fences = text[from..i]
        .lines()
        .filter(|l| l.trim_start().starts_with("```"))
        .count();
    open ^ (fences % 2 == 1)
}

fn marks(text: &str) -> Result<Vec<Mark>> {
    let mut out = Vec::new();
    let mut at = 0;
    // Whether a code fence is open at @at.
    let mut in_fence = false;
    while let Some(i) = text[at..].find(OPEN).map(|i| i + at) {
        let line = text[..i].matches('\n').count() + 1;
        if fenced(text, at, i, in_fence) {
            in_fence = true;
            at = i + OPEN.len();
            continue;
        }
        in_fence = false;
        let close = text[i..]
            .find(CLOSE)
            .map(|c| c + i)
            .ok_or_else(|| anyhow!("line {line}: a comment that never closes"))?;
        let command = text[i + OPEN.len()..close].trim().to_string();
        let start = close + CLOSE.len();
        at = start;
        if !(command.starts_with("sisutil-lab ") || command.starts_with("cat ")) {
            continue;
        }
        let end = text[start..]
            .find(END)
            .map(|e| e + start)
            .ok_or_else(|| anyhow!("line {line}: the mark has no {END}"))?;
        let block = text[start..].starts_with('\n');
        let body = if block { start + 1..end } else { start..end };
        out.push(Mark {
            line,
            command,
            body,
            block,
        });
        at = end + END.len();
    }
    Ok(out)
}

/// The first line where two texts part.
fn first_difference(want: &str, have: &str) -> String {
    let (mut w, mut h) = (want.lines(), have.lines());
    for n in 1.. {
        match (w.next(), h.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (a, b) => {
                return format!(
                    "line {n} of the quote is {:?}, the command prints {:?}",
                    b.unwrap_or("(nothing)"),
                    a.unwrap_or("(nothing)")
                )
            }
        }
    }
    unreachable!()
}

/// Checks (or with @update rewrites) every mark of @doc against its
/// command's output, paths taken from @root; returns what differs.
pub fn check_doc(doc: &Path, root: &Path, update: bool) -> Result<Vec<String>> {
    let text =
        std::fs::read_to_string(doc).with_context(|| format!("cannot read {}", doc.display()))?;
    let mut problems = Vec::new();
    let mut fixed = String::new();
    let mut copied = 0;
    let found = marks(&text).with_context(|| doc.display().to_string())?;
    for m in found {
        let have = &text[m.body.clone()];
        let want = match run_mark(&m.command, root) {
            Ok(out) if m.block => out,
            Ok(out) if out.contains('\n') && out.trim_end().contains('\n') => {
                problems.push(format!(
                    "{}:{}: `{}` prints several lines, which cannot stand in a sentence",
                    doc.display(),
                    m.line,
                    m.command
                ));
                continue;
            }
            Ok(out) => out.trim_end().to_string(),
            Err(e) => {
                problems.push(format!(
                    "{}:{}: `{}`: {e:#}",
                    doc.display(),
                    m.line,
                    m.command
                ));
                continue;
            }
        };
        if have != want {
            problems.push(format!(
                "{}:{}: the quote differs from `{}`: {}",
                doc.display(),
                m.line,
                m.command,
                first_difference(&want, have)
            ));
        }
        fixed.push_str(&text[copied..m.body.start]);
        fixed.push_str(&want);
        copied = m.body.end;
    }
    fixed.push_str(&text[copied..]);
    if update && fixed != text {
        std::fs::write(doc, fixed).with_context(|| format!("cannot write {}", doc.display()))?;
    }
    Ok(problems)
}

/// The results folders a document names (`results/NAME/...`) that do not
/// exist under @root.
pub fn missing_folders(doc: &Path, root: &Path) -> Result<Vec<String>> {
    let text =
        std::fs::read_to_string(doc).with_context(|| format!("cannot read {}", doc.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("results/") {
            let tail = &rest[at..];
            let len = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || "/._-".contains(c)))
                .unwrap_or(tail.len());
            let path = tail[..len].trim_end_matches(['.', '/']);
            // "results/<date>-<shape>/" and the like are patterns, not folders.
            let pattern = path.contains("<") || tail[len..].starts_with('<');
            if !pattern && path != "results" && !root.join(path).exists() {
                out.push(format!(
                    "{}:{}: {path} does not exist",
                    doc.display(),
                    i + 1
                ));
            }
            rest = &tail[len..];
        }
    }
    Ok(out)
}

/// The results folders (`results/NAME`) a document names.
#[cfg(test)]
fn cited_folders(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("results/") {
        let tail = &rest[at + "results/".len()..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || "._-".contains(c)))
            .unwrap_or(tail.len());
        if len > 0 {
            out.insert(tail[..len].to_string());
        }
        rest = &tail[len..];
    }
    out
}

/// `sisutil-lab docs [--update] FILE...`.
pub fn docs(files: &[PathBuf], update: bool) -> Result<()> {
    let root = Path::new(".");
    let mut problems = Vec::new();
    for f in files {
        problems.extend(check_doc(f, root, update)?);
        problems.extend(missing_folders(f, root)?);
    }
    for p in &problems {
        println!("{p}");
    }
    if !problems.is_empty() && !update {
        bail!(
            "{} quote(s) no longer match their results (sisutil-lab docs --update writes them)",
            problems.len()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::fixture::results;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sisu-cite-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("results/run")).unwrap();
        results()
            .save(&dir.join("results/run/results.json"))
            .unwrap();
        dir
    }

    fn table(root: &Path, args: &str) -> Result<String> {
        run_mark(&format!("sisutil-lab table {args}"), root)
    }

    #[test]
    fn a_grid_holds_the_reports_numbers() {
        let dir = tmp("grid");
        let t = table(&dir, "results/run --points 16-groups --arms eevdf,util").unwrap();
        // The report's fixture: eevdf 10.70 s, util 11.66 s, 9% worse and
        // significant, as the report's own cell has it.
        assert_eq!(
            t,
            "| time (s) | eevdf | util |\n|---|---|---|\n| 16-groups | 10.70 | 11.66 (-9.0% [-12.9, -5.1]) * |\n"
        );
        let report = report::text(&results());
        assert!(
            report.contains("10.70 +-0.200") && report.contains("(-9.00 pct [-12.9, -5.1]) *"),
            "{report}"
        );
        let t = table(
            &dir,
            "results/run --points 16-groups --arms util --p-values --sd",
        )
        .unwrap();
        assert!(t.contains("| 16-groups | 11.66 ±"), "{t}");
        assert!(t.contains("(-9.0% [-12.9, -5.1], p 0.003)"), "{t}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_verdict_is_the_tests() {
        let dir = tmp("verdict");
        let v = table(&dir, "results/run --points 16-groups --arms util --verdict").unwrap();
        assert!(
            v.starts_with("11.66 s against 10.70 s, -9.0%: behind (p "),
            "{v}"
        );
        assert!(v.ends_with(", 3 runs each)"), "{v}");
        assert!(
            v.contains("behind (p 0.003, 95% CI -12.9% to -5.1%, 3 runs each)"),
            "{v}"
        );
        // The fixture's 1-group point is not significant: no margin, so it
        // says what the interval leaves open and nothing about "level".
        let v = table(&dir, "results/run --points 1-groups --arms util --verdict").unwrap();
        assert!(
            v.contains(": not significant in 3 runs (p ") && v.contains("not excluded"),
            "{v}"
        );
        // A margin that the interval fits in makes it level; one it does
        // not fit in is said to be not shown.
        let v = table(
            &dir,
            "results/run --points 1-groups --arms util --verdict --margin 5",
        )
        .unwrap();
        assert!(v.contains(": level within ±5.0% (equivalence p "), "{v}");
        let v = table(
            &dir,
            "results/run --points 1-groups --arms util --verdict --margin 0.5",
        )
        .unwrap();
        assert!(v.contains("not shown level within ±0.5%"), "{v}");
        let e = table(&dir, "results/run --arms util --verdict --margin 0").unwrap_err();
        assert!(e.to_string().contains("is not a margin"), "{e}");
        let e = table(&dir, "results/run --arms util --verdict").unwrap_err();
        assert!(e.to_string().contains("one point"), "{e}");
        let e = table(&dir, "results/run --arms nope").unwrap_err();
        assert!(e.to_string().contains("no arm \"nope\""), "{e}");
        let e = table(&dir, "results/run --points 3-groups").unwrap_err();
        assert!(e.to_string().contains("no point \"3-groups\""), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_check_names_a_quote_that_drifted_and_update_mends_it() {
        let dir = tmp("drift");
        let doc = dir.join("doc.md");
        let mark = "<!-- sisutil-lab table results/run --points 16-groups --arms eevdf,util -->";
        let inline =
            "<!-- sisutil-lab table results/run --points 16-groups --arms util --verdict -->";
        std::fs::write(
            &doc,
            format!(
                "Intro.\n\n{mark}\n| time (s) | eevdf | util |\n|---|---|---|\n| 16-groups | 10.70 | 11.66 (-9.0%) |\n<!-- end -->\n\nutil: {inline}ahead<!-- end -->.\nSee results/run and results/gone.\n\n```\n{mark}\n```\n"
            ),
        )
        .unwrap();
        let problems = check_doc(&doc, &dir, false).unwrap();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains(":3: the quote differs"),
            "{problems:?}"
        );
        assert!(
            problems[0].contains("(-9.0% [-12.9, -5.1]) *"),
            "{problems:?}"
        );
        assert!(
            problems[1].contains(":9: the quote differs"),
            "{problems:?}"
        );
        let missing = missing_folders(&doc, &dir).unwrap();
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert!(
            missing[0].contains("results/gone does not exist"),
            "{missing:?}"
        );

        check_doc(&doc, &dir, true).unwrap();
        assert!(check_doc(&doc, &dir, false).unwrap().is_empty());
        let text = std::fs::read_to_string(&doc).unwrap();
        assert!(
            text.contains("util: <!--") && text.contains("-->11.66 s against"),
            "{text}"
        );
        assert!(
            text.starts_with("Intro.\n\n") && text.ends_with("```\n"),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn several_runs_side_by_side_and_the_search_figures() {
        let dir = tmp("runs");
        std::fs::create_dir_all(dir.join("results/other")).unwrap();
        results()
            .save(&dir.join("results/other/results.json"))
            .unwrap();
        let t = table(
            &dir,
            "results/run results/other --as A,B --points 16-groups --arms eevdf,util",
        )
        .unwrap();
        assert!(
            t.starts_with("| time (s) | A eevdf | A util | B eevdf | B util |"),
            "{t}"
        );
        let t = table(
            &dir,
            "results/run --points 16-groups --arms util --search found,limit",
        )
        .unwrap();
        assert!(
            t.contains("| arm | time (s) | vs eevdf | found % | limit |"),
            "{t}"
        );
        assert!(
            t.contains("| util | 11.66 | (-9.0% [-12.9, -5.1]) * | 75.0 | 2.0 |"),
            "{t}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pooled_takes_the_run_as_the_unit_and_names_the_builds() {
        let dir = tmp("pooled");
        for (name, shift, build) in [("b", 0.02, ""), ("c", -0.01, "gabc")] {
            let mut r = results();
            r.env.commit = build.into();
            for p in &mut r.points {
                for s in p.samples.get_mut("util").unwrap() {
                    *s.values.get_mut("time").unwrap() *= 1.0 + shift;
                }
            }
            std::fs::create_dir_all(dir.join("results").join(name)).unwrap();
            r.save(&dir.join("results").join(name).join("results.json"))
                .unwrap();
        }
        // Files written before the build was recorded: the scheduler's log.
        std::fs::write(
            dir.join("results/b/scheduler.log"),
            "[INFO] scx_sisutil 0.1.0-g0123456789ab-dirty x86_64-unknown-linux-gnu\n",
        )
        .unwrap();
        let t = table(
            &dir,
            "results/run results/b results/c --as A,B,C --arms eevdf,util --pooled",
        )
        .unwrap();
        assert!(t.contains("| run | build | points | util |"), "{t}");
        assert!(t.contains("| A | unknown | 2 | -5.0% (p 0.03) |"), "{t}");
        assert!(t.contains("| B | g0123456789ab-dirty | 2 | "), "{t}");
        assert!(t.contains("| C | gabc | 2 | "), "{t}");
        assert!(
            t.contains("Across 3 runs, the run as the unit (Student's t on the runs' mean log ratios, 2 df): util -5.")
                && t.contains("against eevdf: behind (p "),
            "{t}"
        );
        assert!(
            t.contains("The runs measured different builds: g0123456789ab-dirty, gabc, unknown."),
            "{t}"
        );
        // One run: its permutation test, about that run alone. Every round
        // of both points has util slower: of the 64 relabellings only the
        // identity and its mirror are as extreme.
        let one = table(
            &dir,
            "results/run --arms eevdf,util --pooled --verdicts-only",
        )
        .unwrap();
        assert!(
            one.starts_with("util against eevdf, the geometric mean change over 2 point(s) of one run: -5.0%, behind in this run (permutation p 0.03"),
            "{one}"
        );
        let e = table(&dir, "results/run --arms util --verdicts-only").unwrap_err();
        assert!(e.to_string().contains("required arguments"), "{e}");
        // Files named alike are one run: two of them, four points.
        let two = table(
            &dir,
            "results/run results/b results/c --as A,A,C --arms eevdf,util --pooled",
        )
        .unwrap();
        assert!(
            two.contains("| A | unknown, g0123456789ab-dirty | 4 | "),
            "{two}"
        );
        assert!(two.contains("Across 2 runs, the run as the unit"), "{two}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_declared_analysis_is_checked_before_and_run_after() {
        assert!(check_declared("--arms util --pooled").is_ok());
        let e = check_declared("--arms util --nonsense").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--declare \"--arms util --nonsense\": "),
            "{e}"
        );
        let dir = tmp("declared");
        let mut r = results();
        r.method.declared = vec!["--points 16-groups --arms util --verdict".into()];
        let path = dir.join("results/run/results.json");
        let s = declared_section(&r, &path);
        assert!(
            s.contains("Declared before the run: sisutil-lab table RUN --points 16-groups --arms util --verdict\n11.66 s against 10.70 s, -9.0%: behind (p 0.003"),
            "{s}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn search_rows_of_several_sections_name_them_and_their_own_metric() {
        let dir = tmp("sections");
        std::fs::create_dir_all(dir.join("results/svc")).unwrap();
        crate::bench::fixture::services()
            .save(&dir.join("results/svc/results.json"))
            .unwrap();
        let t = table(&dir, "results/svc --arms eevdf --search scanned").unwrap();
        assert!(
            t.starts_with("| point | arm | result | vs eevdf | scanned % |"),
            "{t}"
        );
        // Each point's first metric, with its unit: MB/s beside ops/s.
        assert!(
            t.contains("| STREAM, 10 runs, 2 threads | eevdf | 101.00 MB/s |"),
            "{t}"
        );
        assert!(
            t.contains("| YCSB workload A, 4 clients | eevdf | 1000 ops/s |"),
            "{t}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The folders of results/ the repository keeps (those git tracks; all
    /// of them outside a git checkout), less those that hold only their
    /// README: a run declared (committed before it runs) and not yet made,
    /// which no document can cite until its results land.
    fn kept_folders(root: &Path) -> std::collections::BTreeSet<String> {
        let tracked = std::process::Command::new("git")
            .args(["ls-files", "-z", "--", "results"])
            .current_dir(root)
            .output()
            .ok()
            .filter(|o| o.status.success() && !o.stdout.is_empty());
        let files: Vec<(String, String)> = match tracked {
            Some(o) => String::from_utf8_lossy(&o.stdout)
                .split('\0')
                .filter_map(|f| f.strip_prefix("results/")?.split_once('/'))
                .map(|(dir, file)| (dir.to_string(), file.to_string()))
                .collect(),
            None => std::fs::read_dir(root.join("results"))
                .unwrap()
                .map(|e| e.unwrap())
                .filter(|e| e.path().is_dir())
                .flat_map(|e| {
                    let dir = e.file_name().to_string_lossy().into_owned();
                    std::fs::read_dir(e.path()).unwrap().map(move |f| {
                        (
                            dir.clone(),
                            f.unwrap().file_name().to_string_lossy().into_owned(),
                        )
                    })
                })
                .collect(),
        };
        files
            .into_iter()
            .filter(|(_, file)| file != "README.md")
            .map(|(dir, _)| dir)
            .collect()
    }

    /// The guard: every table and verdict the README and docs/ quote is
    /// what its results file gives today, and every results folder they
    /// name exists.
    #[test]
    fn the_documents_say_what_their_results_say() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the lab sits in the workspace");
        let mut docs = vec![root.join("README.md"), root.join("results/README.md")];
        let mut more: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        more.sort();
        docs.extend(more);
        let mut problems = Vec::new();
        let mut quotes = 0;
        for d in &docs {
            let text = std::fs::read_to_string(d).unwrap();
            quotes += marks(&text).unwrap().len();
            problems.extend(check_doc(d, root, false).unwrap());
            problems.extend(missing_folders(d, root).unwrap());
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        assert!(quotes > 0, "the documents quote no results");
        // And every folder the repository keeps in results/ is there
        // because a document cites it (results/README.md, the index, does
        // not count). A user's own runs land in runs/, which git ignores;
        // one copied into results/ but not committed is the user's
        // business, not the documents'.
        let cited: std::collections::BTreeSet<String> = docs
            .iter()
            .filter(|d| !d.ends_with("results/README.md"))
            .flat_map(|d| cited_folders(&std::fs::read_to_string(d).unwrap()))
            .collect();
        let mut uncited: Vec<String> = kept_folders(root)
            .into_iter()
            .filter(|n| !cited.contains(n))
            .collect();
        uncited.sort();
        assert!(uncited.is_empty(), "results no document cites: {uncited:?}");
    }
}
