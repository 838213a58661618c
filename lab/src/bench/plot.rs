//! SVG plots of an A/B run: per section a bar chart of the leading metric
//! with error bars (one bar per arm at every point), and the distributions
//! of CPUs examined and of depth limits per scan for the scheduler's arms.
//!
//! Drawn here rather than with plotters: plotters lays out every label
//! through a font backend (font-kit with fontconfig, or ab_glyph with a
//! font file), also for SVG, and the harness draws its plots inside the
//! busybox guest, which has no fonts. These SVGs leave text to the viewer.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::report;
use super::results::Results;
use super::stat::{self, Better};

const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// A bar chart: groups along x, one bar per series in each group.
pub struct Chart {
    pub title: String,
    pub subtitle: String,
    pub y_label: String,
    pub groups: Vec<String>,
    pub series: Vec<String>,
    /// values[group][series] = (height, error), NaN when missing.
    pub values: Vec<Vec<(f64, f64)>>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A round step for about `n` ticks up to `max`.
fn tick_step(max: f64, n: f64) -> f64 {
    let raw = (max / n).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

impl Chart {
    pub fn svg(&self) -> String {
        let (left, top, bottom) = (70.0, 56.0, 40.0);
        let legend_chars = self.series.iter().map(|s| s.len()).max().unwrap_or(4) as f64;
        let right = 40.0 + legend_chars * 7.0;
        let bar = 14.0;
        let nser = self.series.len().max(1) as f64;
        let label_chars = self.groups.iter().map(|g| g.len()).max().unwrap_or(1) as f64;
        let ngroups = self.groups.len().max(1) as f64;
        // Wide enough for the bars and for the group's label.
        let group_w = (bar * nser + 18.0).max(label_chars * 6.5 + 10.0);
        let plot_w = (group_w * ngroups).max(240.0);
        let group_w = plot_w / ngroups;
        let plot_h = 260.0;
        let title_w = self.title.len().max(self.subtitle.len()) as f64 * 7.5 + 20.0;
        let (w, h) = ((left + plot_w + right).max(title_w), top + plot_h + bottom);
        let max = self
            .values
            .iter()
            .flatten()
            .filter(|(v, _)| v.is_finite())
            .map(|(v, e)| v + e.max(0.0))
            .fold(0.0, f64::max);
        let step = tick_step(if max > 0.0 { max } else { 1.0 }, 5.0);
        let top_val = (max / step).ceil().max(1.0) * step;
        let y = |v: f64| top + plot_h - v / top_val * plot_h;

        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" font-family="sans-serif" font-size="11">"#
        );
        let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{:.0}" y="20" font-size="14" text-anchor="middle">{}</text>"#,
            w / 2.0,
            esc(&self.title)
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.0}" y="38" fill="#555" text-anchor="middle">{}</text>"##,
            w / 2.0,
            esc(&self.subtitle)
        );
        // Axes, grid and ticks.
        let mut v = 0.0;
        while v <= top_val + step / 2.0 {
            let yy = y(v);
            let _ = writeln!(
                s,
                r##"<line x1="{left}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.0}" y="{:.1}" text-anchor="end">{}</text>"##,
                left + plot_w,
                left - 6.0,
                yy + 4.0,
                fmt_tick(v)
            );
            v += step;
        }
        let _ = writeln!(
            s,
            r#"<line x1="{left}" x2="{left}" y1="{top}" y2="{:.1}" stroke="black"/><line x1="{left}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="black"/>"#,
            top + plot_h,
            left + plot_w,
            top + plot_h,
            top + plot_h
        );
        let _ = writeln!(
            s,
            r#"<text transform="translate(16,{:.0}) rotate(-90)" text-anchor="middle">{}</text>"#,
            top + plot_h / 2.0,
            esc(&self.y_label)
        );
        // Bars with error bars.
        for (g, name) in self.groups.iter().enumerate() {
            let x0 = left + g as f64 * group_w + (group_w - bar * nser) / 2.0;
            for (k, (val, err)) in self.values[g].iter().enumerate() {
                if !val.is_finite() {
                    continue;
                }
                let x = x0 + k as f64 * bar;
                let _ = writeln!(
                    s,
                    r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {}</title></rect>"#,
                    y(*val),
                    bar - 2.0,
                    (y(0.0) - y(*val)).max(0.0),
                    PALETTE[k % PALETTE.len()],
                    esc(&self.series[k]),
                    fmt_tick(*val)
                );
                if *err > 0.0 {
                    let cx = x + (bar - 2.0) / 2.0;
                    let (lo, hi) = (y((val - err).max(0.0)), y(val + err));
                    let _ = writeln!(
                        s,
                        r#"<path d="M{:.1} {hi:.1}H{:.1}M{cx:.1} {hi:.1}V{lo:.1}M{:.1} {lo:.1}H{:.1}" stroke="black" fill="none"/>"#,
                        cx - 3.0,
                        cx + 3.0,
                        cx - 3.0,
                        cx + 3.0
                    );
                }
            }
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                left + (g as f64 + 0.5) * group_w,
                top + plot_h + 16.0,
                esc(name)
            );
        }
        // Legend.
        for (k, name) in self.series.iter().enumerate() {
            let ly = top + 10.0 + k as f64 * 18.0;
            let lx = left + plot_w + 16.0;
            let _ = writeln!(
                s,
                r#"<rect x="{lx:.0}" y="{:.0}" width="12" height="12" fill="{}"/><text x="{:.0}" y="{ly:.0}">{}</text>"#,
                ly - 10.0,
                PALETTE[k % PALETTE.len()],
                lx + 18.0,
                esc(name)
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

fn fmt_tick(v: f64) -> String {
    if v == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

pub fn slug(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').to_string()
}

/// The leading metric of a section, one bar per arm at every point.
pub fn metric_chart(r: &Results, section: &str) -> Option<Chart> {
    let pts = r.section_points(section);
    let metric = pts.first()?.point.metrics.first()?.clone();
    let better = match metric.better {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
    };
    Some(Chart {
        title: format!("{section}: {}", metric.name),
        subtitle: format!("{better}; bars: mean, whiskers: +- sample stddev"),
        y_label: format!("{} ({})", metric.name, metric.unit),
        groups: pts.iter().map(|p| p.point.label.clone()).collect(),
        series: r.arms.iter().map(|a| a.name.clone()).collect(),
        values: pts
            .iter()
            .map(|p| {
                r.arms
                    .iter()
                    .map(|a| {
                        let v = p.values(&a.name, &metric.name);
                        if v.is_empty() {
                            (f64::NAN, 0.0)
                        } else {
                            (stat::mean(&v), stat::stddev(&v))
                        }
                    })
                    .collect()
            })
            .collect(),
    })
}

/// Share of scans per depth for each scheduler arm over a section's runs:
/// of CPUs examined (`limit` false) or of the policy's depth limit.
pub fn depth_chart(r: &Results, section: &str, limit: bool) -> Option<Chart> {
    let arms = report::counted_arms(r, section);
    let mut sums: Vec<Vec<u64>> = vec![Vec::new(); arms.len()];
    for p in r.section_points(section) {
        for (k, a) in arms.iter().enumerate() {
            for s in p.samples.get(&a.name).into_iter().flatten() {
                let Some(m) = &s.stats else { continue };
                let h = if limit { &m.limit } else { &m.examined };
                if sums[k].len() < h.len() {
                    sums[k].resize(h.len(), 0);
                }
                for (acc, c) in sums[k].iter_mut().zip(h) {
                    *acc += c;
                }
            }
        }
    }
    let slots = sums.iter().map(Vec::len).max().unwrap_or(0);
    if slots == 0 || sums.iter().all(|h| h.iter().sum::<u64>() == 0) {
        return None;
    }
    let groups = (0..slots)
        .map(|i| {
            if i + 1 == slots {
                format!(">={i}")
            } else {
                i.to_string()
            }
        })
        .collect();
    let values = (0..slots)
        .map(|i| {
            sums.iter()
                .map(|h| {
                    let n: u64 = h.iter().sum();
                    if n == 0 {
                        (f64::NAN, 0.0)
                    } else {
                        (
                            100.0 * h.get(i).copied().unwrap_or(0) as f64 / n as f64,
                            0.0,
                        )
                    }
                })
                .collect()
        })
        .collect();
    let what = if limit {
        "depth limit"
    } else {
        "CPUs searched"
    };
    Some(Chart {
        title: format!("{section}: {what} per scan"),
        subtitle: "share of the scans of all runs of the section".into(),
        y_label: "% of scans".into(),
        groups,
        series: arms.iter().map(|a| a.name.clone()).collect(),
        values,
    })
}

/// What a scan's miss costs, per section: the wait from placement to first
/// run of the wakees whose scan found an idle CPU, missed one that
/// existed, or had none to find (a group per point and kind), median and
/// 99th percentile for each scheduler arm, from every run's histograms.
pub fn waits_chart(r: &Results, section: &str) -> Option<Chart> {
    use sisutil_proto::waits;
    let arms = report::counted_arms(r, section);
    let mut groups = Vec::new();
    let mut values = Vec::new();
    for p in r.section_points(section) {
        for kind in sisutil_proto::stats::SCAN_WAITS {
            let row: Vec<(f64, f64)> = arms
                .iter()
                .flat_map(|a| {
                    let hist = report::summed_waits(
                        p.samples.get(&a.name).map_or(&[][..], Vec::as_slice),
                        kind,
                    );
                    [0.5, 0.99].map(|q| {
                        let us = waits::quantile(&hist, q).map_or(f64::NAN, |ns| ns / 1000.0);
                        (us, 0.0)
                    })
                })
                .collect();
            if row.iter().any(|v| v.0.is_finite()) {
                groups.push(format!("{} {kind}", p.point.label));
                values.push(row);
            }
        }
    }
    if groups.is_empty() {
        return None;
    }
    Some(Chart {
        title: format!("{section}: wait from placement to first run"),
        subtitle: "by what the scan found; every run's wakeups".into(),
        y_label: "wait (us)".into(),
        groups,
        series: arms
            .iter()
            .flat_map(|a| [format!("{} p50", a.name), format!("{} p99", a.name)])
            .collect(),
        values,
    })
}

/// Writes every chart of `r` into `dir`; returns the files written.
pub fn write_all(r: &Results, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    for section in r.sections() {
        let charts = [
            (metric_chart(r, &section), ""),
            (depth_chart(r, &section, false), "-searched"),
            (depth_chart(r, &section, true), "-limit"),
            (waits_chart(r, &section), "-waits"),
        ];
        for (chart, suffix) in charts {
            let Some(chart) = chart else { continue };
            let path = dir.join(format!("{}{suffix}.svg", slug(&section)));
            std::fs::write(&path, chart.svg())
                .with_context(|| format!("cannot write {}", path.display()))?;
            written.push(path);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::fixture::results;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(11.8, 5.0), 2.5);
        assert_eq!(tick_step(100.0, 5.0), 20.0);
        assert_eq!(tick_step(0.9, 5.0), 0.2);
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("hackbench process pipe"), "hackbench-process-pipe");
        assert_eq!(
            slug("wakeup latency, 2 message thread(s)"),
            "wakeup-latency-2-message-thread-s"
        );
    }

    #[test]
    fn bar_chart_has_a_bar_and_error_bar_per_value() {
        let r = results();
        let c = metric_chart(&r, "hackbench process socket").unwrap();
        assert_eq!(c.groups, ["1-groups", "16-groups"]);
        assert_eq!(c.series, ["eevdf", "util"]);
        let svg = c.svg();
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(
            svg.matches("<rect x=").count(),
            4 + 2,
            "4 bars and 2 legend keys"
        );
        assert_eq!(svg.matches("<path d=").count(), 4);
        assert!(svg.contains("lower is better"));
        assert!(svg.contains("hackbench process socket: time"));
    }

    #[test]
    fn waits_chart_has_each_kinds_median_and_tail_per_arm() {
        use sisutil_proto::stats::WaitMetrics;
        use sisutil_proto::waits::{slot_range, SLOTS};
        let mut r = results();
        assert!(
            waits_chart(&r, "hackbench process socket").is_none(),
            "no waits, no chart"
        );
        let slot_hist = |slot: usize, n: u64| {
            let mut h = vec![0u64; SLOTS];
            h[slot] = n;
            h
        };
        for s in r.points[0].samples.get_mut("util").unwrap() {
            let m = s.stats.as_mut().unwrap();
            m.waits
                .insert("found".into(), WaitMetrics::of(9, 0, &slot_hist(10, 9)));
            m.waits
                .insert("missed".into(), WaitMetrics::of(1, 0, &slot_hist(30, 1)));
        }
        let c = waits_chart(&r, "hackbench process socket").unwrap();
        assert_eq!(c.groups, ["1-groups found", "1-groups missed"]);
        assert_eq!(c.series, ["util p50", "util p99"]);
        let (found, missed) = (c.values[0][0].0, c.values[1][1].0);
        let us = |s: usize| {
            let (lo, hi) = slot_range(s);
            (lo as f64 / 1000.0, hi as f64 / 1000.0)
        };
        assert!((us(10).0..=us(10).1).contains(&found), "{found}");
        assert!((us(30).0..=us(30).1).contains(&missed), "{missed}");
    }

    #[test]
    fn depth_chart_sums_the_scheduler_arms() {
        let r = results();
        let c = depth_chart(&r, "hackbench process socket", false).unwrap();
        assert_eq!(c.series, ["util"], "only the scheduler's arms");
        // Each sample examined 0 CPUs 6 times of 10, 1 CPU 4 times.
        assert_eq!(c.values[0][0].0, 60.0);
        assert_eq!(c.values[1][0].0, 40.0);
        assert_eq!(c.groups.last().unwrap(), ">=4");
    }

    #[test]
    fn writes_files() {
        let dir = std::env::temp_dir().join(format!("sisu-plot-{}", std::process::id()));
        let files = write_all(&results(), &dir).unwrap();
        assert_eq!(files.len(), 3);
        for f in &files {
            assert!(std::fs::read_to_string(f).unwrap().contains("</svg>"));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
