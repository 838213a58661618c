//! A change pooled over many points and runs, with the run as the unit.
//!
//! Points of one run are not independent draws: they share a boot of the
//! VM, its host's load over the hour, the build, and whatever an arm
//! carries from point to point, so an effect of the run moves all of them
//! at once (a policy that did not change swung from 11 of 24 points ahead
//! to 18 of 24 behind between two runs). Counting points as if each were
//! a coin toss (the sign test) then finds "effects" that are one run's.
//! So:
//!
//! - A change is the log of the ratio of the arm's mean to the base's
//!   (signed so that positive is better), which a swap of the two arms
//!   turns into its exact negative; averaged, exp(mean) - 1 is the
//!   geometric mean of the ratios, printed in %.
//! - Within a run the statistic is the mean over its points of that
//!   change, and its p comes from a permutation test that
//!   swaps the two arms' samples within each round (the arms of a round ran
//!   back to back, so under "no difference" either label is as likely),
//!   every point's rounds at once: the points' dependence stays in every
//!   permutation. Its verdict is about that run alone.
//! - Across runs each run's mean is one value, and Student's t on those
//!   values (runs - 1 degrees of freedom) gives the interval and the test:
//!   runs are separate boots, the one level at which draws are
//!   independent. Few runs give a wide interval; that is what few runs
//!   know.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::results::PointResult;
use super::stat::{self, Better, Change};
use super::verdict::{self, Judged, Margin};

/// Permutations per within-run test; with a fixed seed the p a document
/// quotes is the one the command prints again.
pub const PERMUTATIONS: u32 = 10_000;
const SEED: u64 = 0x0051_535f_5554_494c;

/// One point's paired samples of the arm and the base, round by round.
struct Pairs {
    better: Better,
    arm: Vec<f64>,
    base: Vec<f64>,
}

impl Pairs {
    /// The log ratio of the arm's mean to the base's, positive = better.
    fn change(&self, swap: &[bool]) -> f64 {
        let (mut a, mut b) = (0.0, 0.0);
        for (i, &s) in swap.iter().enumerate() {
            let (x, y) = if s {
                (self.base[i], self.arm[i])
            } else {
                (self.arm[i], self.base[i])
            };
            a += x;
            b += y;
        }
        let r = (a / b).ln();
        match self.better {
            Better::Higher => r,
            Better::Lower => -r,
        }
    }
}

/// The rounds of @p where both @arm and @base measured @metric.
fn pairs(p: &PointResult, arm: &str, base: &str, metric: &str, better: Better) -> Option<Pairs> {
    let (sa, sb) = (p.samples.get(arm)?, p.samples.get(base)?);
    let mut out = Pairs {
        better,
        arm: Vec::new(),
        base: Vec::new(),
    };
    for s in sa {
        let Some(&x) = s.values.get(metric) else {
            continue;
        };
        let twin = sb.iter().find(|t| t.iteration == s.iteration);
        if let Some(&y) = twin.and_then(|t| t.values.get(metric)) {
            out.arm.push(x);
            out.base.push(y);
        }
    }
    (out.arm.len() >= 2).then_some(out)
}

/// One run's pooled change: the mean over its points of the arm's log
/// ratio to the base (positive = better) and the permutation test's
/// two-sided p.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunPool {
    pub points: usize,
    pub log_mean: f64,
    pub p: f64,
}

impl RunPool {
    /// The change in %, the geometric mean of the ratios.
    pub fn pct(&self) -> f64 {
        pct(self.log_mean)
    }
}

/// A mean log ratio as a change in %.
pub fn pct(log_ratio: f64) -> f64 {
    (log_ratio.exp() - 1.0) * 100.0
}

/// Pools @arm against @base over @items, points each with a metric and
/// its better direction. `None` where no item has two rounds with both.
pub fn pool_run(
    items: &[(&PointResult, String, Better)],
    arm: &str,
    base: &str,
) -> Option<RunPool> {
    let all: Vec<Pairs> = items
        .iter()
        .filter_map(|(p, m, better)| pairs(p, arm, base, m, *better))
        .collect();
    if all.is_empty() {
        return None;
    }
    let stat_of = |swaps: &[Vec<bool>]| {
        all.iter().zip(swaps).map(|(p, s)| p.change(s)).sum::<f64>() / all.len() as f64
    };
    let mut swaps: Vec<Vec<bool>> = all.iter().map(|p| vec![false; p.arm.len()]).collect();
    let observed = stat_of(&swaps);
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    // Ties count as extreme; the tolerance keeps a permutation that only
    // reorders the same sums from missing by a rounding error.
    let edge = observed.abs() * (1.0 - 1e-12);
    let mut extreme = 0u32;
    for _ in 0..PERMUTATIONS {
        for s in swaps.iter_mut().flatten() {
            *s = rng.next_u32() & 1 == 1;
        }
        if stat_of(&swaps).abs() >= edge {
            extreme += 1;
        }
    }
    // A ratio of means that are 0 or of opposite signs has no log.
    if !observed.is_finite() {
        return None;
    }
    Some(RunPool {
        points: all.len(),
        log_mean: observed,
        p: f64::from(extreme + 1) / f64::from(PERMUTATIONS + 1),
    })
}

/// The runs' mean log ratios judged together: Student's t on one value per
/// run, the interval turned back into %. A margin of m % is +-ln(1 + m/100)
/// on the log scale. `None` for fewer than two runs or runs that all gave
/// the same mean.
pub fn across(log_means: &[f64], alpha: f64, margin: Option<&Margin>) -> Option<Judged> {
    let (m, lo, hi, p) = stat::one_sample(log_means, verdict::LEVEL)?;
    let (lo, hi) = (pct(lo), pct(hi));
    let change = Change {
        pct: pct(m),
        lo,
        hi,
        p,
        reach: lo.abs().max(hi.abs()),
    };
    let equivalence_p =
        margin.and_then(|g| stat::one_sample_equivalence_p(log_means, (1.0 + g.pct / 100.0).ln()));
    Some(verdict::with_tests(change, equivalence_p, margin, alpha))
}

/// The margin the runs' own control gives their pooled means: the largest
/// run mean of a control arm against its twin, over the runs, in %.
pub fn control_margin(control: &str, twin: &str, log_means: &[f64]) -> Option<Margin> {
    let widest = log_means
        .iter()
        .map(|m| pct(*m).abs().max(pct(-*m).abs()))
        .fold(None, |w: Option<f64>, m| Some(w.map_or(m, |w| w.max(m))))?;
    Some(Margin {
        pct: (widest * 10.0).ceil() / 10.0,
        source: format!(
            "the largest run mean of {control} against {twin}, one arm run twice, over the {} run(s) that had it",
            log_means.len()
        ),
        control: Some(control.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::fixture::sample;
    use crate::bench::workload::{Family, Metric, Point};
    use std::collections::BTreeMap;

    fn point(label: &str, arm: &[f64], base: &[f64]) -> PointResult {
        let mk = |vs: &[f64]| {
            vs.iter()
                .enumerate()
                .map(|(i, v)| sample(i as u32, "time", *v))
                .collect()
        };
        PointResult {
            point: Point {
                section: "s".into(),
                label: label.into(),
                family: Family::Hackbench,
                metrics: vec![Metric {
                    name: "time".into(),
                    unit: "s".into(),
                    better: Better::Lower,
                }],
                param: 0,
                argv: Vec::new(),
            },
            samples: BTreeMap::from([("a".into(), mk(arm)), ("b".into(), mk(base))]),
        }
    }

    fn time(pts: &[PointResult]) -> Vec<(&PointResult, String, Better)> {
        pts.iter()
            .map(|p| (p, "time".to_string(), Better::Lower))
            .collect()
    }

    #[test]
    fn a_run_pools_its_points_and_permutes_within_rounds() {
        // The arm is 10% faster at every round of 6 points: of the 2^30
        // relabellings only the identity and its mirror are as extreme,
        // so the permutation p is at its floor.
        let pts: Vec<PointResult> = (0..6)
            .map(|i| {
                let base = [
                    1.0 + i as f64,
                    1.1 + i as f64,
                    0.9 + i as f64,
                    1.0 + i as f64,
                    1.05 + i as f64,
                ];
                let arm: Vec<f64> = base.iter().map(|b| b * 0.9).collect();
                point(&format!("p{i}"), &arm, &base)
            })
            .collect();
        let r = pool_run(&time(&pts), "a", "b").unwrap();
        assert_eq!(r.points, 6);
        assert!((r.pct() - 100.0 / 9.0).abs() < 1e-9, "{r:?}");
        assert!(r.p < 0.001, "{r:?}");
        // The same arm against itself: nothing to find, p near 1.
        let same = pool_run(&time(&pts), "b", "b").unwrap();
        assert_eq!(same.log_mean, 0.0);
        assert!(same.p > 0.99, "{same:?}");
        // Seeded: the same p twice.
        assert_eq!(pool_run(&time(&pts), "a", "b"), Some(r));
    }

    #[test]
    fn a_point_where_the_arms_swap_at_random_is_not_a_finding() {
        // Two rounds of one point: four relabellings, two of them as
        // extreme as what was seen (the mirror), so p is about a half.
        let p = point("x", &[1.0, 2.0], &[2.0, 1.0]);
        let r = pool_run(&time(&[p]), "a", "b").unwrap();
        assert!(r.p > 0.4, "{r:?}");
    }

    #[test]
    fn runs_are_the_unit_across_runs() {
        // Four runs whose means scatter around -1%: not significant, and
        // the interval says what is left open.
        let logs: Vec<f64> = [-2.0, 0.5, -1.5, -1.0]
            .iter()
            .map(|p: &f64| (1.0 + p / 100.0).ln())
            .collect();
        let j = across(&logs, 0.05, None).unwrap();
        assert_eq!(j.word, verdict::Word::Open);
        assert!(j.change.lo < -2.0 && j.change.hi > 0.0, "{j:?}");
        // Tight runs inside a wide margin are level.
        let m = Margin::stated(3.0);
        let j = across(&[0.002, -0.001, 0.001, 0.0], 0.05, Some(&m)).unwrap();
        assert_eq!(j.word, verdict::Word::Level, "{j:?}");
        assert!(across(&[1.0], 0.05, None).is_none());
        let c = control_margin("u#2", "u", &[0.004, -0.0122, 0.002]).unwrap();
        assert_eq!(c.pct, 1.3);
    }
}
