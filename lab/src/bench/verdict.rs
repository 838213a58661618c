//! What a change may be called. "Ahead" or "behind" only where Welch's test
//! finds the difference; "level" only where two one-sided tests put it
//! inside a margin stated with the claim; anything else is "not
//! significant in N runs", with the differences its confidence interval
//! leaves open. A test that could not see a 10 % difference says nothing
//! about one, so a difference that is not significant is never called
//! level by itself.

use super::results::Results;
use super::stat::{self, Better, Change};

/// The confidence level of every interval the lab prints.
pub const LEVEL: f64 = 0.95;

/// An equivalence margin in % of the base's mean, and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Margin {
    pub pct: f64,
    /// Said after the margin: "stated before the run", or which control
    /// arm it was taken from.
    pub source: String,
    /// The control arm it was taken from, whose own changes it cannot
    /// judge.
    pub control: Option<String>,
}

impl Margin {
    pub fn stated(pct: f64) -> Self {
        Margin {
            pct,
            source: "stated".into(),
            control: None,
        }
    }
}

/// The word a change earns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Word {
    Ahead,
    Behind,
    Level,
    Open,
}

/// A change with its tests.
#[derive(Clone, Debug)]
pub struct Judged {
    pub change: Change,
    pub word: Word,
    /// The equivalence test's p, where a margin was given.
    pub equivalence_p: Option<f64>,
    pub margin: Option<Margin>,
}

/// Judges @vals against @base. A margin taken from @vals' own arm (the
/// control it came from) is not used on it.
pub fn judge(
    vals: &[f64],
    base: &[f64],
    better: Better,
    alpha: f64,
    margin: Option<&Margin>,
) -> Option<Judged> {
    let change = stat::change(vals, base, better, LEVEL)?;
    let equivalence_p = margin.and_then(|m| stat::equivalence_p(vals, base, m.pct));
    Some(with_tests(change, equivalence_p, margin, alpha))
}

/// The word @change earns at @alpha, given its equivalence test's p.
pub fn with_tests(
    change: Change,
    equivalence_p: Option<f64>,
    margin: Option<&Margin>,
    alpha: f64,
) -> Judged {
    let word = if change.p < alpha {
        if change.pct > 0.0 {
            Word::Ahead
        } else {
            Word::Behind
        }
    } else if equivalence_p.is_some_and(|p| p < alpha) {
        Word::Level
    } else {
        Word::Open
    };
    Judged {
        change,
        word,
        equivalence_p,
        margin: margin.cloned(),
    }
}

/// "+38.1% to +58.7%".
pub fn interval(c: &Change) -> String {
    format!("{:+.1}% to {:+.1}%", c.lo, c.hi)
}

/// "p 0.003", "p < 0.001".
pub fn fmt_p(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else if p < 0.01 {
        format!("p {p:.3}")
    } else {
        format!("p {p:.2}")
    }
}

impl Judged {
    /// The mark a table cell carries: `*` significant, `=` equivalent.
    pub fn mark(&self) -> &'static str {
        match self.word {
            Word::Ahead | Word::Behind => " *",
            Word::Level => " =",
            Word::Open => "",
        }
    }

    /// The words after the change: "ahead (p 0.003, 95% CI +38.1% to
    /// +58.7%, 5 runs each)", "level within ±3.0% (...)", or "not
    /// significant in 5 runs (p 0.26, 95% CI -20.1% to +63.7%): differences
    /// under 63.7% not excluded". @runs says how many runs each side had.
    pub fn sentence(&self, runs: &str, fewest: usize) -> String {
        let c = &self.change;
        let ci = format!("{:.0}% CI {}", LEVEL * 100.0, interval(c));
        match self.word {
            Word::Ahead | Word::Behind => format!(
                "{} ({}, {ci}, {runs})",
                if self.word == Word::Ahead {
                    "ahead"
                } else {
                    "behind"
                },
                fmt_p(c.p)
            ),
            Word::Level => {
                let m = self.margin.as_ref().map_or(0.0, |m| m.pct);
                format!(
                    "level within ±{m:.1}% (equivalence {}, {ci}, {runs})",
                    fmt_p(self.equivalence_p.unwrap_or(1.0))
                )
            }
            Word::Open => {
                let mut s = format!(
                    "not significant in {fewest} runs ({}, {ci}): differences under {:.1}% not excluded",
                    fmt_p(c.p),
                    c.reach
                );
                if let (Some(m), Some(p)) = (&self.margin, self.equivalence_p) {
                    s.push_str(&format!(
                        "; not shown level within ±{:.1}% (equivalence {})",
                        m.pct,
                        fmt_p(p)
                    ));
                }
                s
            }
        }
    }
}

/// The control arms of a run, as (control, twin): an arm named `X#TAG`
/// beside an arm `X`, the same arm run twice.
pub fn controls(r: &Results) -> Vec<(String, String)> {
    r.arms
        .iter()
        .filter_map(|a| {
            let (twin, _) = a.name.split_once('#')?;
            r.arms
                .iter()
                .any(|b| b.name == twin)
                .then(|| (a.name.clone(), twin.to_string()))
        })
        .collect()
}

/// The margin a run's own control gives @metric: the largest difference,
/// either way, between a control arm and its twin over the run's points
/// that have @metric. Two runs of one arm differ by that much in this run
/// with nothing to tell them apart, so a difference inside it is one the
/// run cannot call a difference. `None` without a control.
pub fn control_margin(r: &Results, metric: &str) -> Option<Margin> {
    let mut best: Option<(f64, String, String, usize)> = None;
    for (control, twin) in controls(r) {
        let mut points = 0;
        let mut widest: f64 = 0.0;
        for p in &r.points {
            let Some(m) = p.point.metrics.iter().find(|m| m.name == metric) else {
                continue;
            };
            let (a, b) = (p.values(&control, metric), p.values(&twin, metric));
            if a.is_empty() || b.is_empty() {
                continue;
            }
            points += 1;
            widest = widest.max(stat::change_pct(stat::mean(&b), stat::mean(&a), m.better).abs());
        }
        if points > 0 && best.as_ref().is_none_or(|(w, ..)| widest > *w) {
            best = Some((widest, control, twin, points));
        }
    }
    let (pct, control, twin, points) = best?;
    // A margin rounded up to a tenth, so that the printed margin is the
    // one tested.
    let pct = (pct * 10.0).ceil() / 10.0;
    Some(Margin {
        pct,
        source: format!(
            "the largest difference between {control} and {twin}, one arm run twice, over the run's {points} point(s)"
        ),
        control: Some(control),
    })
}

/// The margin @arm's changes in @metric are judged by in @r: the one
/// stated before the run, else the run's own control's (but not on the
/// control itself, whose changes made it).
pub fn margin_of(r: &Results, metric: &str, arm: &str) -> Option<Margin> {
    match r.method.margin_pct {
        Some(pct) => Some(Margin::stated(pct)),
        None => control_margin(r, metric),
    }
    .filter(|m| m.control.as_deref() != Some(arm))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_difference_not_found_is_not_called_level() {
        // A 10 % gain in 5 noisy runs: not significant, and with no margin
        // nothing more is said than what the interval leaves open.
        let base = [100.0, 90.0, 110.0, 95.0, 105.0];
        let vals = [110.0, 99.0, 121.0, 104.5, 115.5];
        let j = judge(&vals, &base, Better::Higher, 0.05, None).unwrap();
        assert_eq!(j.word, Word::Open);
        let s = j.sentence("5 runs each", 5);
        assert!(s.starts_with("not significant in 5 runs (p "), "{s}");
        assert!(s.contains(": differences under "), "{s}");
        assert!(j.change.lo < 0.0 && j.change.hi > 10.0, "{s}");
        // A margin of 2 % is not met by an interval that wide.
        let j = judge(
            &vals,
            &base,
            Better::Higher,
            0.05,
            Some(&Margin::stated(2.0)),
        )
        .unwrap();
        assert_eq!(j.word, Word::Open);
        assert!(j.sentence("", 5).contains("not shown level within ±2.0%"));
    }

    #[test]
    fn level_needs_the_interval_inside_the_margin() {
        let base = [100.0, 100.4, 99.6, 100.2, 99.8];
        let vals = [100.1, 100.5, 99.7, 100.3, 99.9];
        let j = judge(
            &vals,
            &base,
            Better::Lower,
            0.05,
            Some(&Margin::stated(1.0)),
        )
        .unwrap();
        assert_eq!(j.word, Word::Level, "{j:?}");
        assert_eq!(j.mark(), " =");
        assert!(j
            .sentence("5 runs each", 5)
            .starts_with("level within ±1.0% (equivalence p "));
        // The same data against a margin inside its interval is not level.
        let j = judge(
            &vals,
            &base,
            Better::Lower,
            0.05,
            Some(&Margin::stated(0.1)),
        )
        .unwrap();
        assert_eq!(j.word, Word::Open);
    }

    #[test]
    fn significance_comes_first_and_carries_its_interval() {
        let base = [10.7, 10.5, 10.9];
        let vals = [11.69, 11.5, 11.8];
        let j = judge(
            &vals,
            &base,
            Better::Lower,
            0.05,
            Some(&Margin::stated(20.0)),
        )
        .unwrap();
        assert_eq!(j.word, Word::Behind);
        assert_eq!(j.mark(), " *");
        // The interval of a significant change does not hold 0.
        assert!(j.change.hi < 0.0, "{j:?}");
        assert!(j
            .sentence("3 runs each", 3)
            .starts_with("behind (p 0.003, 95% CI -"));
    }
}
