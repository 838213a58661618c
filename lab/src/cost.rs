//! The summary of `scripts/cost.sh`: its guest prints one RESULT line per
//! run (`key=value` pairs, arms interleaved within each round); this sets
//! the arms side by side, each figure's mean and sample standard
//! deviation, and for every arm after the first its change against the
//! first and Welch's p over the rounds, so that a sentence about a cost
//! can say whether the difference is significant.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::bench::{cite, stat};

/// The figures of a run, in the table's order: (RESULT key, head, scale).
const COLUMNS: [(&str, &str, f64); 4] = [
    ("select_cpu_ns", "select_cpu ns per call", 1.0),
    ("running_ns", "running ns per call", 1.0),
    ("updater_cpu_pct", "userspace CPU, % of one CPU", 1.0),
    ("rss_kb", "RSS, MiB", 1.0 / 1024.0),
];

/// Each arm's runs, in the order the arms first appear: per figure, its
/// values over the rounds.
type Arms = Vec<(String, BTreeMap<&'static str, Vec<f64>>)>;

fn parse(text: &str) -> Result<Arms> {
    let mut arms: Arms = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix("RESULT ") else {
            continue;
        };
        let kv: BTreeMap<&str, &str> = rest
            .split_whitespace()
            .filter_map(|f| f.split_once('='))
            .collect();
        let Some(&arm) = kv.get("arm") else {
            bail!("line {}: a RESULT without arm=", i + 1);
        };
        let at = match arms.iter().position(|(a, _)| a == arm) {
            Some(at) => at,
            None => {
                arms.push((arm.to_string(), BTreeMap::new()));
                arms.len() - 1
            }
        };
        for (key, _, scale) in COLUMNS {
            // A figure an older guest did not print is left out, not zero.
            if let Some(v) = kv.get(key).and_then(|v| v.parse::<f64>().ok()) {
                arms[at].1.entry(key).or_default().push(v * scale);
            }
        }
    }
    if arms.is_empty() {
        bail!("no RESULT line");
    }
    Ok(arms)
}

/// One cell: mean ± sd, and against @base's values the change and p.
fn cell(vals: &[f64], base: Option<&[f64]>) -> String {
    if vals.is_empty() {
        return "-".into();
    }
    let (m, sd) = (stat::mean(vals), stat::stddev(vals));
    let digits = if m.abs() >= 100.0 { 0 } else { 1 };
    let mut out = format!("{m:.digits$} ± {sd:.digits$}");
    if let Some(b) = base {
        out.push_str(&cite::relative_change(b, vals));
    }
    out
}

/// The table as Markdown, the first arm the base of every change.
pub fn summary(text: &str) -> Result<String> {
    let arms = parse(text)?;
    let cols: Vec<_> = COLUMNS
        .iter()
        .filter(|(k, _, _)| arms.iter().any(|(_, f)| f.contains_key(k)))
        .collect();
    let mut head = vec!["arm".to_string()];
    head.extend(cols.iter().map(|(_, h, _)| h.to_string()));
    let base = &arms[0].1;
    let rows: Vec<Vec<String>> = arms
        .iter()
        .enumerate()
        .map(|(i, (arm, figures))| {
            let mut row = vec![arm.clone()];
            row.extend(cols.iter().map(|(key, _, _)| {
                let vals = figures.get(key).map(Vec::as_slice).unwrap_or(&[]);
                let b = (i > 0).then(|| base.get(key).map(Vec::as_slice)).flatten();
                cell(vals, b)
            }));
            row
        })
        .collect();
    Ok(cite::markdown(&head, &rows))
}

/// `sisutil-lab cost-summary RUNS`: prints the table.
pub fn main(runs: &Path) -> Result<()> {
    let text =
        std::fs::read_to_string(runs).with_context(|| format!("cannot read {}", runs.display()))?;
    print!("{}", summary(&text)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arms_side_by_side_with_their_change_against_the_first() {
        let runs = "noise\n\
            RESULT arm=off round=1 select_cpu_ns=100 running_ns=50 rss_kb=2048\n\
            RESULT arm=on round=1 select_cpu_ns=200 running_ns=50 rss_kb=2048\n\
            RESULT arm=off round=2 select_cpu_ns=110 running_ns=52 rss_kb=2048\n\
            RESULT arm=on round=2 select_cpu_ns=210 running_ns=48 rss_kb=2048\n";
        let t = summary(runs).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "| arm | select_cpu ns per call | running ns per call | RSS, MiB |"
        );
        assert!(
            lines[2].starts_with("| off | 105 ± 7 | 51.0 ± 1.4 | 2.0 ± 0.0 |"),
            "{t}"
        );
        // 205 against 105: +95.2 %, and the two rounds each apart by 100.
        assert!(
            lines[3].starts_with("| on | 205 ± 7 (+95.2% [+66.3, +124.2], p 0.0"),
            "{t}"
        );
        assert!(summary("nothing here").is_err());
        assert!(summary("RESULT round=1").is_err());
    }
}
