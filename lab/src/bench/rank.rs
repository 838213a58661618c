//! Does a rule that finds more idle CPUs run the load faster? For every
//! point of a run whose arms include several rules (util, prop, full,
//! none) and whose scheduler judged those rules in the shadow
//! (`--scheduler-args "--shadow all"`), the rules ranked two ways: by the
//! shadow's found-rate (every rule judged on the same wakeups) and by the
//! point's measured result when each rule was the active one, with
//! Kendall's rank correlation between the two.
//!
//! With four rules a point's correlation alone can never be significant,
//! so the points are pooled: Kendall's S (concordant minus discordant
//! pairs) summed over the points, against its exact distribution when
//! every point's measured ranking is a random permutation, independent of
//! the found-rates (per point by enumerating the permutations, ties in
//! the found-rates kept; over points by convolution). The crates at hand
//! give Kendall's tau with a normal approximation, which four items per
//! point do not support; the exact test is a few lines.

use std::collections::BTreeMap;

use super::arms::{Arm, ArmKind};
use super::results::{PointResult, Results};
use super::stat::{self, Better};

/// One point's two rankings.
#[derive(Clone, Debug, PartialEq)]
pub struct PointRank {
    pub section: String,
    pub label: String,
    pub metric: String,
    /// The rules, with the shadow's found-rate (%) and the measured mean.
    pub rules: Vec<(String, f64, f64)>,
    /// Kendall's S: concordant minus discordant pairs.
    pub s: i64,
    /// Kendall's tau-b.
    pub tau: f64,
    /// Whether the best and the worst rule's results differ by Welch's
    /// test at the run's alpha: a ranking of results that do not differ is
    /// a ranking of noise.
    pub spread_significant: bool,
    better: Better,
}

/// The rules a run's arms measured as themselves: plain policy arms that
/// the shadow can judge (no small-LLC rule, no options).
fn rule_arms(r: &Results) -> Vec<&Arm> {
    r.arms
        .iter()
        .filter(|a| match &a.kind {
            ArmKind::Scx {
                policy,
                small_llc: 0,
                sis_cache: false,
                sis_current: false,
                trace_every: 0,
            } => policy.can_shadow() && a.name == policy.name(),
            _ => false,
        })
        .collect()
}

/// The shadow's found-rate of each rule at @p, pooled over every sample
/// of every arm that judged it: the same wakeups for all rules of a sample.
fn found_rates(p: &PointResult) -> BTreeMap<String, f64> {
    let mut counts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for m in p
        .samples
        .values()
        .flatten()
        .filter_map(|s| s.stats.as_ref())
    {
        for (rule, rm) in &m.rules {
            let c = counts.entry(rule.clone()).or_default();
            c.0 += rm.would_find;
            c.1 += rm.would_find + rm.would_miss;
        }
    }
    counts
        .into_iter()
        .filter(|(_, (_, n))| *n > 0)
        .map(|(r, (f, n))| (r, 100.0 * f as f64 / n as f64))
        .collect()
}

fn sign(x: f64) -> i64 {
    if x > 0.0 {
        1
    } else if x < 0.0 {
        -1
    } else {
        0
    }
}

/// Kendall's S of @x against @y (ties count 0).
pub fn kendall_s(x: &[f64], y: &[f64]) -> i64 {
    let mut s = 0;
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            s += sign(x[i] - x[j]) * sign(y[i] - y[j]);
        }
    }
    s
}

/// Kendall's tau-b: S over the geometric mean of the untied pairs.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> f64 {
    let pairs = |v: &[f64]| {
        let mut n = 0i64;
        for i in 0..v.len() {
            for j in i + 1..v.len() {
                n += (v[i] != v[j]) as i64;
            }
        }
        n
    };
    let d = ((pairs(x) * pairs(y)) as f64).sqrt();
    if d == 0.0 {
        0.0
    } else {
        kendall_s(x, y) as f64 / d
    }
}

/// Every permutation of 0..n (n small), in no particular order.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for k in 0..=p.len() {
            let mut q = p.clone();
            q.insert(k, n - 1);
            out.push(q);
        }
    }
    out
}

/// The distribution of S at one point under the null: @x's found-rates
/// against every ordering of distinct results, equally likely. As
/// (S, probability) pairs.
pub fn null_of(x: &[f64]) -> BTreeMap<i64, f64> {
    let perms = permutations(x.len());
    let w = 1.0 / perms.len() as f64;
    let mut d = BTreeMap::new();
    for p in perms {
        let y: Vec<f64> = p.iter().map(|&k| k as f64).collect();
        *d.entry(kendall_s(x, &y)).or_insert(0.0) += w;
    }
    d
}

/// The distribution of a sum of independent S's.
fn convolve(a: &BTreeMap<i64, f64>, b: &BTreeMap<i64, f64>) -> BTreeMap<i64, f64> {
    let mut d = BTreeMap::new();
    for (sa, pa) in a {
        for (sb, pb) in b {
            *d.entry(sa + sb).or_insert(0.0) += pa * pb;
        }
    }
    d
}

/// One-sided p-value of the summed S of @points: the chance, if the
/// measured rankings were random, of a sum at least this large.
pub fn pooled_p(points: &[PointRank]) -> Option<(i64, f64)> {
    if points.is_empty() {
        return None;
    }
    let mut d = BTreeMap::from([(0, 1.0)]);
    for p in points {
        let x: Vec<f64> = p.rules.iter().map(|r| r.1).collect();
        d = convolve(&d, &null_of(&x));
    }
    let s: i64 = points.iter().map(|p| p.s).sum();
    let tail: f64 = d.range(s..).map(|(_, p)| p).sum();
    Some((s, tail.min(1.0)))
}

/// The rankings of every point of @r that has at least three rules both
/// measured and judged, on the point's first metric.
pub fn ranks(r: &Results) -> Vec<PointRank> {
    let arms = rule_arms(r);
    let mut out = Vec::new();
    for p in &r.points {
        let Some(metric) = p.point.metrics.first() else {
            continue;
        };
        let found = found_rates(p);
        let rules: Vec<(String, f64, Vec<f64>)> = arms
            .iter()
            .filter_map(|a| {
                let f = *found.get(&a.name)?;
                let vals = p.values(&a.name, &metric.name);
                (!vals.is_empty()).then(|| (a.name.clone(), f, vals))
            })
            .collect();
        if rules.len() < 3 {
            continue;
        }
        // Ranked by how well each did: higher is better on both axes.
        let good = |v: f64| match metric.better {
            Better::Higher => v,
            Better::Lower => -v,
        };
        let x: Vec<f64> = rules.iter().map(|r| r.1).collect();
        let y: Vec<f64> = rules.iter().map(|r| good(stat::mean(&r.2))).collect();
        let best = rules
            .iter()
            .max_by(|a, b| good(stat::mean(&a.2)).total_cmp(&good(stat::mean(&b.2))));
        let worst = rules
            .iter()
            .min_by(|a, b| good(stat::mean(&a.2)).total_cmp(&good(stat::mean(&b.2))));
        let spread_significant = match (best, worst) {
            (Some(b), Some(w)) => stat::significant(&b.2, &w.2, r.method.alpha),
            _ => false,
        };
        out.push(PointRank {
            section: p.point.section.clone(),
            label: p.point.label.clone(),
            metric: metric.name.clone(),
            rules: rules
                .iter()
                .map(|(n, f, v)| (n.clone(), *f, stat::mean(v)))
                .collect(),
            s: kendall_s(&x, &y),
            tau: kendall_tau_b(&x, &y),
            spread_significant,
            better: metric.better,
        });
    }
    out
}

impl PointRank {
    /// The rules from the most found to the least, and from the best
    /// result to the worst.
    pub fn orders(&self) -> (String, String) {
        let mut by_found = self.rules.clone();
        by_found.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut by_result = self.rules.clone();
        by_result.sort_by(|a, b| match self.better {
            Better::Higher => b.2.total_cmp(&a.2),
            Better::Lower => a.2.total_cmp(&b.2),
        });
        let names = |v: &[(String, f64, f64)]| {
            v.iter()
                .map(|r| r.0.as_str())
                .collect::<Vec<_>>()
                .join(" > ")
        };
        (names(&by_found), names(&by_result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kendall_counts_concordant_minus_discordant_pairs() {
        let x = [10.0, 50.0, 80.0, 90.0];
        assert_eq!(kendall_s(&x, &[1.0, 2.0, 3.0, 4.0]), 6);
        assert_eq!(kendall_s(&x, &[4.0, 3.0, 2.0, 1.0]), -6);
        assert_eq!(kendall_s(&x, &[2.0, 1.0, 3.0, 4.0]), 4);
        assert_eq!(kendall_tau_b(&x, &[1.0, 2.0, 3.0, 4.0]), 1.0);
        // Ties: tau-b divides by the untied pairs.
        let tied = [0.0, 0.0, 80.0, 90.0];
        assert_eq!(kendall_s(&tied, &[1.0, 2.0, 3.0, 4.0]), 5);
        assert!((kendall_tau_b(&tied, &[1.0, 2.0, 3.0, 4.0]) - 5.0 / 30f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn the_null_of_one_point_is_symmetric_and_sums_to_one() {
        let d = null_of(&[1.0, 2.0, 3.0, 4.0]);
        let total: f64 = d.values().sum();
        assert!((total - 1.0).abs() < 1e-12);
        assert!(
            (d[&6] - 1.0 / 24.0).abs() < 1e-12,
            "one ordering agrees fully"
        );
        assert!((d[&6] - d[&-6]).abs() < 1e-12);
        assert_eq!(
            d.keys().copied().collect::<Vec<_>>(),
            [-6, -4, -2, 0, 2, 4, 6]
        );
    }

    fn point(s: i64) -> PointRank {
        PointRank {
            section: "s".into(),
            label: "l".into(),
            metric: "time".into(),
            rules: vec![
                ("none".into(), 0.0, 0.0),
                ("util".into(), 20.0, 0.0),
                ("prop".into(), 60.0, 0.0),
                ("full".into(), 90.0, 0.0),
            ],
            s,
            tau: s as f64 / 6.0,
            spread_significant: false,
            better: Better::Lower,
        }
    }

    #[test]
    fn pooling_points_can_be_significant_where_one_cannot() {
        let (s, p) = pooled_p(&[point(6)]).unwrap();
        assert_eq!(s, 6);
        assert!(
            (p - 1.0 / 24.0).abs() < 1e-12,
            "one perfect point: p = 1/24"
        );
        let (_, p) = pooled_p(&[point(6), point(6), point(4)]).unwrap();
        assert!(p < 0.01, "{p}");
        let (_, p) = pooled_p(&[point(0), point(2), point(-2)]).unwrap();
        assert!(p > 0.4, "{p}");
        assert!(pooled_p(&[]).is_none());
    }

    #[test]
    fn orders_read_best_first() {
        let mut p = point(0);
        p.rules[0].2 = 3.0;
        p.rules[1].2 = 1.0;
        p.rules[2].2 = 2.0;
        p.rules[3].2 = 4.0;
        let (found, result) = p.orders();
        assert_eq!(found, "full > prop > util > none");
        assert_eq!(result, "util > prop > none > full", "lower time is better");
    }
}
