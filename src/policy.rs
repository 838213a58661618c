//! SIS_UTIL's depth, as userspace publishes it (the policies themselves
//! are named in sisutil_proto::policy).
//!
//! Both rules' arithmetic lives on the BPF side, in `src/bpf/sis_util.h`
//! (derived there) and `src/bpf/sis_prop.h`, and every rule's depth in
//! `src/bpf/depth.h`, compiled for the host too (build.rs, host.c):
//! userspace and the unit tests below run the code BPF runs.

#[cfg(test)]
use crate::bpf_intf;
pub use sisutil_proto::policy::Policy;

#[cfg(test)]
const SCALE: u64 = bpf_intf::SISU_CAPACITY as u64;

extern "C" {
    fn sisu_util_nr(sum_util: u64, width: u64) -> u64;
}

/// SIS_UTIL's scan depth for an LLC of `width` CPUs whose utilisations
/// (each 0..=1024) add up to `sum_util`: sis_util_nr() of sis_util.h.
pub fn nr_idle_scan(sum_util: u64, width: u64) -> u64 {
    // SAFETY: a pure function of two integers.
    unsafe { sisu_util_nr(sum_util, width) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/policies.md's table: utilisation in % of the LLC's capacity against the
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
}

#[cfg(test)]
mod sis_prop_tests {
    use crate::bpf_intf::{sisu_book_SISU_BOOK_ACTIVE as ACTIVE, sisu_cpu_ctx, sisu_prop_books};

    extern "C" {
        fn sisu_avg_update(avg: *mut u64, sample: u64);
        fn sisu_prop_reset(c: *mut sisu_cpu_ctx, now_jiffies: u64);
        fn sisu_prop_idle_end(c: *mut sisu_cpu_ctx, idle_ns: u64, now_jiffies: u64);
        fn sisu_prop_age(b: *mut sisu_prop_books, now_jiffies: u64);
        fn sisu_prop_nr(width: u32, wake_avg_idle: u64, avg_scan_cost: u64) -> u64;
        fn sisu_prop_charge(b: *mut sisu_prop_books, scan_ns: u64);
        fn sisu_prop_charge_sampled(b: *mut sisu_prop_books, scan_ns: u64, shift: u32);
        fn sisu_prop_share(walk_ns: u64, examined: u32, walk_examined: u32) -> u64;
    }

    // SAFETY (all wrappers): the C functions only read and write the
    // record or integer they are handed.
    fn avg(mut a: u64, sample: u64) -> u64 {
        unsafe { sisu_avg_update(&mut a, sample) };
        a
    }

    fn fresh(j: u64) -> sisu_cpu_ctx {
        let mut c: sisu_cpu_ctx = unsafe { std::mem::zeroed() };
        unsafe { sisu_prop_reset(&mut c, j) };
        c
    }

    fn idle_end(c: &mut sisu_cpu_ctx, idle_ns: u64, j: u64) {
        unsafe { sisu_prop_idle_end(c, idle_ns, j) }
    }

    fn age(b: &mut sisu_prop_books, j: u64) {
        unsafe { sisu_prop_age(b, j) }
    }

    fn nr(width: u32, wake_avg_idle: u64, cost: u64) -> u64 {
        unsafe { sisu_prop_nr(width, wake_avg_idle, cost) }
    }

    fn charge(b: &mut sisu_prop_books, scan_ns: u64) {
        unsafe { sisu_prop_charge(b, scan_ns) }
    }

    fn charge_sampled(b: &mut sisu_prop_books, scan_ns: u64, shift: u32) {
        unsafe { sisu_prop_charge_sampled(b, scan_ns, shift) }
    }

    fn share(walk_ns: u64, examined: u32, walk_examined: u32) -> u64 {
        unsafe { sisu_prop_share(walk_ns, examined, walk_examined) }
    }

    /// The active policy's books of @c.
    fn books(c: &mut sisu_cpu_ctx) -> &mut sisu_prop_books {
        &mut c.prop[ACTIVE as usize]
    }

    #[test]
    fn boot_values() {
        let c = fresh(42);
        assert_eq!(c.avg_idle, 1_000_000, "2 x sysctl_sched_migration_cost");
        assert_eq!(c.idle_stamp, 0);
        for b in c.prop {
            assert_eq!(b.wake_avg_idle, 1_000_000);
            assert_eq!(b.wake_stamp, 42);
            assert_eq!(b.avg_scan_cost, 0);
        }
    }

    #[test]
    fn moving_average_is_one_eighth_and_signed() {
        assert_eq!(avg(1_000_000, 200_000), 900_000);
        assert_eq!(avg(800, 1_600), 900);
        // The difference is divided towards zero, as s64 division does.
        assert_eq!(avg(10, 3), 10);
        assert_eq!(avg(10, 2), 9);
        assert_eq!(avg(0, 7), 0);
    }

    #[test]
    fn idle_end_caps_and_refills_every_budget() {
        let mut c = fresh(0);
        // Books that spent differently start over alike: the idle period
        // is the CPU's.
        c.prop[1].wake_avg_idle = 3;
        c.prop[1].avg_scan_cost = 900;
        idle_end(&mut c, 200_000, 7);
        assert_eq!(c.avg_idle, 900_000);
        for b in c.prop {
            assert_eq!(b.wake_avg_idle, 450_000, "half the average idle period");
            assert_eq!(b.wake_stamp, 7);
        }
        assert_eq!(
            c.prop[1].avg_scan_cost, 900,
            "the learnt cost stays its own"
        );
        // A long idle period cannot push the average past 1 ms.
        idle_end(&mut c, 50_000_000, 9);
        assert_eq!(c.avg_idle, 1_000_000);
        assert_eq!(c.prop[0].wake_avg_idle, 500_000);
    }

    #[test]
    fn aging_halves_once_per_jiffy() {
        let mut c = fresh(100);
        let b = books(&mut c);
        b.wake_avg_idle = 500_000;
        age(b, 100);
        assert_eq!(
            (b.wake_avg_idle, b.wake_stamp),
            (500_000, 100),
            "same jiffy"
        );
        age(b, 103);
        assert_eq!((b.wake_avg_idle, b.wake_stamp), (62_500, 103));
        // Long busy: the budget runs out after 16 more halvings and the
        // stamp stays where it emptied, as in the kernel's loop.
        age(b, 10_000);
        assert_eq!(b.wake_avg_idle, 0);
        assert_eq!(b.wake_stamp, 103 + 16);
        // Even u64::MAX empties within the 64 rounds.
        b.wake_avg_idle = u64::MAX;
        b.wake_stamp = 0;
        age(b, 1_000);
        assert_eq!((b.wake_avg_idle, b.wake_stamp), (0, 64));
        assert_eq!(
            c.prop[1].wake_avg_idle, 1_000_000,
            "the other book ages apart"
        );
    }

    #[test]
    fn depth_is_idle_time_over_scan_cost_with_a_floor_of_four() {
        // span_avg = 8 * 500 us = 4 ms; avg_cost = 999 + 1 ns -> 4000.
        assert_eq!(nr(8, 500_000, 999), 4000);
        // span_avg = 16 * 10 us = 160 us over 20 us -> 8.
        assert_eq!(nr(16, 10_000, 19_999), 8);
        // Not more than four scans' worth: the floor.
        assert_eq!(nr(4, 100, 999), 4);
        assert_eq!(
            nr(4, 1_000, 999),
            4,
            "span_avg == 4 * avg_cost is not above"
        );
        assert_eq!(nr(4, 1_001, 999), 4, "just above: 4004 / 1000");
        assert_eq!(nr(8, 0, 0), 4);
        // A fresh CPU (no scan cost learnt yet) allows a huge depth.
        assert_eq!(nr(4, 1_000_000, 0), 4_000_000);
    }

    #[test]
    fn scans_are_charged_back() {
        let mut c = fresh(0);
        let b = books(&mut c);
        b.wake_avg_idle = 1_000;
        charge(b, 300);
        assert_eq!(b.wake_avg_idle, 700);
        assert_eq!(b.avg_scan_cost, 37, "0 + 300 / 8");
        charge(b, 5_000);
        assert_eq!(b.wake_avg_idle, 0, "never below zero");
        assert_eq!(b.avg_scan_cost, 37 + (5_000 - 37) / 8);
        // The cost the next depth divides by grew: fewer CPUs next time.
        assert!(nr(8, 500_000, b.avg_scan_cost) < nr(8, 500_000, 37));
    }

    #[test]
    fn a_sampled_scan_spends_for_every_scan_it_stands_for() {
        let mut c = fresh(0);
        let b = books(&mut c);
        b.wake_avg_idle = 10_000;
        // One scan in 8 judged: 300 ns spent eight times over...
        charge_sampled(b, 300, 3);
        assert_eq!(b.wake_avg_idle, 10_000 - 8 * 300);
        // ... and the cost learnt once, as from one scan.
        assert_eq!(b.avg_scan_cost, 37, "0 + 300 / 8");
        // Unsampled, it is the plain charge.
        let (mut one, mut other) = (fresh(0), fresh(0));
        charge(books(&mut one), 300);
        charge_sampled(books(&mut other), 300, 0);
        let (a, b) = (books(&mut one), books(&mut other));
        assert_eq!(
            (a.wake_avg_idle, a.avg_scan_cost),
            (b.wake_avg_idle, b.avg_scan_cost)
        );
        // A lump beyond any budget empties it without wrapping around.
        let b = books(&mut other);
        charge_sampled(b, u64::MAX / 2, 12);
        assert_eq!(b.wake_avg_idle, 0);
    }

    #[test]
    fn a_shared_walk_is_charged_by_the_cpus_each_scan_examines() {
        // A walk of 8 CPUs took 800 ns; SIS_PROP's depth stopped at 3.
        assert_eq!(share(800, 3, 8), 300);
        // Its scan is the whole walk: charged whole, fixed cost and all.
        assert_eq!(share(800, 8, 8), 800);
        assert_eq!(share(800, 9, 8), 800);
        // A walk that examined nothing (no allowed CPU) costs what it took.
        assert_eq!(share(150, 0, 0), 150);
        assert_eq!(share(150, 0, 4), 0);
    }
}

#[cfg(test)]
mod sis_current_tests {
    //! SIS_CURRENT's decision, from the very header BPF runs (host.c).

    extern "C" {
        fn sisu_current_ok(
            target_is_waker_cpu: bool,
            nr_running: u32,
            waker_dur: u64,
            wakee_dur: u64,
            limit: u64,
            pair: bool,
            busy: bool,
        ) -> bool;
        fn sisu_current_pair(
            waker: i32,
            wakee: i32,
            waker_last: i32,
            wakee_last: i32,
            waker_flips: u32,
            wakee_flips: u32,
        ) -> bool;
        fn sisu_current_busy(nr_idle_scan: u32, width: u32, idle_core: bool) -> bool;
    }

    /// sysctl_sched_migration_cost's default.
    const LIMIT: u64 = 500_000;

    // SAFETY (all three): pure functions of their integer arguments.
    fn ok(here: bool, nr: u32, waker: u64, wakee: u64, pair: bool, busy: bool) -> bool {
        unsafe { sisu_current_ok(here, nr, waker, wakee, LIMIT, pair, busy) }
    }

    fn pair(a: i32, b: i32, a_last: i32, b_last: i32, fa: u32, fb: u32) -> bool {
        unsafe { sisu_current_pair(a, b, a_last, b_last, fa, fb) }
    }

    fn busy(nr: u32, width: u32, idle_core: bool) -> bool {
        unsafe { sisu_current_busy(nr, width, idle_core) }
    }

    #[test]
    fn short_is_under_the_migration_cost_and_measured() {
        assert!(ok(true, 1, 100_000, 499_999, true, true));
        assert!(
            !ok(true, 1, 100_000, 500_000, true, true),
            "500 us is not short"
        );
        assert!(!ok(true, 1, 0, 100_000, true, true), "never seen to sleep");
        assert!(!ok(true, 1, 600_000, 100_000, true, true), "a long waker");
        // The bound is the kernel's tunable: raised, longer tasks are short.
        assert!(unsafe { sisu_current_ok(true, 1, 600_000, 900_000, 1_000_000, true, true) });
    }

    #[test]
    fn only_the_wakers_own_cpu_running_only_the_waker() {
        assert!(!ok(false, 1, 1_000, 1_000, true, true), "target elsewhere");
        assert!(
            !ok(true, 2, 1_000, 1_000, true, true),
            "a task queued behind the waker"
        );
        assert!(ok(true, 0, 1_000, 1_000, true, true));
        assert!(!ok(true, 1, 1_000, 1_000, false, true), "not a pair");
        assert!(!ok(true, 1, 1_000, 1_000, true, false), "not busy");
    }

    #[test]
    fn a_pair_wakes_only_each_other() {
        assert!(pair(10, 20, 20, 10, 0, 0));
        assert!(!pair(10, 20, 20, 30, 0, 0), "the wakee last woke another");
        assert!(!pair(10, 20, 30, 10, 0, 0), "the waker last woke another");
        assert!(
            !pair(10, 20, 20, 10, 1, 0),
            "the waker switched partners lately"
        );
        assert!(!pair(10, 20, 20, 10, 0, 2), "so did the wakee");
    }

    #[test]
    fn busy_is_sis_utils_depth_under_60_percent_without_an_idle_core() {
        // 8 CPUs: 60 % is 4.8; a depth of 4 is under it, 5 is not.
        assert!(busy(4, 8, false));
        assert!(!busy(5, 8, false));
        assert!(!busy(0, 8, true), "an idle core is known");
        assert!(busy(0, 8, false));
        // SIS_UTIL's table (policies.md): at 50 % an 8-CPU LLC scans 5,
        // at 60 % 4: the gate opens between the two.
        assert!(!busy(
            crate::policy::nr_idle_scan(8 * 1024 / 2, 8) as u32,
            8,
            false
        ));
        assert!(busy(
            crate::policy::nr_idle_scan(8 * 1024 * 6 / 10, 8) as u32,
            8,
            false
        ));
    }
}

#[cfg(test)]
mod rule_depth_tests {
    use super::Policy;
    use crate::bpf_intf::{sisu_llc_load, sisu_prop_books};

    /// depth.h's struct depth.
    #[repr(C)]
    #[derive(Debug, Default, PartialEq)]
    struct Depth {
        limit: u64,
        budget: u32,
        scan: bool,
    }

    extern "C" {
        fn sisu_rule_depth(
            pol: u32,
            width: u32,
            small: u32,
            idle_core: bool,
            b: *const sisu_prop_books,
            ld: *const sisu_llc_load,
            d: *mut Depth,
        );
    }

    const ALL: u32 = u32::MAX;

    fn depth(
        p: Policy,
        width: u32,
        small: u32,
        core: bool,
        b: Option<&sisu_prop_books>,
        util_nr: u32,
    ) -> Depth {
        // SIS_UTIL's depth from the sum it stands for.
        let sum_util = load_for(util_nr, width);
        depth_at(p, width, small, core, b, sum_util, util_nr)
    }

    /// A sum of utilisation for which SIS_UTIL's depth is @nr (the largest).
    fn load_for(nr: u32, width: u32) -> u32 {
        (0..=width * 1024)
            .rev()
            .find(|&s| super::nr_idle_scan(s as u64, width as u64) == nr as u64)
            .unwrap_or(0)
    }

    fn depth_at(
        p: Policy,
        width: u32,
        small: u32,
        core: bool,
        b: Option<&sisu_prop_books>,
        sum_util: u32,
        util_nr: u32,
    ) -> Depth {
        let mut d = Depth::default();
        let b = b.map_or(std::ptr::null(), |b| b as *const _);
        let ld = sisu_llc_load { sum_util, util_nr };
        // SAFETY: reads the books and the load it is handed, writes only @d.
        unsafe { sisu_rule_depth(p.to_bpf(), width, small, core, b, &ld, &mut d) };
        d
    }

    fn d(limit: u64, budget: u32, scan: bool) -> Depth {
        Depth {
            limit,
            budget,
            scan,
        }
    }

    #[test]
    fn each_rule_sets_its_depth() {
        assert_eq!(depth(Policy::Util, 8, 0, false, None, 3), d(3, 3, true));
        // SIS_UTIL's 0 stops even the idle-core search.
        assert_eq!(depth(Policy::Util, 8, 0, true, None, 0), d(0, ALL, false));
        assert_eq!(depth(Policy::Util, 8, 0, true, None, 3), d(3, ALL, true));
        assert_eq!(depth(Policy::Full, 8, 0, false, None, 0), d(8, ALL, true));
        assert_eq!(depth(Policy::None, 8, 0, false, None, 8), d(0, ALL, false));
    }

    #[test]
    fn the_small_llc_rule_widens_any_util_depth() {
        assert_eq!(depth(Policy::Util, 4, 4, false, None, 1), d(4, 4, true));
        assert_eq!(depth(Policy::Util, 4, 4, false, None, 0), d(0, 0, false));
        assert_eq!(depth(Policy::Util, 8, 4, false, None, 1), d(1, 1, true));
    }

    #[test]
    fn flat_scans_all_below_half_busy_and_as_util_above() {
        // 8 CPUs, half busy at 4096; util's depth is what the sum gives.
        let at = |sum: u32, core: bool| {
            let nr = super::nr_idle_scan(sum as u64, 8) as u32;
            (
                depth_at(Policy::Flat, 8, 0, core, None, sum, nr),
                depth_at(Policy::Util, 8, 0, core, None, sum, nr),
            )
        };
        let (flat, util) = at(4095, false);
        assert_eq!(flat, d(8, ALL, true));
        assert!(util.budget < 8, "{util:?}");
        let (flat, util) = at(4096, false);
        assert_eq!(flat, util);
        assert!(flat.budget < 8, "{flat:?}");
        // Near saturation both stop, idle core or not.
        let (flat, util) = at(8 * 1000, true);
        assert_eq!(flat, util);
        assert!(!flat.scan);
        // The small-LLC rule applies above the threshold as for util.
        let nr = super::nr_idle_scan(3000, 4) as u32;
        assert_eq!(
            depth_at(Policy::Flat, 4, 4, false, None, 3000, nr),
            d(4, 4, true)
        );
    }

    #[test]
    fn prop_spends_its_books_and_examines_one_less() {
        let b = sisu_prop_books {
            wake_avg_idle: 4_000,
            wake_stamp: 0,
            avg_scan_cost: 100,
        };
        // 8 x 4000 ns of idle time over 101 ns a scan: 316 (the walk ends
        // at the LLC's end anyway); with little idle time, the floor of 4.
        assert_eq!(
            depth(Policy::Prop, 8, 0, false, Some(&b), 0),
            d(316, 315, true)
        );
        let poor = sisu_prop_books {
            wake_avg_idle: 10,
            ..b
        };
        assert_eq!(
            depth(Policy::Prop, 8, 0, false, Some(&poor), 0),
            d(4, 3, true)
        );
        // Without books, or for the idle-core search, it does not limit.
        assert_eq!(depth(Policy::Prop, 8, 0, false, None, 0), d(8, ALL, true));
        assert_eq!(
            depth(Policy::Prop, 8, 0, true, Some(&b), 0),
            d(8, ALL, true)
        );
    }
}
