//! Is scx_sisutil's SIS_UTIL the kernel's? Per point of a results file,
//! the kernel's own counters (an `eevdf` arm the observer counted) beside
//! a policy arm's, summed over the iterations: the LLC utilisation their
//! scans' depth came from (the kernel's also without util_est, and the
//! policy's estimator run on the kernel's own load), found-rate,
//! the share of scans at depth 0, the mean depth, the distance between the
//! two depth distributions, and the waits by what the scan found.
//!
//! The distance is the earth mover's: the least mass times distance (in
//! CPUs of depth) that turns one normalised histogram into the other, which
//! for distributions on a line is the area between their cumulative
//! distributions, sum over d of |F_a(d) - F_b(d)|. It reads in CPUs: 0.5
//! is half a CPU of depth on average.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use super::report::{hist_mean, summed, summed_waits};
use super::results::{Results, Sample};
use super::table::num;
use sisutil_proto::stats::{LlcMetrics, Metrics};

#[derive(Debug, Args)]
pub struct FidelityOpts {
    /// A results file of `sisutil-lab bench`
    pub results: PathBuf,
    /// The arm the observer counted the kernel in
    #[arg(long, default_value = "eevdf")]
    pub kernel: String,
    /// The policy arm to set beside it
    #[arg(long, default_value = "util")]
    pub arm: String,
}

pub fn run(o: &FidelityOpts) -> Result<()> {
    let r = Results::load(&o.results)?;
    print!("{}", table(&r, &o.kernel, &o.arm)?);
    Ok(())
}

/// The earth mover's distance between two histograms over the same
/// slots, each normalised to 1 (0 if either is empty).
pub fn emd(a: &[u64], b: &[u64]) -> f64 {
    let (na, nb) = (a.iter().sum::<u64>(), b.iter().sum::<u64>());
    if na == 0 || nb == 0 {
        return 0.0;
    }
    let (mut fa, mut fb, mut d) = (0.0, 0.0, 0.0);
    for i in 0..a.len().max(b.len()) {
        fa += a.get(i).copied().unwrap_or(0) as f64 / na as f64;
        fb += b.get(i).copied().unwrap_or(0) as f64 / nb as f64;
        d += (fa - fb).abs();
    }
    d
}

fn metrics(samples: Option<&Vec<Sample>>) -> Option<(Metrics, &[Sample])> {
    let ss = samples?;
    let m = summed(ss.iter().filter_map(|s| s.stats.as_ref()))?;
    Some((m, ss.as_slice()))
}

/// The utilisation the scans of @ss read (% of their LLC's capacity,
/// what @pct takes from an LLC's record), the mean over every counted
/// scan of every LLC, or None. A scan starts from a busy CPU, so a 0 is a
/// file from before the count.
fn scan_util(ss: &[Sample], pct: fn(&LlcMetrics) -> f64) -> Option<f64> {
    let (mut w, mut n) = (0.0, 0u64);
    let llcs = ss
        .iter()
        .filter_map(|s| s.stats.as_ref())
        .flat_map(|m| m.llcs.values());
    for l in llcs.filter(|l| pct(l) > 0.0) {
        w += pct(l) * l.scanned as f64;
        n += l.scanned;
    }
    (n > 0).then(|| w / n as f64)
}

/// The kernel's utilisation at scans, with util_avg's alone in brackets
/// where the file has it (the difference is what util_est adds).
fn kernel_util(ss: &[Sample]) -> String {
    match (
        scan_util(ss, |l| l.scan_util_pct),
        scan_util(ss, |l| l.scan_util_avg_pct),
    ) {
        (Some(u), Some(a)) => format!("{} ({})", num(u), num(a)),
        (Some(u), None) => num(u),
        _ => "-".into(),
    }
}

/// A figure, or "-" where the file has none.
fn or_dash(v: Option<f64>) -> String {
    v.map_or("-".into(), num)
}

/// The p50 of the waits of @kind, in us, or "-".
fn p50(ss: &[Sample], kind: &str) -> String {
    let h = summed_waits(ss, kind);
    sisutil_proto::waits::quantile(&h, 0.5).map_or("-".into(), |ns| num(ns / 1000.0))
}

pub fn table(r: &Results, kernel: &str, arm: &str) -> Result<String> {
    let k_a = format!("{kernel} / {arm}");
    let mut rows = vec![vec![
        "point".to_string(),
        format!("LLC util % at scans {kernel} (util_avg alone) / {arm}"),
        format!("{arm}'s estimate on {kernel}'s load %"),
        format!("found % {k_a}"),
        format!("depth 0 % {k_a}"),
        format!("mean depth {k_a}"),
        "depth EMD (CPUs)".to_string(),
        format!("found wait p50 us {k_a}"),
        format!("missed wait p50 us {k_a}"),
    ]];
    let pair = |x: String, y: String| format!("{x} / {y}");
    for p in &r.points {
        let (Some((k, ks)), Some((a, as_))) =
            (metrics(p.samples.get(kernel)), metrics(p.samples.get(arm)))
        else {
            continue;
        };
        let zero = |m: &Metrics| {
            100.0 * m.limit.first().copied().unwrap_or(0) as f64 / m.scans.max(1) as f64
        };
        rows.push(vec![
            format!("{} {}", p.point.section, p.point.label),
            pair(
                kernel_util(ks),
                or_dash(scan_util(as_, |l| l.scan_util_pct)),
            ),
            or_dash(scan_util(ks, |l| l.scan_est_pct)),
            pair(num(k.found_rate()), num(a.found_rate())),
            pair(num(zero(&k)), num(zero(&a))),
            pair(num(hist_mean(&k.limit)), num(hist_mean(&a.limit))),
            num(emd(&k.limit, &a.limit)),
            pair(p50(ks, "found"), p50(as_, "found")),
            pair(p50(ks, "missed"), p50(as_, "missed")),
        ]);
    }
    if rows.len() == 1 {
        bail!("no point has the statistics of both {kernel} (observed) and {arm}");
    }
    // A Markdown table, as `table` prints, so that documents quote it.
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        out += &format!("| {} |\n", row.join(" | "));
        if i == 0 {
            out += &format!("|{}\n", "---|".repeat(row.len()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emd_is_the_mass_moved_times_the_distance() {
        assert_eq!(emd(&[1, 2, 3], &[2, 4, 6]), 0.0);
        assert_eq!(emd(&[1, 0, 0], &[0, 1, 0]), 1.0);
        assert_eq!(emd(&[1, 0, 0], &[0, 0, 1]), 2.0);
        // Half the mass moved by 2: 1.
        assert!((emd(&[2, 0, 0], &[1, 0, 1]) - 1.0).abs() < 1e-12);
        assert_eq!(emd(&[], &[1]), 0.0);
    }

    #[test]
    fn a_file_without_the_kernel_counted_is_refused() {
        let r = super::super::fixture::results();
        let e = table(&r, "eevdf", "util").unwrap_err().to_string();
        assert!(e.contains("no point has the statistics"), "{e}");
    }

    #[test]
    fn the_kernel_beside_util_per_point() {
        let mut r = super::super::fixture::results();
        for p in &mut r.points {
            let util = p.samples["util"].clone();
            let mut kernel = util.clone();
            for s in &mut kernel {
                let m = s.stats.as_mut().unwrap();
                m.policy = "kernel".into();
                // All the scans one CPU deeper than util's.
                m.limit.insert(0, 0);
                // Two LLCs: 30 scans at 60 %, 10 at 20 %: 50 % at scans.
                m.llcs.clear();
                for (i, (pct, n)) in [(60.0, 30), (20.0, 10)].into_iter().enumerate() {
                    let l = m.llcs.entry(i as u32).or_default();
                    l.scan_util_pct = pct;
                    l.scan_util_avg_pct = pct / 2.0;
                    l.scan_est_pct = pct / 4.0;
                    l.scanned = n;
                }
            }
            p.samples.insert("eevdf".into(), kernel);
        }
        let t = table(&r, "eevdf", "util").unwrap();
        let line = t.lines().find(|l| l.contains("1-groups")).unwrap();
        assert!(line.contains(" 1.000 "), "{t}");
        assert!(line.contains("| 50.00 (25.00) / - | 12.50 |"), "{t}");
    }
}
