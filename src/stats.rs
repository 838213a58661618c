//! BPF's per-CPU scan counters, summed, and turned into the statistics'
//! record (`Metrics`, whose schema is sisutil_proto's).

use std::collections::BTreeMap;

use anyhow::{bail, Result};

use crate::bpf_intf;
use crate::op_time::OpTime;
pub use sisutil_proto::stats::*;

const SLOTS: usize = bpf_intf::SISU_HIST_SLOTS as usize;
const WORDS: usize = std::mem::size_of::<bpf_intf::sisu_stats>() / 8;

/// `struct sisu_stats` is u64 fields only, so it is handled as a flat array
/// of counters: summed over CPUs, diffed against a baseline, then read
/// back as the struct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counters(Vec<u64>);

impl Default for Counters {
    fn default() -> Self {
        Self(vec![0; WORDS])
    }
}

impl Counters {
    /// Sums the per-CPU copies of one policy's counters.
    pub fn sum_cpus(per_cpu: &[Vec<u8>]) -> Result<Self> {
        let mut words = vec![0u64; WORDS];
        for raw in per_cpu {
            if raw.len() < WORDS * 8 {
                bail!(
                    "stats record of {} bytes, expected {}",
                    raw.len(),
                    WORDS * 8
                );
            }
            for (w, chunk) in words.iter_mut().zip(raw.chunks_exact(8)) {
                let mut b = [0u8; 8];
                b.copy_from_slice(chunk);
                *w = w.wrapping_add(u64::from_ne_bytes(b));
            }
        }
        Ok(Self(words))
    }

    /// What was counted since `base` was taken.
    pub fn since(&self, base: &Counters) -> Counters {
        Counters(
            self.0
                .iter()
                .zip(&base.0)
                .map(|(a, b)| a.saturating_sub(*b))
                .collect(),
        )
    }

    pub fn view(&self) -> bpf_intf::sisu_stats {
        // SAFETY: sisu_stats is repr(C) and made of u64 only (WORDS of
        // them, no padding), for which all-zero is valid; self.0 holds
        // exactly WORDS values.
        let mut s: bpf_intf::sisu_stats = unsafe { std::mem::zeroed() };
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.0.as_ptr(),
                &mut s as *mut bpf_intf::sisu_stats as *mut u64,
                WORDS,
            );
        }
        s
    }

    #[cfg(test)]
    pub fn from_view(s: &bpf_intf::sisu_stats) -> Self {
        let mut words = vec![0u64; WORDS];
        // SAFETY: as in view().
        unsafe {
            std::ptr::copy_nonoverlapping(
                s as *const bpf_intf::sisu_stats as *const u64,
                words.as_mut_ptr(),
                WORDS,
            );
        }
        Self(words)
    }
}

/// One LLC's `struct sisu_llc_scans`, summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LlcScans {
    pub scans: u64,
    pub found: [[u64; 2]; 2],
}

impl LlcScans {
    pub fn sum_cpus(per_cpu: &[Vec<u8>]) -> Result<Self> {
        let mut t = Self::default();
        for raw in per_cpu {
            let words = std::mem::size_of::<bpf_intf::sisu_llc_scans>() / 8;
            if raw.len() < words * 8 {
                bail!(
                    "per-LLC scan record of {} bytes, expected {}",
                    raw.len(),
                    words * 8
                );
            }
            let w: Vec<u64> = raw
                .chunks_exact(8)
                .take(words)
                .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
                .collect();
            t.scans += w[0];
            t.found[0][0] += w[1];
            t.found[0][1] += w[2];
            t.found[1][0] += w[3];
            t.found[1][1] += w[4];
        }
        Ok(t)
    }

    /// What was counted since `base` (none: since the start).
    pub fn since(&self, base: Option<&LlcScans>) -> LlcScans {
        let b = base.copied().unwrap_or_default();
        let d = |a: u64, b: u64| a.saturating_sub(b);
        LlcScans {
            scans: d(self.scans, b.scans),
            found: [
                [
                    d(self.found[0][0], b.found[0][0]),
                    d(self.found[0][1], b.found[0][1]),
                ],
                [
                    d(self.found[1][0], b.found[1][0]),
                    d(self.found[1][1], b.found[1][1]),
                ],
            ],
        }
    }

    /// Of the scans that had an idle CPU to find, the share that found one, in %.
    pub fn found_pct(&self) -> f64 {
        100.0 * ratio(self.found[1][1], self.found[1][1] + self.found[1][0])
    }
}

/// Folds a histogram into `top + 1` slots, the last holding `top` and more.
pub fn fold_hist(hist: &[u64], top: usize) -> Vec<u64> {
    let top = top.min(SLOTS - 1);
    let mut out = hist[..top.min(hist.len())].to_vec();
    out.resize(top, 0);
    out.push(hist.iter().skip(top).sum());
    out
}

/// What the scheduler knows besides the counters.
pub struct Context {
    pub policy: String,
    pub shadow: String,
    pub small_llc: u64,
    pub switches: u64,
    pub elapsed_s: f64,
    pub topology: String,
    pub llcs: Vec<LlcMetrics>,
    /// Each op's calls and run time over the same span as the counters.
    pub ops: Vec<(String, OpTime)>,
}

const SPAN_LLC: u32 = bpf_intf::sisu_span_SISU_SPAN_LLC;
const SPAN_NODE: u32 = bpf_intf::sisu_span_SISU_SPAN_NODE;
const SPAN_PACKAGE: u32 = bpf_intf::sisu_span_SISU_SPAN_PACKAGE;
const SPAN_REMOTE: u32 = bpf_intf::sisu_span_SISU_SPAN_REMOTE;

/// The sum of a per-span counter over @spans.
fn span(counts: &[u64], spans: &[u32]) -> u64 {
    spans.iter().map(|&i| counts[i as usize]).sum()
}

/// The record of @c, with what the scheduler knows besides.
pub fn metrics(c: &Counters, ctx: Context) -> Metrics {
    let s = c.view();
    let out = |o: u32| s.outcome[o as usize];
    let top = ctx.llcs.iter().map(|l| l.width as usize).max().unwrap_or(0);
    Metrics {
        policy: ctx.policy,
        shadow: ctx.shadow,
        small_llc: ctx.small_llc,
        switches: ctx.switches,
        elapsed_s: ctx.elapsed_s,
        topology: ctx.topology,
        wakeups: s.wakeups,
        queued_wakeups: s.queued_wakeups,
        wake_affine: s.affine,
        wake_target: out(bpf_intf::sisu_outcome_SISU_OUT_TARGET),
        wake_prev: out(bpf_intf::sisu_outcome_SISU_OUT_PREV),
        wake_recent: out(bpf_intf::sisu_outcome_SISU_OUT_RECENT),
        wake_smt: out(bpf_intf::sisu_outcome_SISU_OUT_SMT),
        wake_scan: out(bpf_intf::sisu_outcome_SISU_OUT_SCAN),
        wake_busy: out(bpf_intf::sisu_outcome_SISU_OUT_BUSY),
        wake_fork: out(bpf_intf::sisu_outcome_SISU_OUT_FORK),
        wake_moved_llc: span(&s.moved, &[SPAN_NODE, SPAN_PACKAGE, SPAN_REMOTE]),
        wake_moved_node: span(&s.moved, &[SPAN_PACKAGE, SPAN_REMOTE]),
        pull_llc: span(&s.pull, &[SPAN_LLC]),
        pull_node: span(&s.pull, &[SPAN_NODE]),
        pull_package: span(&s.pull, &[SPAN_PACKAGE]),
        pull_remote: span(&s.pull, &[SPAN_REMOTE]),
        pull_running: s.pushed,
        rescued: s.rescued,
        rcu_readers: s.rcu_readers,
        scans: s.scans,
        core_scans: s.core_scans,
        scan_ns: s.scan_ns,
        scan_ns_mean: ratio(s.scan_ns, s.scans),
        scan_ns_per_cpu: ratio(s.scan_ns, s.scan_examined),
        shadow_scan_ns: s.shadow_scan_ns,
        shadow_scan_ns_per_cpu: ratio(s.shadow_scan_ns, s.shadow_examined),
        idle_found: s.found[1][1],
        idle_missed: s.found[1][0],
        no_idle: s.found[0][0],
        no_idle_found: s.found[0][1],
        shadow_both: s.shadow[1][1],
        shadow_active_only: s.shadow[1][0],
        shadow_shadow_only: s.shadow[0][1],
        shadow_neither: s.shadow[0][0],
        examined: fold_hist(&s.examined, top),
        limit: fold_hist(&s.limit, top),
        shadow_limit: fold_hist(&s.shadow_limit, top),
        depths: BTreeMap::new(),
        llcs: ctx.llcs.into_iter().map(|l| (l.index as u32, l)).collect(),
        ops: ctx
            .ops
            .into_iter()
            .filter(|(_, rt)| rt.calls > 0)
            .map(|(op, rt)| {
                let m = OpMetrics {
                    calls: rt.calls,
                    ns: rt.ns,
                    ns_per_call: ratio(rt.ns, rt.calls),
                };
                (op, m)
            })
            .collect(),
    }
    .with_depths()
}

#[cfg(test)]
pub mod tests {
    use super::*;

    pub fn record(f: impl Fn(&mut bpf_intf::sisu_stats)) -> Vec<u8> {
        let mut s = Counters::default().view();
        f(&mut s);
        Counters::from_view(&s)
            .0
            .iter()
            .flat_map(|w| w.to_ne_bytes())
            .collect()
    }

    pub fn ctx(widths: &[u64]) -> Context {
        Context {
            policy: "util".into(),
            shadow: "prop".into(),
            small_llc: 0,
            switches: 1,
            elapsed_s: 2.0,
            topology: "test".into(),
            llcs: widths
                .iter()
                .enumerate()
                .map(|(i, &w)| LlcMetrics {
                    index: i as u64,
                    width: w,
                    ..Default::default()
                })
                .collect(),
            ops: vec![
                ("select_cpu".into(), OpTime { calls: 4, ns: 1000 }),
                ("tick".into(), OpTime::default()),
            ],
        }
    }

    #[test]
    fn sums_cpus_and_subtracts_the_baseline() {
        let a = record(|s| {
            s.wakeups = 10;
            s.examined[3] = 2;
            s.shadow[1][0] = 4;
        });
        let b = record(|s| {
            s.wakeups = 5;
            s.examined[3] = 1;
            s.limit[128] = 7;
        });
        let total = Counters::sum_cpus(&[a.clone(), b]).unwrap();
        let v = total.view();
        assert_eq!(v.wakeups, 15);
        assert_eq!(v.examined[3], 3);
        assert_eq!(v.limit[128], 7);
        assert_eq!(v.shadow[1][0], 4);

        let base = Counters::sum_cpus(&[a]).unwrap();
        let d = total.since(&base).view();
        assert_eq!(d.wakeups, 5);
        assert_eq!(d.shadow[1][0], 0);
        assert_eq!(d.limit[128], 7);
        assert!(Counters::sum_cpus(&[vec![0u8; 16]]).is_err());
    }

    #[test]
    fn histograms_fold_at_the_widest_llc() {
        let mut h = vec![0u64; SLOTS];
        h[0] = 1;
        h[4] = 2;
        h[9] = 3;
        h[128] = 4;
        assert_eq!(fold_hist(&h, 8), vec![1, 0, 0, 0, 2, 0, 0, 0, 7]);
        assert_eq!(fold_hist(&h, 200).len(), SLOTS);
        assert_eq!(fold_hist(&h, 0), vec![10]);
    }

    #[test]
    fn metrics_map_the_matrices() {
        let raw = record(|s| {
            s.wakeups = 100;
            s.outcome[bpf_intf::sisu_outcome_SISU_OUT_SCAN as usize] = 40;
            s.scans = 50;
            s.scan_ns = 5000;
            s.found = [[5, 1], [10, 34]];
            s.shadow = [[3, 7], [2, 32]];
            s.examined[2] = 50;
            s.limit[4] = 50;
        });
        let m = metrics(&Counters::sum_cpus(&[raw]).unwrap(), ctx(&[4, 4]));
        assert_eq!(m.wake_scan, 40);
        assert_eq!(
            (m.idle_found, m.idle_missed, m.no_idle, m.no_idle_found),
            (34, 10, 5, 1)
        );
        assert_eq!(
            (
                m.shadow_both,
                m.shadow_active_only,
                m.shadow_shadow_only,
                m.shadow_neither
            ),
            (32, 2, 7, 3)
        );
        assert_eq!(m.shadow_total(), 44);
        assert_eq!(m.scan_ns_mean, 100.0);
        assert_eq!(m.examined, vec![0, 0, 50, 0, 0]);
        assert_eq!(m.limit, vec![0, 0, 0, 0, 50]);
        assert!((m.found_rate() - 77.27).abs() < 0.01);
        assert_eq!(m.ops.len(), 1, "ops never called are left out");
        assert_eq!(m.ops["select_cpu"].ns_per_call, 250.0);
        assert_eq!(
            m.depths.len(),
            5,
            "one record per slot of the folded histograms"
        );
        assert_eq!((m.depths[&2].examined, m.depths[&4].limit), (50, 50));
        assert_eq!(m.depths[&3], DepthCounts::default());
    }

    #[test]
    fn results_with_listed_llcs_and_ops_still_read() {
        let m = metrics(&Counters::default(), ctx(&[4, 4]));
        let mut v = serde_json::to_value(&m).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("depths");
        let llcs: Vec<_> = m.llcs.values().cloned().collect();
        o.insert("llcs".into(), serde_json::to_value(llcs).unwrap());
        o.insert(
            "ops".into(),
            serde_json::json!([{"op": "select_cpu", "calls": 4, "ns": 1000, "ns_per_call": 250.0}]),
        );
        for l in o["llcs"].as_array_mut().unwrap() {
            for k in ["scanned", "found", "missed", "found_pct"] {
                l.as_object_mut().unwrap().remove(k);
            }
        }
        let old: Metrics = serde_json::from_value(v).unwrap();
        assert_eq!(old.llcs.keys().copied().collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(old.ops["select_cpu"], m.ops["select_cpu"]);
        assert_eq!(old.with_depths(), m);
    }

    #[test]
    fn llc_scans_sum_and_diff() {
        let rec = |w: [u64; 5]| -> Vec<u8> { w.iter().flat_map(|x| x.to_ne_bytes()).collect() };
        let t = LlcScans::sum_cpus(&[rec([10, 1, 0, 2, 7]), rec([5, 0, 0, 1, 4])]).unwrap();
        assert_eq!((t.scans, t.found), (15, [[1, 0], [3, 11]]));
        let base = LlcScans::sum_cpus(&[rec([5, 0, 0, 1, 1])]).unwrap();
        let d = t.since(Some(&base));
        assert_eq!((d.scans, d.found[1]), (10, [2, 10]));
        assert!((d.found_pct() - 100.0 * 10.0 / 12.0).abs() < 1e-9);
        assert!(LlcScans::sum_cpus(&[vec![0u8; 8]]).is_err());
    }

    #[test]
    fn json_round_trip() {
        let m = metrics(&Counters::default(), ctx(&[8]));
        let back: Metrics = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(m, back);
    }
}
