//! The statistics of an A/B comparison: mean, sample standard deviation,
//! the change against the baseline with the sign that makes positive mean
//! better, Welch's t-test for whether a change is significant, its
//! confidence interval, and two one-sided tests for whether it is smaller
//! than a margin (Student's t from statrs; no crate carries Welch's
//! interval or TOST, and each is a line of arithmetic on its quantiles).

use serde::{Deserialize, Serialize};

/// Which direction of a metric is good.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Times and latencies.
    Lower,
    /// Throughputs and rates.
    Higher,
}

pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample standard deviation (n - 1); 0 for fewer than two samples.
pub fn stddev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

/// The change of `value` against `base` in %, positive when `value` is
/// better: a lower time or a higher throughput.
pub fn change_pct(base: f64, value: f64, better: Better) -> f64 {
    if base == 0.0 || !base.is_finite() || !value.is_finite() {
        return 0.0;
    }
    match better {
        Better::Lower => (base - value) / base * 100.0,
        Better::Higher => (value - base) / base * 100.0,
    }
}

/// Welch's unequal-variances t-test: the statistic, the Welch-Satterthwaite
/// degrees of freedom, and the two-sided p-value. `None` when either side
/// has fewer than two samples or both have no variance.
pub fn welch(a: &[f64], b: &[f64]) -> Option<(f64, f64, f64)> {
    let (d, se, df) = welch_parts(a, b)?;
    let t = d / se;
    Some((t, df, t_two_sided_p(t, df)))
}

/// A change against the base, in % of the base's mean with the sign that
/// makes positive better, with its confidence interval and Welch's p.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Change {
    pub pct: f64,
    /// The interval's ends, in the same % (lo <= hi).
    pub lo: f64,
    pub hi: f64,
    /// Welch's two-sided p for "no difference".
    pub p: f64,
    /// The largest difference, either way, the interval leaves open.
    pub reach: f64,
}

/// The change of @vals against @base with a @level (0.95) confidence
/// interval.
///
/// Welch's interval is for the difference of the means, d +- t * se with
/// se^2 = s_a^2/n_a + s_b^2/n_b and the Welch-Satterthwaite degrees of
/// freedom. Dividing it by the base's mean puts it in % of the base, as
/// the tables print changes; that takes the base's mean as exact, which
/// with 5 runs and a spread of a few % moves the ends by a few hundredths
/// of the width (Fieller's interval for a ratio would be exact). `None`
/// where Welch's test is not defined (fewer than two samples a side, or
/// no spread at all) or the base's mean is 0.
pub fn change(vals: &[f64], base: &[f64], better: Better, level: f64) -> Option<Change> {
    let (d, se, df) = welch_parts(vals, base)?;
    let mb = mean(base);
    if mb == 0.0 || !mb.is_finite() {
        return None;
    }
    let t = t_quantile(0.5 + level / 2.0, df)?;
    let sign = match better {
        Better::Higher => 1.0,
        Better::Lower => -1.0,
    };
    let to_pct = |x: f64| sign * x / mb.abs() * 100.0;
    let (a, b) = (to_pct(d - t * se), to_pct(d + t * se));
    let (lo, hi) = (a.min(b), a.max(b));
    Some(Change {
        pct: to_pct(d),
        lo,
        hi,
        p: t_two_sided_p(d / se, df),
        reach: lo.abs().max(hi.abs()),
    })
}

/// Two one-sided tests (TOST) of equivalence within +-@margin_pct % of the
/// base's mean: the larger of the two one-sided Welch p-values, for
/// "the difference is at most -margin" and "at least +margin". Below alpha
/// exactly when the (1 - 2 alpha) interval lies inside the margin: the
/// difference is shown to be smaller than the margin, not merely not shown
/// to be larger than nothing.
pub fn equivalence_p(vals: &[f64], base: &[f64], margin_pct: f64) -> Option<f64> {
    let (d, se, df) = welch_parts(vals, base)?;
    let m = margin_pct / 100.0 * mean(base).abs();
    let dist = students_t(df)?;
    use statrs::distribution::ContinuousCDF;
    let p_low = dist.sf((d + m) / se);
    let p_high = dist.cdf((d - m) / se);
    Some(p_low.max(p_high))
}

/// The one-sample t statistics of @xs against 0: its mean, the @level
/// interval's ends and the two-sided p (n - 1 degrees of freedom). `None`
/// for fewer than two values or no spread.
pub fn one_sample(xs: &[f64], level: f64) -> Option<(f64, f64, f64, f64)> {
    if xs.len() < 2 {
        return None;
    }
    let (m, df) = (mean(xs), (xs.len() - 1) as f64);
    let se = stddev(xs) / (xs.len() as f64).sqrt();
    if se == 0.0 {
        return None;
    }
    let t = t_quantile(0.5 + level / 2.0, df)?;
    Some((m, m - t * se, m + t * se, t_two_sided_p(m / se, df)))
}

/// TOST for a one-sample mean of @xs against +-@margin.
pub fn one_sample_equivalence_p(xs: &[f64], margin: f64) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let (m, df) = (mean(xs), (xs.len() - 1) as f64);
    let se = stddev(xs) / (xs.len() as f64).sqrt();
    if se == 0.0 {
        return None;
    }
    use statrs::distribution::ContinuousCDF;
    let dist = students_t(df)?;
    Some(dist.sf((m + margin) / se).max(dist.cdf((m - margin) / se)))
}

/// The difference of the means, its standard error and the
/// Welch-Satterthwaite degrees of freedom.
fn welch_parts(a: &[f64], b: &[f64]) -> Option<(f64, f64, f64)> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (stddev(a).powi(2) / na, stddev(b).powi(2) / nb);
    let se2 = va + vb;
    if se2 == 0.0 {
        return None;
    }
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    Some((mean(a) - mean(b), se2.sqrt(), df))
}

fn students_t(df: f64) -> Option<statrs::distribution::StudentsT> {
    statrs::distribution::StudentsT::new(0.0, 1.0, df).ok()
}

/// The @q quantile of Student's t with @df degrees of freedom.
fn t_quantile(q: f64, df: f64) -> Option<f64> {
    use statrs::distribution::ContinuousCDF;
    Some(students_t(df)?.inverse_cdf(q))
}

/// Whether `a` and `b` differ at significance level `alpha`.
pub fn significant(a: &[f64], b: &[f64], alpha: f64) -> bool {
    welch(a, b).is_some_and(|(_, _, p)| p < alpha)
}

/// P(|T| >= |t|) for Student's t with `df` degrees of freedom (statrs's
/// t distribution; its tail is the regularised incomplete beta function
/// I_x(df/2, 1/2) at x = df/(df+t^2)).
fn t_two_sided_p(t: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if !t.is_finite() {
        return 0.0;
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => (2.0 * dist.sf(t.abs())).min(1.0),
        // Only a df that is not positive and finite, which Welch's formula
        // does not give for two samples of two or more with spread.
        Err(_) => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn mean_and_stddev() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), 5.0);
        assert!(close(stddev(&xs), 2.138_089_935, 1e-9));
        assert_eq!(stddev(&[3.0]), 0.0);
        assert!(mean(&[]).is_nan());
    }

    #[test]
    fn sign_of_change_means_better() {
        // The review's hackbench 16 groups: 10.70 -> 11.69 s is a loss.
        assert!(close(change_pct(10.70, 11.69, Better::Lower), -9.25, 0.01));
        // Its tbench 256 clients: 24207 -> 52041 MB/s is a gain.
        assert!(close(
            change_pct(24207.35, 52041.89, Better::Higher),
            114.98,
            0.01
        ));
        assert!(change_pct(4.0, 3.0, Better::Lower) > 0.0);
        assert!(change_pct(4.0, 3.0, Better::Higher) < 0.0);
        assert_eq!(change_pct(0.0, 3.0, Better::Higher), 0.0);
    }

    #[test]
    fn welch_matches_reference_values() {
        // References computed with mpmath's regularised incomplete beta.
        // (a, b, t, df, p)
        type Case<'a> = (&'a [f64], &'a [f64], f64, f64, f64);
        let cases: [Case; 4] = [
            (
                &[4.64, 4.70, 4.61, 4.66],
                &[4.70, 4.75, 4.72, 4.69],
                -2.711_630_722_733,
                5.374_411_108_356,
                0.039_161_108_849,
            ),
            (
                &[10.7, 10.5, 10.9],
                &[11.69, 11.5, 11.8],
                -6.645_873_619_874,
                3.729_769_421_444,
                0.003_397_857_225,
            ),
            (
                &[1.0, 2.0, 3.0, 4.0, 5.0],
                &[2.0, 4.0, 6.0, 8.0, 10.0],
                -1.897_366_596_101,
                5.882_352_941_176,
                0.107_531_194_931,
            ),
            (
                &[19.8, 20.4, 19.6, 17.8, 18.5, 18.9, 18.3, 18.9, 19.5, 22.0],
                &[
                    28.2, 26.6, 20.1, 23.3, 25.2, 22.1, 17.7, 27.6, 20.6, 13.7, 23.2, 17.5, 20.6,
                    18.0, 23.9, 21.6, 24.3, 20.4, 23.9, 13.3,
                ],
                -2.225_512_039_970,
                24.524_634_944_257,
                0.035_484_530_830,
            ),
        ];
        for (a, b, t, df, p) in cases {
            let (gt, gdf, gp) = welch(a, b).unwrap();
            assert!(close(gt, t, 1e-9), "t {gt} vs {t}");
            assert!(close(gdf, df, 1e-9), "df {gdf} vs {df}");
            assert!(close(gp, p, 1e-9), "p {gp} vs {p}");
        }
    }

    #[test]
    fn intervals_and_equivalence_match_reference_values() {
        // References from scipy.stats (t.ppf, t.sf, ttest_1samp).
        let base = [10.7, 10.5, 10.9];
        let vals = [11.69, 11.5, 11.8];
        let c = change(&vals, &base, Better::Lower, 0.95).unwrap();
        assert!(close(c.lo, -12.874_293_743, 1e-6), "{c:?}");
        assert!(close(c.hi, -5.131_936_786, 1e-6), "{c:?}");
        assert!(close(c.p, 0.003_397_857_225, 1e-9), "{c:?}");
        assert!(close(c.reach, 12.874_293_743, 1e-6), "{c:?}");
        // Higher is better: the same numbers, the interval's sign turned.
        let h = change(&vals, &base, Better::Higher, 0.95).unwrap();
        assert!(close(h.lo, 5.131_936_786, 1e-6) && close(h.hi, 12.874_293_743, 1e-6));
        let base = [100.0, 100.4, 99.6, 100.2, 99.8];
        let vals = [100.1, 100.5, 99.7, 100.3, 99.9];
        let p = equivalence_p(&vals, &base, 1.0).unwrap();
        assert!(close(p, 0.001_001_046_138, 1e-9), "{p}");
        let (m, lo, hi, p) = one_sample(&[-2.0, 0.5, -1.5, -1.0], 0.95).unwrap();
        assert!(close(m, -1.0, 1e-12));
        assert!(close(lo, -2.718_717_441, 1e-6) && close(hi, 0.718_717_441, 1e-6));
        assert!(close(p, 0.161_161_847_214, 1e-9), "{p}");
        assert!(one_sample(&[1.0], 0.95).is_none());
        assert!(change(&[1.0, 1.0], &[1.0, 1.0], Better::Lower, 0.95).is_none());
    }

    #[test]
    fn t_distribution_tail() {
        // P(|T| >= 2) with 5 degrees of freedom.
        assert!(close(t_two_sided_p(2.0, 5.0), 0.101_939_478_830, 1e-10));
        assert!(close(t_two_sided_p(0.0, 5.0), 1.0, 1e-12));
        assert!(t_two_sided_p(50.0, 30.0) < 1e-20);
    }

    #[test]
    fn significance_needs_samples_and_spread() {
        assert!(welch(&[1.0], &[2.0, 3.0]).is_none());
        assert!(welch(&[1.0, 1.0], &[1.0, 1.0]).is_none());
        assert!(significant(&[10.7, 10.5, 10.9], &[11.69, 11.5, 11.8], 0.05));
        assert!(!significant(
            &[1.0, 2.0, 3.0, 4.0, 5.0],
            &[2.0, 4.0, 6.0, 8.0, 10.0],
            0.05
        ));
    }
}
