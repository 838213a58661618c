//! The statistics of an A/B comparison: mean, sample standard deviation,
//! the change against the baseline with the sign that makes positive mean
//! better, and Welch's t-test for whether a change is significant (the t
//! distribution's tail from statrs).

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
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (stddev(a).powi(2) / na, stddev(b).powi(2) / nb);
    let se2 = va + vb;
    if se2 == 0.0 {
        return None;
    }
    let t = (mean(a) - mean(b)) / se2.sqrt();
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    Some((t, df, t_two_sided_p(t, df)))
}

/// The exact two-sided sign test: how likely a split of changes at least
/// as uneven as @ahead to @behind is when either sign is as likely as the
/// other (ties are left out). `None` without a change.
pub fn sign_test(ahead: u64, behind: u64) -> Option<f64> {
    use statrs::distribution::{Binomial, DiscreteCDF};
    let n = ahead + behind;
    let b = Binomial::new(0.5, n).ok().filter(|_| n > 0)?;
    Some((2.0 * b.cdf(ahead.min(behind))).min(1.0))
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

    #[test]
    fn sign_test_is_the_binomial_tail() {
        assert_eq!(sign_test(0, 0), None);
        assert!((sign_test(0, 2).unwrap() - 0.5).abs() < 1e-12);
        // 2 * (C(10,0) + C(10,1)) / 2^10
        assert!((sign_test(9, 1).unwrap() - 22.0 / 1024.0).abs() < 1e-9);
        assert_eq!(sign_test(5, 5), Some(1.0));
    }

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
