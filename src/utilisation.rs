//! Per-CPU utilisation in PELT's terms, made from the busy time BPF
//! accounts, and its sums per LLC.
//!
//! PELT's util_avg is a geometric series over 1024 us periods whose factor
//! y satisfies y^32 = 1/2, so that what a CPU did 32 ms ago weighs half of
//! what it does now, and a CPU busy all the time converges to the full
//! capacity, 1024. Folding an interval of length d in which the CPU was
//! busy a fraction f of the time into that series gives
//!
//!   util' = util * y^d + 1024 * f * (1 - y^d),   y^d = 2^(-d / 32 ms)
//!
//! which is exact when the busy time is spread evenly over the interval and
//! close to it otherwise. Each CPU counts as capacity 1024, as on a
//! symmetric machine.
//!
//! sched_ext tasks are invisible to the kernel's own PELT, which is why the
//! scheduler has to produce this itself.

use crate::bpf_intf;

/// How often the scheduler folds busy time and publishes the depths, by
/// default (`--interval-ms`), and how often the observer folds the
/// kernel's.
pub const DEFAULT_INTERVAL_MS: u64 = 16;

/// PELT's half-life.
pub const HALF_LIFE_NS: u64 = 32_000_000;
const CAPACITY: f64 = bpf_intf::SISU_CAPACITY as f64;

/// One step of the series: `util` after `dt_ns` during which the CPU was
/// busy `busy_ns` of the time.
pub fn fold(util: f64, busy_ns: u64, dt_ns: u64) -> f64 {
    if dt_ns == 0 {
        return util;
    }
    let frac = (busy_ns as f64 / dt_ns as f64).clamp(0.0, 1.0);
    let decay = 0.5f64.powf(dt_ns as f64 / HALF_LIFE_NS as f64);
    (util * decay + CAPACITY * frac * (1.0 - decay)).clamp(0.0, CAPACITY)
}

/// CLOCK_MONOTONIC in ns: the clock of bpf_ktime_get_ns(), which BPF
/// stamps busy time with.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A CPU's busy time up to `now_ns`: what BPF has accounted plus the part
/// of the current run that it has not yet.
pub fn busy_at(busy_ns: u64, acct_from: u64, running: bool, now_ns: u64) -> u64 {
    if running && now_ns > acct_from {
        busy_ns + (now_ns - acct_from)
    } else {
        busy_ns
    }
}

#[derive(Clone, Copy, Debug)]
struct CpuState {
    util: f64,
    busy_ns: u64,
    at_ns: u64,
}

/// The utilisation of every CPU, updated from cumulative busy-time samples.
#[derive(Clone, Debug, Default)]
pub struct Tracker {
    cpus: Vec<Option<CpuState>>,
}

impl Tracker {
    pub fn new(nr_cpu_ids: usize) -> Self {
        Self {
            cpus: vec![None; nr_cpu_ids],
        }
    }

    /// Fold in a sample: `busy_ns` is the CPU's cumulative busy time at
    /// `now_ns`. The first sample, and one after the counter went
    /// backwards (the BPF side restarted), only sets the baseline.
    pub fn update(&mut self, cpu: usize, busy_ns: u64, now_ns: u64) {
        let Some(slot) = self.cpus.get_mut(cpu) else {
            return;
        };
        *slot = Some(match *slot {
            Some(prev) if busy_ns >= prev.busy_ns && now_ns > prev.at_ns => CpuState {
                util: fold(prev.util, busy_ns - prev.busy_ns, now_ns - prev.at_ns),
                busy_ns,
                at_ns: now_ns,
            },
            Some(prev) if now_ns <= prev.at_ns => prev,
            prev => CpuState {
                util: prev.map_or(0.0, |p| p.util),
                busy_ns,
                at_ns: now_ns,
            },
        });
    }

    /// A CPU's utilisation, 0..=1024, as the kernel's integer util_avg.
    pub fn util(&self, cpu: usize) -> u64 {
        self.cpus
            .get(cpu)
            .copied()
            .flatten()
            .map_or(0, |s| s.util as u64)
    }

    /// sum_util of an LLC: the sum of its CPUs' integer utilisations.
    pub fn sum(&self, cpus: &[usize]) -> u64 {
        cpus.iter().map(|&c| self.util(c)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Runs `steps` intervals of `dt` ms with the CPU busy `pct` % of each.
    fn drive(t: &mut Tracker, busy: &mut u64, now: &mut u64, steps: u32, dt: u64, pct: u64) {
        for _ in 0..steps {
            *now += dt * MS;
            *busy += dt * MS * pct / 100;
            t.update(0, *busy, *now);
        }
    }

    #[test]
    fn busy_cpu_approaches_capacity() {
        let (mut t, mut busy, mut now) = (Tracker::new(1), 0, 1);
        t.update(0, busy, now);
        drive(&mut t, &mut busy, &mut now, 2, 16, 100);
        assert!(
            t.util(0).abs_diff(512) <= 1,
            "half the capacity after one half-life"
        );
        drive(&mut t, &mut busy, &mut now, 40, 16, 100);
        assert!(t.util(0) >= 1023, "got {}", t.util(0));
        assert!(t.util(0) <= 1024);
    }

    #[test]
    fn idle_cpu_halves_every_half_life() {
        let (mut t, mut busy, mut now) = (Tracker::new(1), 0, 1);
        t.update(0, busy, now);
        drive(&mut t, &mut busy, &mut now, 100, 16, 100);
        let full = t.util(0);
        drive(&mut t, &mut busy, &mut now, 2, 16, 0);
        let half = t.util(0);
        assert!((full / 2).abs_diff(half) <= 1, "{full} -> {half}");
        drive(&mut t, &mut busy, &mut now, 4, 8, 0);
        assert!((full / 4).abs_diff(t.util(0)) <= 1);
    }

    #[test]
    fn partial_load_converges_to_its_share() {
        let (mut t, mut busy, mut now) = (Tracker::new(1), 0, 1);
        t.update(0, busy, now);
        drive(&mut t, &mut busy, &mut now, 200, 10, 30);
        assert!(t.util(0).abs_diff(307) <= 1, "got {}", t.util(0));
    }

    #[test]
    fn interval_length_does_not_change_the_result() {
        let one = fold(100.0, 20 * MS, 40 * MS);
        let two = fold(fold(100.0, 10 * MS, 20 * MS), 10 * MS, 20 * MS);
        assert!((one - two).abs() < 1e-9);
    }

    #[test]
    fn first_sample_and_counter_reset_only_set_the_baseline() {
        let mut t = Tracker::new(2);
        t.update(1, 5_000 * MS, 10_000 * MS);
        assert_eq!(t.util(1), 0);
        t.update(1, 5_032 * MS, 10_032 * MS);
        let half = t.util(1);
        assert!(half.abs_diff(512) <= 1);
        // The counter restarted: keep the utilisation, rebase.
        t.update(1, 0, 10_048 * MS);
        assert_eq!(t.util(1), half);
        // A sample from the same instant changes nothing.
        t.update(1, 0, 10_048 * MS);
        assert_eq!(t.util(1), half);
        // Unknown CPUs are ignored.
        t.update(7, 1, 1);
        assert_eq!(t.util(7), 0);
    }

    #[test]
    fn llc_sum_adds_integer_utilisations() {
        let mut t = Tracker::new(4);
        for cpu in 0..4 {
            t.update(cpu, 0, MS);
            t.update(cpu, 32 * MS * cpu as u64 / 3, 33 * MS);
        }
        let expect: u64 = (0..4).map(|c| t.util(c)).sum();
        assert_eq!(t.sum(&[0, 1, 2, 3]), expect);
        assert_eq!(t.sum(&[]), 0);
    }

    #[test]
    fn busy_includes_the_running_stretch() {
        assert_eq!(busy_at(100, 50, true, 80), 130);
        assert_eq!(busy_at(100, 50, false, 80), 100);
        assert_eq!(busy_at(100, 90, true, 80), 100);
    }
}
