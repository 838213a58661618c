//! The pieces of the text tables: a review-style cell, a number at the
//! precision the review prints, aligned columns and a banner. The report and
//! the review's own layouts are both made of them.

use std::fmt::Write as _;

use super::stat::{self, Better};
use super::verdict::{self, Margin};

/// "4.64 +-0.02 (-2.10 pct [-5.3, +1.1])": the mean, its spread, and
/// the change against the base with its 95 % confidence interval, marked
/// "*" where significant and "=" where inside @margin.
pub fn cell(
    vals: &[f64],
    base: &[f64],
    better: Better,
    alpha: f64,
    is_base: bool,
    margin: Option<&Margin>,
) -> String {
    if vals.is_empty() {
        return "-".into();
    }
    let m = stat::mean(vals);
    let spread = format!("{} +-{}", num(m), num(stat::stddev(vals)));
    if is_base {
        return format!("{spread} (0.00 pct)");
    }
    let pct = stat::change_pct(stat::mean(base), m, better);
    match verdict::judge(vals, base, better, alpha, margin) {
        Some(j) => format!(
            "{spread} ({pct:.2} pct [{:+.1}, {:+.1}]){}",
            j.change.lo,
            j.change.hi,
            j.mark()
        ),
        None => format!("{spread} ({pct:.2} pct)"),
    }
}

/// "-9.0% [-12.9, -5.1] *": a change against the base with its 95 %
/// confidence interval and its mark (`*` significant, `=` inside
/// @margin); the change alone where no test is defined.
pub fn change_with_ci(
    vals: &[f64],
    base: &[f64],
    better: Better,
    alpha: f64,
    margin: Option<&Margin>,
) -> String {
    let pct = stat::change_pct(stat::mean(base), stat::mean(vals), better);
    match verdict::judge(vals, base, better, alpha, margin) {
        Some(j) => format!(
            "{pct:+.1}% [{:+.1}, {:+.1}]{}",
            j.change.lo,
            j.change.hi,
            j.mark()
        ),
        None => format!("{pct:+.1}%"),
    }
}

pub fn num(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

pub fn align(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.len())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, s)| {
                if c == 0 {
                    format!("{s:>w$}", w = widths[c])
                } else {
                    format!("{s:<w$}", w = widths[c])
                }
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("   ").trim_end());
    }
    out
}

pub fn banner(title: &str) -> String {
    let rule = "~".repeat(title.len());
    format!("{rule}\n{title}\n{rule}\n")
}
