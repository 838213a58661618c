//! The idle-CPU search policies and SIS_UTIL's depth math.
//!
//! SIS_PROP's math runs at every wakeup and so lives on the BPF side, in
//! `src/bpf/sis_prop.h`; its unit tests below run that same header.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::bpf_intf;

/// How many CPUs of the target's LLC a wakeup may search for an idle one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// SIS_UTIL (Linux 6.0+): depth from the LLC's utilisation
    Util,
    /// SIS_PROP (Linux 5.14-6.6): depth from expected idle time vs. scan cost
    Prop,
    /// Scan the whole LLC, no depth limit
    Full,
    /// Never scan the LLC: only target, prev, recent CPU, SMT sibling
    None,
    /// sched_ext's built-in idle selection (scx_bpf_select_cpu_dfl)
    Builtin,
}

impl Policy {
    pub const ALL: [Policy; 5] = [
        Policy::Util,
        Policy::Prop,
        Policy::Full,
        Policy::None,
        Policy::Builtin,
    ];

    /// The value of `enum sisu_policy` in BPF.
    pub fn to_bpf(self) -> u32 {
        match self {
            Policy::Util => bpf_intf::sisu_policy_SISU_POL_UTIL,
            Policy::Prop => bpf_intf::sisu_policy_SISU_POL_PROP,
            Policy::Full => bpf_intf::sisu_policy_SISU_POL_FULL,
            Policy::None => bpf_intf::sisu_policy_SISU_POL_NONE,
            Policy::Builtin => bpf_intf::sisu_policy_SISU_POL_BUILTIN,
        }
    }

    #[cfg(test)]
    pub fn from_bpf(v: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.to_bpf() == v)
    }

    pub fn name(self) -> &'static str {
        match self {
            Policy::Util => "util",
            Policy::Prop => "prop",
            Policy::Full => "full",
            Policy::None => "none",
            Policy::Builtin => "builtin",
        }
    }

    /// Whether the policy can be judged beside another one: the built-in
    /// selection cannot be replayed without claiming CPUs.
    pub fn can_shadow(self) -> bool {
        self != Policy::Builtin
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// imbalance_pct of the kernel's LLC (MC) domain.
pub const LLC_IMBALANCE_PCT: u64 = 117;
const SCALE: u64 = bpf_intf::SISU_CAPACITY as u64;

/// SIS_UTIL's scan depth for an LLC of `width` CPUs whose utilisations
/// (each 0..=1024) add up to `sum_util`, with the kernel's integer math
/// (update_idle_cpu_scan()).
///
/// The depth should shrink as the LLC fills, gently at first and steeply
/// near saturation, and reach zero a little before the LLC is fully busy,
/// where a scan would rarely find anything. With x the mean utilisation of
/// the LLC's CPUs (0..1024) and p the domain's imbalance_pct (117: the LLC
/// counts as overloaded above 100/117 = 85.5 %), the share of the LLC to
/// scan is the parabola
///
/// ```text
///   1 - (x/1024)^2 * (p/100)^2
/// ```
///
/// which is 1 when idle and 0 at x/1024 = 100/p. Kept in integers, scaled
/// by 1024 and rounded down at every step:
///
/// ```text
///   x  = sum_util / width                         // <= 1024
///   t  = min(x^2 * p^2 / (10000 * 1024), 1024)    // 1024 * (x/1024)^2 * (p/100)^2
///   nr = (1024 - t) * width / 1024
/// ```
pub fn nr_idle_scan(sum_util: u64, width: u64) -> u64 {
    if width == 0 {
        return 0;
    }
    // A CPU's utilisation never exceeds the capacity; holding x to it
    // keeps x^2 * p^2 inside u64 whatever the caller passes.
    let x = (sum_util / width).min(SCALE);
    let pct = LLC_IMBALANCE_PCT;
    let t = (x * x * pct * pct / (10_000 * SCALE)).min(SCALE);
    (SCALE - t) * width / SCALE
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SPEC.md's table: utilisation in % of the LLC's capacity against the
    /// depth for LLC widths 4, 8, 16, 32, 64 and 128.
    const TABLE: [(u64, [u64; 6]); 10] = [
        (0, [4, 8, 16, 32, 64, 128]),
        (20, [3, 7, 15, 30, 60, 121]),
        (40, [3, 6, 12, 25, 50, 100]),
        (50, [2, 5, 10, 21, 42, 84]),
        (60, [2, 4, 8, 16, 32, 65]),
        (70, [1, 2, 5, 10, 21, 42]),
        (75, [0, 1, 3, 7, 14, 29]),
        (80, [0, 1, 2, 4, 8, 16]),
        (85, [0, 0, 0, 0, 0, 1]),
        (86, [0, 0, 0, 0, 0, 0]),
    ];
    const WIDTHS: [u64; 6] = [4, 8, 16, 32, 64, 128];

    fn sum_at(pct: u64, width: u64) -> u64 {
        pct * SCALE * width / 100
    }

    #[test]
    fn matches_the_spec_table() {
        for (pct, row) in TABLE {
            for (w, want) in WIDTHS.iter().zip(row) {
                let got = nr_idle_scan(sum_at(pct, *w), *w);
                assert_eq!(got, want, "util {pct}% width {w}");
            }
        }
    }

    #[test]
    fn other_widths_follow_the_formula() {
        // Hand-computed: w=12 at 50%: x=512, t=512^2*13689/10240000=350,
        // nr=(1024-350)*12/1024=7. w=6 at 30%: x=307, t=125, nr=5.
        assert_eq!(nr_idle_scan(sum_at(50, 12), 12), 7);
        assert_eq!(nr_idle_scan(sum_at(30, 6), 6), 5);
        assert_eq!(nr_idle_scan(0, 1), 1);
        assert_eq!(nr_idle_scan(1024, 1), 0);
        assert_eq!(nr_idle_scan(0, 0), 0);
    }

    #[test]
    fn falls_monotonically_and_hits_zero_at_saturation() {
        for w in [2u64, 3, 4, 8, 16, 24, 48, 128, 256] {
            let mut last = w;
            for sum in (0..=w * SCALE).step_by(7) {
                let nr = nr_idle_scan(sum, w);
                assert!(nr <= last, "width {w} sum {sum}");
                last = nr;
            }
            assert_eq!(nr_idle_scan(w * SCALE, w), 0);
            // Above 100/117 of the capacity nothing is scanned.
            assert_eq!(nr_idle_scan(w * SCALE * 100 / 117 + w, w), 0);
        }
    }

    #[test]
    fn overloaded_sums_do_not_overflow() {
        assert_eq!(nr_idle_scan(u32::MAX as u64, 4), 0);
    }

    #[test]
    fn bpf_values_round_trip() {
        for p in Policy::ALL {
            assert_eq!(Policy::from_bpf(p.to_bpf()), Some(p));
        }
        assert_eq!(
            Policy::from_bpf(bpf_intf::sisu_policy_SISU_NR_POLICIES),
            None
        );
        assert!(!Policy::Builtin.can_shadow());
    }
}
