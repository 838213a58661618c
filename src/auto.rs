//! The adaptive rule (`--policy auto`): for each LLC, the candidate rule
//! (util, prop or full) whose scans the shadow measures to pay best there,
//! chosen again every EVERY intervals and published to BPF (`auto_rule` in
//! the LLC's record), which then scans to that rule's depth.
//!
//! The review of SIS_UTIL ended with two open ideas: SIS_PROP where the
//! LLC is small and SIS_UTIL where it is large, and "even if util_avg is a
//! little high, it might be still worthwhile to search more CPUs". Both
//! are questions of price, which this rule measures instead of guessing.
//!
//! A scan of an LLC under rule r, on a wakeup that reaches the scan:
//!
//! - costs c * E_r twice over, where c is the time to examine one CPU and
//!   E_r the CPUs the rule's scan examines: once for the waker, which
//!   cannot go on meanwhile, and once for the wakee, which is placed only
//!   when the scan ends;
//! - saves S with probability P_r, where P_r is how often a scan to the
//!   rule's depth finds an idle CPU and S what a find saves the wakee:
//!   S = W_m - W_f, W_m how long a wakee waits, from its placement to its
//!   first run, when the scan missed an idle CPU that existed (in a queue,
//!   until that CPU or its own takes it), W_f how long it waits when sent
//!   to the idle CPU the scan found (until that CPU wakes up and runs it).
//!
//! So the expected gain of a scan, in ns, is
//!
//! ```text
//!   G_r = S * P_r - 2 * c * E_r
//! ```
//!
//! and the rule with the largest G_r is the one to scan with. Between two
//! rules, the deeper one d is worth it over the shallower s exactly when
//!
//! ```text
//!   (P_d - P_s) / (E_d - E_s)  >  2c / S,
//! ```
//!
//! the review's "found-rate per CPU examined", at the margin, against the
//! price of a CPU examined in waiting time. Where the LLC is idle every
//! rule finds at the first CPU and util wins the tie; where it is
//! saturated P_r is near 0 for all and the rule that examines least wins,
//! which is SIS_UTIL's cut; in between, a deeper rule wins as long as each
//! extra CPU examined finds more than 2c/S idle CPUs. A wide LLC raises E
//! for the deeper rules and so tilts towards util; a cheap scan (small c)
//! or a long queue (large S) towards prop and full. Where waking an idle
//! CPU takes as long as the queue (S <= 0), finding does not pay at all,
//! and the rule that finds and examines least wins.
//!
//! P_r and E_r come from the shadow's one look-only walk, which judges the
//! three candidates on the same wakeups, W_m and W_f from the waits BPF
//! times, c from the active scans' time per CPU examined (the walk's where
//! the active scans examine too few CPUs to say). All are sums that decay
//! by half every HALF_LIFE intervals (half a second at the default 16 ms),
//! long enough to hold a few dozen judged scans where scans are rare, short
//! enough that the choice follows the load within a second or two.
//!
//! Measuring must cost little beside what it can save, or the rule loses
//! even where it chooses what the others would. So the walk judges one
//! scan of an LLC in 2^shift, at random, with the shift set per LLC so
//! that the sums hold between TARGET_JUDGED and twice that many judged
//! scans whatever the LLC's scan rate (sample_shift()): a found-rate from
//! n judged scans has a standard error of sqrt(P (1 - P) / n), at most 4.4
//! points at n = TARGET_JUDGED, against the tens of points between the
//! candidates where the choice matters. Where a find saves nothing (S <= 0), every gain
//! G_r = -(|S| P_r + 2 c E_r) falls with every find and every CPU
//! examined: full, which walks the same order at least as far as each of
//! the others, cannot lead, and what is left to tell is which of util and
//! prop goes less deep, a coarser question; there the sample keeps a
//! quarter as many (still twice MIN_JUDGED). And the counters are read, and
//! the choice made, every EVERY intervals, the decay raised to the number
//! of intervals folded in: the choice then lags the load by EVERY intervals
//! at most, a quarter of the half-life its sums lag by anyway.
//!
//! A choice is made only from MIN_JUDGED judged scans and MIN_WAITS missed
//! or queued waits (W_f counts as 0 until MIN_WAITS finds are timed), and
//! changes only when the new rule's gain beats the current one's by MARGIN
//! of the larger of the two (and by more than FLOOR of c, for gains near
//! zero), so that noise between two close rules does not flip the LLC at
//! every choice.

use crate::bpf_intf;
use crate::policy::Policy;
use crate::stats::LlcCounters;

/// The candidates, in the order of their gains (intf.h's table marks them).
pub const CANDIDATES: [Policy; N] = Policy::AUTO_CANDIDATES;
/// How many there are.
pub const N: usize = Policy::AUTO_CANDIDATES.len();

/// Intervals over which the measurements' weight halves.
const HALF_LIFE: f64 = 32.0;
/// Intervals between two readings of the counters, and two choices.
pub const EVERY: u32 = 8;
/// Judged scans (decayed) the sample aims to keep in the sums.
const TARGET_JUDGED: f64 = 128.0;
/// Judged scans (decayed) needed before a choice is made.
const MIN_JUDGED: f64 = 16.0;
/// Timed waits (decayed) needed before W is trusted.
const MIN_WAITS: f64 = 4.0;
/// CPUs examined (decayed) by the active scans before their cost per CPU
/// is preferred to the look-only walk's.
const MIN_EXAMINED: f64 = 64.0;
/// A new rule must gain this share more per scan than the current one...
const MARGIN: f64 = 0.1;
/// ... and more than this share of a CPU's examining cost.
const FLOOR: f64 = 0.1;

/// One LLC's measurements, as decayed sums.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sums {
    pub scans: f64,
    pub judged: f64,
    pub found: [f64; N],
    pub examined: [f64; N],
    pub walk_ns: f64,
    pub walk_examined: f64,
    pub scan_ns: f64,
    pub scan_examined: f64,
    pub missed_waits: f64,
    pub missed_wait_ns: f64,
    pub queued_waits: f64,
    pub queued_wait_ns: f64,
    pub found_waits: f64,
    pub found_wait_ns: f64,
}

impl Sums {
    /// What BPF counted over one interval (`struct sisu_llc_scans`).
    pub fn of(c: &LlcCounters) -> Self {
        let v = c.view();
        let pick = |a: &[u64]| CANDIDATES.map(|p| a[p.to_bpf() as usize] as f64);
        Sums {
            scans: v.scans as f64,
            judged: v.judged as f64,
            found: pick(&v.judged_found),
            examined: pick(&v.judged_examined),
            walk_ns: v.walk_ns as f64,
            walk_examined: v.walk_examined as f64,
            scan_ns: v.scan_ns as f64,
            scan_examined: v.scan_examined as f64,
            missed_waits: v.missed_waits as f64,
            missed_wait_ns: v.missed_wait_ns as f64,
            queued_waits: v.queued_waits as f64,
            queued_wait_ns: v.queued_wait_ns as f64,
            found_waits: v.found_waits as f64,
            found_wait_ns: v.found_wait_ns as f64,
        }
    }

    /// self * decay + new, field by field.
    fn fold(&mut self, new: &Sums, decay: f64) {
        let f = |a: &mut f64, b: f64| *a = *a * decay + b;
        f(&mut self.scans, new.scans);
        f(&mut self.judged, new.judged);
        for i in 0..N {
            f(&mut self.found[i], new.found[i]);
            f(&mut self.examined[i], new.examined[i]);
        }
        f(&mut self.walk_ns, new.walk_ns);
        f(&mut self.walk_examined, new.walk_examined);
        f(&mut self.scan_ns, new.scan_ns);
        f(&mut self.scan_examined, new.scan_examined);
        f(&mut self.missed_waits, new.missed_waits);
        f(&mut self.missed_wait_ns, new.missed_wait_ns);
        f(&mut self.queued_waits, new.queued_waits);
        f(&mut self.queued_wait_ns, new.queued_wait_ns);
        f(&mut self.found_waits, new.found_waits);
        f(&mut self.found_wait_ns, new.found_wait_ns);
    }

    /// W_m: the mean wait of a wakee whose scan missed an idle CPU, or of
    /// any wakee a scan queued while too few such misses were seen.
    pub fn missed_wait_ns(&self) -> Option<f64> {
        if self.missed_waits >= MIN_WAITS {
            Some(self.missed_wait_ns / self.missed_waits)
        } else if self.queued_waits >= MIN_WAITS {
            Some(self.queued_wait_ns / self.queued_waits)
        } else {
            None
        }
    }

    /// W_f: the mean wait of a wakee sent to the idle CPU its scan found.
    pub fn found_wait_ns(&self) -> f64 {
        if self.found_waits >= MIN_WAITS {
            self.found_wait_ns / self.found_waits
        } else {
            0.0
        }
    }

    /// S = W_m - W_f: what a find saves a wakee.
    pub fn saved_ns(&self) -> Option<f64> {
        Some(self.missed_wait_ns()? - self.found_wait_ns())
    }

    /// c: the time to examine one CPU.
    pub fn cpu_ns(&self) -> Option<f64> {
        if self.scan_examined >= MIN_EXAMINED {
            Some(self.scan_ns / self.scan_examined)
        } else if self.walk_examined > 0.0 {
            Some(self.walk_ns / self.walk_examined)
        } else {
            None
        }
    }

    /// G_r for each candidate, in ns per scan, once enough is measured.
    pub fn gains(&self) -> Option<[f64; N]> {
        if self.judged < MIN_JUDGED {
            return None;
        }
        let (w, c) = (self.saved_ns()?, self.cpu_ns()?);
        Some(std::array::from_fn(|i| {
            w * self.found[i] / self.judged - 2.0 * c * self.examined[i] / self.judged
        }))
    }
}

/// The rule's state for one LLC.
#[derive(Clone, Debug, PartialEq)]
pub struct Llc {
    pub sums: Sums,
    pub rule: Policy,
    pub switches: u64,
    /// BPF judges one scan here in 2^shift.
    pub shift: u32,
}

impl Default for Llc {
    fn default() -> Self {
        Llc {
            sums: Sums::default(),
            rule: Policy::Util,
            switches: 0,
            shift: 0,
        }
    }
}

impl Llc {
    /// Folds @intervals intervals' measurements in, chooses again and
    /// sets the sample for what comes.
    pub fn update(&mut self, new: &Sums, intervals: u32) -> Policy {
        self.sums
            .fold(new, 0.5f64.powf(f64::from(intervals) / HALF_LIFE));
        let next = choose(self.rule, self.sums.gains(), self.sums.cpu_ns());
        if next != self.rule {
            self.rule = next;
            self.switches += 1;
        }
        let target = match self.sums.saved_ns() {
            Some(s) if s <= 0.0 => TARGET_JUDGED / 4.0,
            _ => TARGET_JUDGED,
        };
        self.shift = sample_shift(self.sums.scans, target);
        self.rule
    }
}

/// The largest shift that still leaves @target judged scans in the sums
/// at the rate @scans (the decayed scans) says: 0, every scan judged,
/// below twice that.
pub fn sample_shift(scans: f64, target: f64) -> u32 {
    let mut shift = 0;
    while shift < bpf_intf::SISU_AUTO_MAX_SHIFT && scans / f64::from(2u32 << shift) >= target {
        shift += 1;
    }
    shift
}

/// The candidate with the largest gain, unless the current one's is
/// within the margin of it. @cpu_ns is c.
pub fn choose(current: Policy, gains: Option<[f64; N]>, cpu_ns: Option<f64>) -> Policy {
    let (Some(g), Some(c)) = (gains, cpu_ns) else {
        return current;
    };
    let mut best = 0;
    for i in 1..N {
        if g[i] > g[best] {
            best = i;
        }
    }
    let Some(cur) = CANDIDATES.iter().position(|&p| p == current) else {
        return CANDIDATES[best];
    };
    let margin = (MARGIN * g[best].abs().max(g[cur].abs())).max(FLOOR * c);
    if g[best] - g[cur] > margin {
        CANDIDATES[best]
    } else {
        current
    }
}

/// Every LLC's state, with the counters it last read.
#[derive(Debug, Default)]
pub struct Auto {
    pub llcs: Vec<Llc>,
    last: Vec<LlcCounters>,
    /// Intervals since the last reading, modulo EVERY.
    tick: u32,
}

impl Auto {
    /// Starts over: every LLC at util, nothing measured, the counters
    /// read at the next interval.
    pub fn reset(&mut self) {
        self.llcs.clear();
        self.last.clear();
        self.tick = 0;
    }

    /// One interval passed: whether the counters are to be read in it.
    pub fn due(&mut self) -> bool {
        let due = self.tick == 0;
        self.tick = (self.tick + 1) % EVERY;
        due
    }

    /// @now is every LLC's counters, EVERY intervals after the last ones
    /// (or the first since a reset): every LLC chooses again.
    pub fn update(&mut self, now: Vec<LlcCounters>) {
        if self.llcs.len() != now.len() {
            self.llcs = vec![Llc::default(); now.len()];
        } else {
            for (llc, (n, l)) in self.llcs.iter_mut().zip(now.iter().zip(&self.last)) {
                llc.update(&Sums::of(&n.since(l)), EVERY);
            }
        }
        self.last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sums of @n judged scans with the given found and examined counts per
    /// candidate, waits of @w ns and @c ns per CPU.
    fn sums(n: f64, found: [f64; 3], examined: [f64; 3], w: f64, c: f64) -> Sums {
        Sums {
            judged: n,
            found,
            examined,
            scan_ns: c * 1000.0,
            scan_examined: 1000.0,
            missed_waits: 100.0,
            missed_wait_ns: 100.0 * w,
            ..Default::default()
        }
    }

    #[test]
    fn the_gain_is_saved_waits_less_twice_the_scan() {
        // 100 scans: util finds on 20 examining 50 CPUs, prop on 60 with
        // 300, full on 70 with 800; W = 1 ms, c = 1 us.
        let s = sums(100.0, [20.0, 60.0, 70.0], [50.0, 300.0, 800.0], 1e6, 1e3);
        let g = s.gains().unwrap();
        assert_eq!(g[0], 1e6 * 0.2 - 2.0 * 1e3 * 0.5);
        assert_eq!(g[1], 1e6 * 0.6 - 2.0 * 1e3 * 3.0);
        assert_eq!(g[2], 1e6 * 0.7 - 2.0 * 1e3 * 8.0);
        // full's extra finds per extra CPU (0.1 / 5) beat 2c/W (0.002).
        assert_eq!(choose(Policy::Util, Some(g), s.cpu_ns()), Policy::Full);
    }

    #[test]
    fn saturation_gives_util_its_cut() {
        // Nearly nothing to find: full's 2% does not pay for 8 CPUs a scan
        // at 2 us each against a 1 ms wait.
        let s = sums(100.0, [0.0, 1.0, 2.0], [0.0, 300.0, 800.0], 1e6, 2e3);
        assert_eq!(choose(Policy::Full, s.gains(), s.cpu_ns()), Policy::Util);
    }

    #[test]
    fn an_idle_llc_keeps_util_on_a_tie() {
        // Every rule finds at the first CPU: equal gains.
        let s = sums(100.0, [100.0; 3], [100.0; 3], 1e6, 1e3);
        assert_eq!(choose(Policy::Util, s.gains(), s.cpu_ns()), Policy::Util);
    }

    #[test]
    fn cheap_scans_and_long_waits_tilt_deeper() {
        // The same finds and depths: at 10 us a CPU and 100 us waits util
        // pays best, at 100 ns a CPU and 1 ms waits prop does (full finds
        // no more for its extra CPUs).
        let found = [20.0, 40.0, 40.0];
        let examined = [50.0, 300.0, 800.0];
        let dear = sums(100.0, found, examined, 1e5, 1e4);
        assert_eq!(
            choose(Policy::Util, dear.gains(), dear.cpu_ns()),
            Policy::Util
        );
        let cheap = sums(100.0, found, examined, 1e6, 1e2);
        assert_eq!(
            choose(Policy::Util, cheap.gains(), cheap.cpu_ns()),
            Policy::Prop
        );
    }

    #[test]
    fn a_small_difference_does_not_switch() {
        // prop gains 5% more than util: within the margin; 20% more is not.
        let s = sums(1000.0, [500.0, 525.0, 525.0], [0.0; 3], 1e6, 1e3);
        assert_eq!(choose(Policy::Util, s.gains(), s.cpu_ns()), Policy::Util);
        let s = sums(1000.0, [500.0, 600.0, 600.0], [0.0; 3], 1e6, 1e3);
        assert_eq!(choose(Policy::Util, s.gains(), s.cpu_ns()), Policy::Prop);
    }

    #[test]
    fn a_saturated_llc_leaves_a_deeper_rule_however_long_the_waits() {
        // Nothing found; prop's scans cost 3 CPUs at 500 ns: a loss of
        // 3 us a scan, against waits of 8 ms. The margin is the gains',
        // not W's, so util takes over.
        let s = sums(100.0, [0.0; 3], [0.0, 300.0, 300.0], 8e6, 500.0);
        assert_eq!(choose(Policy::Prop, s.gains(), s.cpu_ns()), Policy::Util);
        // Gains that differ by less than a tenth of a CPU's cost are ties.
        let g = Some([0.0, -1e-9, -1e-9]);
        assert_eq!(choose(Policy::Prop, g, Some(500.0)), Policy::Prop);
    }

    #[test]
    fn too_little_measured_keeps_the_rule() {
        let few = sums(10.0, [0.0, 10.0, 10.0], [0.0; 3], 1e6, 1e3);
        assert!(few.gains().is_none());
        assert_eq!(
            choose(Policy::Util, few.gains(), few.cpu_ns()),
            Policy::Util
        );
        let mut no_waits = sums(100.0, [0.0, 100.0, 100.0], [0.0; 3], 1e6, 1e3);
        no_waits.missed_waits = 0.0;
        no_waits.missed_wait_ns = 0.0;
        assert!(no_waits.missed_wait_ns().is_none());
        // Queued waits stand in for missed ones when misses are rare.
        no_waits.queued_waits = 10.0;
        no_waits.queued_wait_ns = 10.0 * 5e5;
        assert_eq!(no_waits.missed_wait_ns(), Some(5e5));
    }

    #[test]
    fn a_find_saves_the_missed_wait_less_the_found_one() {
        let mut s = sums(100.0, [20.0, 60.0, 70.0], [50.0, 300.0, 800.0], 1e6, 1e3);
        assert_eq!(s.saved_ns(), Some(1e6), "no find timed yet: W_f counts 0");
        s.found_waits = 50.0;
        s.found_wait_ns = 50.0 * 4e5;
        assert_eq!(s.saved_ns(), Some(6e5));
        // Where waking an idle CPU takes longer than the queue, finding
        // does not pay: the rule that finds and examines least wins.
        s.found_wait_ns = 50.0 * 1.2e6;
        assert_eq!(s.saved_ns(), Some(-2e5));
        assert_eq!(choose(Policy::Full, s.gains(), s.cpu_ns()), Policy::Util);
    }

    #[test]
    fn the_cost_per_cpu_prefers_the_active_scans() {
        let mut s = Sums {
            walk_ns: 500.0,
            walk_examined: 10.0,
            ..Default::default()
        };
        assert_eq!(s.cpu_ns(), Some(50.0), "the walk's, no active scans yet");
        s.scan_ns = 6400.0 * 3.0;
        s.scan_examined = 6400.0;
        assert_eq!(s.cpu_ns(), Some(3.0));
    }

    #[test]
    fn measurements_decay_by_half_over_the_half_life() {
        let mut llc = Llc::default();
        let one = Sums {
            judged: 100.0,
            ..Default::default()
        };
        llc.update(&one, 1);
        for _ in 0..32 {
            llc.update(&Sums::default(), 1);
        }
        assert!((llc.sums.judged - 50.0).abs() < 1e-9, "{}", llc.sums.judged);
        // Read every EVERY intervals, the sums halve over as many intervals.
        let mut llc = Llc::default();
        llc.update(&one, EVERY);
        for _ in 0..32 / EVERY {
            llc.update(&Sums::default(), EVERY);
        }
        assert!((llc.sums.judged - 50.0).abs() < 1e-9, "{}", llc.sums.judged);
    }

    #[test]
    fn the_sample_keeps_a_few_hundred_judged_scans_whatever_the_rate() {
        let t = TARGET_JUDGED;
        assert_eq!(sample_shift(0.0, t), 0);
        assert_eq!(sample_shift(2.0 * t - 1.0, t), 0, "few: all judged");
        assert_eq!(sample_shift(2.0 * t, t), 1);
        for scans in [300.0, 1e3, 4096.0, 1e5, 3e5] {
            let judged = scans / f64::from(1u32 << sample_shift(scans, t));
            assert!(
                (t..2.0 * t).contains(&judged),
                "{scans} scans: {judged} judged"
            );
        }
        assert_eq!(sample_shift(1e12, t), bpf_intf::SISU_AUTO_MAX_SHIFT);
    }

    #[test]
    fn where_a_find_saves_nothing_the_sample_is_a_quarter() {
        // 100 scans an interval, folded in to the steady state.
        let mut s = sums(100.0, [20.0, 60.0, 70.0], [50.0, 300.0, 800.0], 1e6, 1e3);
        s.scans = 100.0;
        let mut llc = Llc::default();
        for _ in 0..400 {
            llc.update(&s, 1);
        }
        let paying = llc.shift;
        assert_eq!(paying, sample_shift(llc.sums.scans, TARGET_JUDGED));
        s.found_waits = 100.0;
        s.found_wait_ns = 100.0 * 2e6;
        for _ in 0..400 {
            llc.update(&s, 1);
        }
        assert!(llc.sums.saved_ns().unwrap() < 0.0);
        assert_eq!(llc.shift, paying + 2);
        assert_eq!(llc.rule, Policy::Util);
    }

    #[test]
    fn an_llc_follows_its_load_and_counts_its_switches() {
        let mut llc = Llc::default();
        let moderate = sums(100.0, [30.0, 80.0, 85.0], [50.0, 350.0, 400.0], 1e6, 1e3);
        for _ in 0..4 {
            llc.update(&moderate, 1);
        }
        assert_eq!(llc.rule, Policy::Full);
        let saturated = sums(100.0, [0.0, 0.0, 1.0], [0.0, 300.0, 800.0], 1e6, 5e3);
        for _ in 0..160 {
            llc.update(&saturated, 1);
        }
        assert_eq!(llc.rule, Policy::Util);
        // Full, then util, maybe prop on the way as the old sums fade.
        assert!((2..=3).contains(&llc.switches), "{}", llc.switches);
    }
}
