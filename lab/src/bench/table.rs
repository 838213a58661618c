//! The pieces of the text tables: a review-style cell, a number at the
//! precision the review prints, aligned columns and a banner. The report and
//! the review's own layouts are both made of them.

use std::fmt::Write as _;

use super::stat::{self, Better};

/// "4.64 +-0.02 (0.00 pct)" and a "*" when significant.
pub fn cell(vals: &[f64], base: &[f64], better: Better, alpha: f64, is_base: bool) -> String {
    if vals.is_empty() {
        return "-".into();
    }
    let m = stat::mean(vals);
    let pct = if is_base {
        0.0
    } else {
        stat::change_pct(stat::mean(base), m, better)
    };
    let star = if !is_base && stat::significant(vals, base, alpha) {
        " *"
    } else {
        ""
    };
    format!(
        "{} +-{} ({pct:.2} pct){star}",
        num(m),
        num(stat::stddev(vals))
    )
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
