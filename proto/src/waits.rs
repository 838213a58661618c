//! The wakeup-to-running wait histograms BPF keeps (`wait_hist` in
//! intf.h, its slots in the scheduler's src/bpf/wait_hist.h): each slot's
//! range, and percentiles read off them.
//!
//! The slots are BPF's (log-linear, four to a power of two) and the counts
//! arrive already binned, so a histogram crate would only re-bin them; the
//! inverse of the slot function is four lines, and the scheduler's unit
//! tests check it against the C function itself.

use crate::intf;

pub const SLOTS: usize = intf::SISU_WAIT_SLOTS as usize;
const SHIFT: u32 = intf::SISU_WAIT_SHIFT;

/// The waits slot @s holds, in ns: [lower, upper); the last slot's upper
/// bound is its lower one doubled, as a stand-in for "and longer".
pub fn slot_range(s: usize) -> (u64, u64) {
    if s == 0 {
        return (0, 1 << SHIFT);
    }
    let o = SHIFT + (s as u32 - 1) / 4;
    let sub = (s as u64 - 1) % 4;
    let quarter = 1u64 << (o - 2);
    let lower = quarter * (4 + sub);
    if s == SLOTS - 1 {
        return (lower, 2 * lower);
    }
    (lower, lower + quarter)
}

/// The @q-th quantile (0..=1) of the waits in @hist, in ns: the middle of
/// the slot where the count reaches q of the total (within 12.5 % of the
/// true value but in the first and last slots). None for no waits.
pub fn quantile(hist: &[u64], q: f64) -> Option<f64> {
    let total: u64 = hist.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = (q.clamp(0.0, 1.0) * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (s, &n) in hist.iter().enumerate() {
        seen += n;
        if seen >= rank {
            let (lo, hi) = slot_range(s);
            return Some((lo + hi) as f64 / 2.0);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_tile_the_line() {
        assert_eq!(slot_range(0), (0, 1024));
        assert_eq!(slot_range(1), (1024, 1280));
        assert_eq!(slot_range(4), (1792, 2048));
        assert_eq!(slot_range(5), (2048, 2560));
        for s in 1..SLOTS - 1 {
            assert_eq!(slot_range(s).0, slot_range(s - 1).1, "slot {s}");
        }
        let (lo, hi) = slot_range(SLOTS - 1);
        assert_eq!(lo, 3 << 32, "1.5 * 2^33 ns, about 12.9 s");
        assert_eq!(hi, 3 << 33);
    }

    #[test]
    fn quantiles_come_from_the_slot_middles() {
        let mut h = vec![0u64; SLOTS];
        assert_eq!(quantile(&h, 0.5), None);
        h[1] = 50; // 1024..1280
        h[5] = 40; // 2048..2560
        h[9] = 10; // 4096..5120
        assert_eq!(quantile(&h, 0.5), Some(1152.0));
        assert_eq!(quantile(&h, 0.51), Some(2304.0));
        assert_eq!(quantile(&h, 0.9), Some(2304.0));
        assert_eq!(quantile(&h, 0.99), Some(4608.0));
        assert_eq!(quantile(&h, 0.0), Some(1152.0));
    }
}
