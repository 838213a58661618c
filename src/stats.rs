//! BPF's per-CPU scan counters, summed, and turned into the statistics'
//! record (`Metrics`, whose schema is sisutil_proto's).

use std::collections::BTreeMap;
use std::marker::PhantomData;

use anyhow::{bail, Result};

use crate::bpf_intf;
use crate::op_time::OpTime;
use crate::policy::Policy;
pub use sisutil_proto::stats::*;

const SLOTS: usize = bpf_intf::SISU_HIST_SLOTS as usize;

/// A BPF record made of u64 counters only, with no padding: handled as a
/// flat array of words, summed over CPUs, diffed against a baseline, then
/// read back as the struct.
///
/// # Safety
/// The type must be repr(C), u64 fields (or arrays of them) only, for
/// which all-zero is a valid value.
pub unsafe trait WordRecord: Copy {}

// SAFETY: all three are u64 counters and arrays of them (intf.h).
unsafe impl WordRecord for bpf_intf::sisu_stats {}
unsafe impl WordRecord for bpf_intf::sisu_rule_stats {}
unsafe impl WordRecord for bpf_intf::sisu_llc_scans {}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Words<T: WordRecord>(Vec<u64>, PhantomData<T>);

/// One policy's scan counters (`struct sisu_stats`).
pub type Counters = Words<bpf_intf::sisu_stats>;
/// One shadow rule's verdicts (`struct sisu_rule_stats`).
pub type RuleCounters = Words<bpf_intf::sisu_rule_stats>;
/// What the scans of one LLC found and cost (`struct sisu_llc_scans`).
pub type LlcCounters = Words<bpf_intf::sisu_llc_scans>;

impl<T: WordRecord> Default for Words<T> {
    fn default() -> Self {
        Self(vec![0; Self::WORDS], PhantomData)
    }
}

impl<T: WordRecord> Words<T> {
    const WORDS: usize = std::mem::size_of::<T>() / 8;

    /// Sums the per-CPU copies of one record.
    pub fn sum_cpus(per_cpu: &[Vec<u8>]) -> Result<Self> {
        let mut words = vec![0u64; Self::WORDS];
        for raw in per_cpu {
            if raw.len() < Self::WORDS * 8 {
                bail!(
                    "stats record of {} bytes, expected {}",
                    raw.len(),
                    Self::WORDS * 8
                );
            }
            for (w, chunk) in words.iter_mut().zip(raw.chunks_exact(8)) {
                let mut b = [0u8; 8];
                b.copy_from_slice(chunk);
                *w = w.wrapping_add(u64::from_ne_bytes(b));
            }
        }
        Ok(Self(words, PhantomData))
    }

    /// What was counted since `base` was taken.
    pub fn since(&self, base: &Self) -> Self {
        let words = self
            .0
            .iter()
            .zip(&base.0)
            .map(|(a, b)| a.saturating_sub(*b))
            .collect();
        Self(words, PhantomData)
    }

    pub fn view(&self) -> T {
        // SAFETY: WordRecord's contract: all-zero is valid and the record
        // is exactly WORDS u64s, which self.0 holds.
        let mut s: T = unsafe { std::mem::zeroed() };
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.0.as_ptr(),
                &mut s as *mut T as *mut u64,
                Self::WORDS,
            );
        }
        s
    }

    #[cfg(test)]
    pub fn from_view(s: &T) -> Self {
        let mut words = vec![0u64; Self::WORDS];
        // SAFETY: as in view().
        unsafe {
            std::ptr::copy_nonoverlapping(
                s as *const T as *const u64,
                words.as_mut_ptr(),
                Self::WORDS,
            );
        }
        Self(words, PhantomData)
    }

    #[cfg(test)]
    pub fn bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }
}

/// Of an LLC's scans that had an idle CPU to find, the share that found
/// one, in %.
pub fn llc_found_pct(l: &bpf_intf::sisu_llc_scans) -> f64 {
    100.0 * ratio(l.found[1][1], l.found[1][1] + l.found[1][0])
}

/// The mean utilisation the counted scans of an LLC of @width CPUs read
/// (@sum, added up over them), in % of its capacity: the input of
/// SIS_UTIL's depth, averaged where it was used rather than over time.
fn scan_util_pct(l: &bpf_intf::sisu_llc_scans, width: u64, sum: u64) -> f64 {
    let counted: u64 = l.found.iter().flatten().sum();
    100.0 * ratio(sum, counted) / (width.max(1) * bpf_intf::SISU_CAPACITY as u64) as f64
}

/// LLC @i's scan outcomes counted since @base (all of them where @base
/// has no record).
pub fn llc_seen(scans: &[LlcCounters], base: &[LlcCounters], i: usize) -> bpf_intf::sisu_llc_scans {
    match (scans.get(i), base.get(i)) {
        (Some(now), Some(base)) => now.since(base),
        (Some(now), None) => now.clone(),
        _ => LlcCounters::default(),
    }
    .view()
}

/// The record of LLC @i of @cpus, with its scan outcomes @seen and the
/// LLC's state @sum_util, @nr_idle_scan and @has_idle_cores; what the
/// scheduler and the observer fill alike. The rest is theirs to add.
pub fn llc_record(
    i: usize,
    cpus: &[usize],
    seen: &bpf_intf::sisu_llc_scans,
    sum_util: u32,
    nr_idle_scan: u32,
    has_idle_cores: u32,
) -> LlcMetrics {
    let width = cpus.len() as u64;
    LlcMetrics {
        index: i as u64,
        cpus: sisutil_proto::topology::cpulist(cpus),
        width,
        util_pct: 100.0 * sum_util as f64 / (width.max(1) * bpf_intf::SISU_CAPACITY as u64) as f64,
        sum_util: sum_util as u64,
        nr_idle_scan: nr_idle_scan as u64,
        has_idle_cores: has_idle_cores as u64,
        scanned: seen.scans,
        found: seen.found[1][1],
        missed: seen.found[1][0],
        found_pct: llc_found_pct(seen),
        scan_util_pct: scan_util_pct(seen, width, seen.util_at_scans),
        scan_util_avg_pct: scan_util_pct(seen, width, seen.util_avg_at_scans),
        scan_est_pct: scan_util_pct(seen, width, seen.est_at_scans),
        missed_wait_us: ratio(seen.missed_wait_ns, seen.missed_waits) / 1000.0,
        found_wait_us: ratio(seen.found_wait_ns, seen.found_waits) / 1000.0,
        ..LlcMetrics::default()
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
    pub small_llc: u64,
    pub switches: u64,
    pub elapsed_s: f64,
    pub topology: String,
    /// Whether the kernel reports a found CPU taken (the taken counters).
    pub handback: bool,
    /// Whether only what scans did was counted (no --detail-stats).
    pub lean: bool,
    /// Whether scans were not counted at all (--no-scan-stats).
    pub stats_off: bool,
    /// Whether SIS_CACHE is on.
    pub sis_cache: bool,
    /// Whether SIS_CURRENT is on.
    pub sis_current: bool,
    pub llcs: Vec<LlcMetrics>,
    /// Each op's calls and run time over the same span as the counters.
    pub ops: Vec<(String, OpTime)>,
    /// The oldest published depth a scan uses (0 for the observer).
    pub depth_ttl_ms: u64,
}

const SPAN_LLC: u32 = bpf_intf::sisu_span_SISU_SPAN_LLC;
const SPAN_NODE: u32 = bpf_intf::sisu_span_SISU_SPAN_NODE;
const SPAN_PACKAGE: u32 = bpf_intf::sisu_span_SISU_SPAN_PACKAGE;
const SPAN_REMOTE: u32 = bpf_intf::sisu_span_SISU_SPAN_REMOTE;

/// The sum of a per-span counter over @spans.
fn span(counts: &[u64], spans: &[u32]) -> u64 {
    spans.iter().map(|&i| counts[i as usize]).sum()
}

/// One shadow rule's record; histograms folded at @top.
fn rule_metrics(r: &RuleCounters, top: usize) -> RuleMetrics {
    let v = r.view();
    let limit = fold_hist(&v.limit, top);
    let weighted: u64 = limit.iter().enumerate().map(|(i, n)| i as u64 * n).sum();
    RuleMetrics {
        judged: v.scans,
        would_find: v.found[1][1],
        would_miss: v.found[1][0],
        would_find_pct: 100.0 * ratio(v.found[1][1], v.found[1][1] + v.found[1][0]),
        limit_mean: ratio(weighted, limit.iter().sum()),
        searched_mean: ratio(v.examined_sum, v.scans),
        walk_ns: v.scan_ns,
        limit_hist: limit,
        searched_hist: fold_hist(&v.examined, top),
    }
}

/// The "able to find" matrix of two rules, given by their bits in the
/// found-set histogram (`found_sets` in intf.h).
fn pair(sets: &[u64], a: u32, b: u32) -> PairMetrics {
    let mut p = PairMetrics::default();
    for (set, &n) in sets.iter().enumerate() {
        let (fa, fb) = (set >> a & 1 == 1, set >> b & 1 == 1);
        match (fa, fb) {
            (true, true) => p.both += n,
            (true, false) => p.first_only += n,
            (false, true) => p.second_only += n,
            (false, false) => p.neither += n,
        }
    }
    p
}

/// Every pair of the active policy ("active") and the shadow rules.
fn pairs(sets: &[u64], rules: &[Policy]) -> BTreeMap<String, PairMetrics> {
    let mut who = vec![(
        "active".to_string(),
        bpf_intf::sisu_found_sets_SISU_ACTIVE_BIT,
    )];
    who.extend(rules.iter().map(|r| (r.to_string(), r.to_bpf())));
    let mut out = BTreeMap::new();
    for (i, (a, abit)) in who.iter().enumerate() {
        for (b, bbit) in &who[i + 1..] {
            out.insert(format!("{a}/{b}"), pair(sets, *abit, *bbit));
        }
    }
    out
}

/// The waits by kind (enum sisu_wait), those never timed left out.
fn waits(s: &bpf_intf::sisu_stats) -> BTreeMap<String, WaitMetrics> {
    WAIT_KINDS
        .iter()
        .enumerate()
        .filter(|(k, _)| s.waits[*k] > 0)
        .map(|(k, name)| {
            let m = WaitMetrics::of(s.waits[k], s.wait_ns[k], &s.wait_hist[k]);
            (name.to_string(), m)
        })
        .collect()
}

/// The record of @c and the shadow rules' @rules, with what the scheduler
/// knows besides.
pub fn metrics(c: &Counters, rules: &[(Policy, RuleCounters)], ctx: Context) -> Metrics {
    let s = c.view();
    let out = |o: u32| s.outcome[o as usize];
    let top = ctx.llcs.iter().map(|l| l.width as usize).max().unwrap_or(0);
    let names: Vec<Policy> = rules.iter().map(|(p, _)| *p).collect();
    let pairs = pairs(&s.found_sets, &names);
    let rules: BTreeMap<String, RuleMetrics> = rules
        .iter()
        .map(|(p, r)| (p.to_string(), rule_metrics(r, top)))
        .collect();
    // The single-shadow fields, kept for the tables and results that read
    // them: the first shadow rule's.
    let first = names.first().map(|p| p.to_string());
    let vs_first = first
        .as_ref()
        .and_then(|f| pairs.get(&format!("active/{f}")))
        .cloned()
        .unwrap_or_default();
    let first_limit = first
        .as_ref()
        .and_then(|f| rules.get(f))
        .map(|r| r.limit_hist.clone())
        .unwrap_or_else(|| vec![0; top + 1]);
    let shadow: Vec<String> = names.iter().map(|p| p.to_string()).collect();
    Metrics {
        policy: ctx.policy,
        shadow: shadow.join(","),
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
        found_checked: ctx.handback as u64,
        lean: ctx.lean as u64,
        stats_off: ctx.stats_off as u64,
        sis_cache: ctx.sis_cache as u64,
        cache_kept: s.cache_kept,
        cache_skipped: s.cache_skipped,
        cache_fallback: s.cache_fallback,
        cache_reclaimed: s.cache_reclaimed,
        sis_current: ctx.sis_current as u64,
        current_cut: s.current_cut,
        current_idle_left: s.current_idle_left,
        auto_scans: Policy::AUTO_CANDIDATES
            .iter()
            .map(|p| (p.name().to_string(), s.auto_scans[p.to_bpf() as usize]))
            .collect(),
        found_taken: s.taken.iter().sum(),
        found_placed: s.outcome.iter().sum::<u64>() - out(bpf_intf::sisu_outcome_SISU_OUT_BUSY),
        scan_taken: s.taken[bpf_intf::sisu_outcome_SISU_OUT_SCAN as usize],
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
        shadow_both: vs_first.both,
        shadow_active_only: vs_first.first_only,
        shadow_shadow_only: vs_first.second_only,
        shadow_neither: vs_first.neither,
        examined: fold_hist(&s.examined, top),
        limit: fold_hist(&s.limit, top),
        shadow_limit: first_limit,
        depths: BTreeMap::new(),
        rules,
        pairs,
        waits: waits(&s),
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
        stale_depths: s.stale_depths,
        own_first: s.own_first,
        depth_ttl_ms: ctx.depth_ttl_ms,
        ..Default::default()
    }
    .with_depths()
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// The active policy's bit in a found set, as a shift.
    const ACTIVE: u32 = bpf_intf::sisu_found_sets_SISU_ACTIVE_BIT;

    pub fn record(f: impl Fn(&mut bpf_intf::sisu_stats)) -> Vec<u8> {
        let mut s = Counters::default().view();
        f(&mut s);
        Counters::from_view(&s).bytes()
    }

    fn rule(f: impl Fn(&mut bpf_intf::sisu_rule_stats)) -> RuleCounters {
        let mut s = RuleCounters::default().view();
        f(&mut s);
        RuleCounters::from_view(&s)
    }

    pub fn ctx(widths: &[u64]) -> Context {
        Context {
            policy: "util".into(),
            small_llc: 0,
            switches: 1,
            elapsed_s: 2.0,
            topology: "test".into(),
            depth_ttl_ms: 64,
            handback: true,
            lean: false,
            stats_off: false,
            sis_cache: false,
            sis_current: false,
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
            s.found_sets[65] = 4;
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
        assert_eq!(v.found_sets[65], 4);

        let base = Counters::sum_cpus(&[a]).unwrap();
        let d = total.since(&base).view();
        assert_eq!(d.wakeups, 5);
        assert_eq!(d.found_sets[65], 0);
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
            // The active policy's bit and prop's: [active][prop] = [[3, 7], [2, 32]].
            let (act, prop) = (1 << ACTIVE, 1 << Policy::Prop.to_bpf());
            s.found_sets[0] = 3;
            s.found_sets[prop] = 7;
            s.found_sets[act] = 2;
            s.found_sets[act | prop] = 32;
            s.examined[2] = 50;
            s.limit[4] = 50;
        });
        let prop = rule(|r| {
            r.scans = 50;
            r.found = [[6, 0], [5, 39]];
            r.limit[2] = 10;
            r.limit[9] = 40;
        });
        let m = metrics(
            &Counters::sum_cpus(&[raw]).unwrap(),
            &[(Policy::Prop, prop)],
            ctx(&[4, 4]),
        );
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
        assert_eq!(m.shadow, "prop");
        assert_eq!(m.pairs["active/prop"].total(), 44);
        let r = &m.rules["prop"];
        assert_eq!((r.would_find, r.would_miss), (39, 5));
        assert_eq!(
            r.limit_hist,
            vec![0, 0, 10, 0, 40],
            "folded at the widest LLC"
        );
        assert_eq!(m.shadow_limit, r.limit_hist);
        assert_eq!(r.limit_mean, (2.0 * 10.0 + 4.0 * 40.0) / 50.0);
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
        let m = metrics(&Counters::default(), &[], ctx(&[4, 4]));
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
    fn llc_counters_sum_and_diff() {
        let rec = |scans: u64, found: [[u64; 2]; 2], judged: u64| -> Vec<u8> {
            let mut l = LlcCounters::default().view();
            l.scans = scans;
            l.found = found;
            l.judged = judged;
            LlcCounters::from_view(&l).bytes()
        };
        let t = LlcCounters::sum_cpus(&[rec(10, [[1, 0], [2, 7]], 3), rec(5, [[0, 0], [1, 4]], 1)])
            .unwrap();
        let v = t.view();
        assert_eq!((v.scans, v.found, v.judged), (15, [[1, 0], [3, 11]], 4));
        let base = LlcCounters::sum_cpus(&[rec(5, [[0, 0], [1, 1]], 0)]).unwrap();
        let d = t.since(&base).view();
        assert_eq!((d.scans, d.found[1]), (10, [2, 10]));
        assert!((llc_found_pct(&d) - 100.0 * 10.0 / 12.0).abs() < 1e-9);
        assert!(LlcCounters::sum_cpus(&[vec![0u8; 8]]).is_err());
    }

    #[test]
    fn waits_by_kind_with_percentiles() {
        let raw = record(|s| {
            let missed = bpf_intf::sisu_wait_SISU_WAIT_MISSED as usize;
            s.waits[missed] = 10;
            s.wait_ns[missed] = 10 * 3_000_000;
            s.wait_hist[missed][45] = 10;
        });
        let m = metrics(&Counters::sum_cpus(&[raw]).unwrap(), &[], ctx(&[8]));
        assert_eq!(m.waits.keys().collect::<Vec<_>>(), ["missed"]);
        let w = &m.waits["missed"];
        assert_eq!((w.count, w.mean_us), (10, 3000.0));
        let (lo, hi) = sisutil_proto::waits::slot_range(45);
        assert_eq!(w.p50_us, (lo + hi) as f64 / 2000.0);
        assert_eq!(w.p99_us, w.p50_us);
    }

    #[test]
    fn every_pair_of_rules_reads_from_the_found_sets() {
        // Active util, shadows prop and full. Full's scan is the deepest,
        // so no set has prop without full.
        let (act, prop, full) = (
            1 << ACTIVE,
            1 << Policy::Prop.to_bpf(),
            1 << Policy::Full.to_bpf(),
        );
        let raw = record(|s| {
            s.found_sets[act | prop | full] = 10; // all three
            s.found_sets[full] = 5; // full only
            s.found_sets[act | full] = 3; // active and full
            s.found_sets[0] = 2; // none
        });
        let rules = [
            (Policy::Prop, RuleCounters::default()),
            (Policy::Full, RuleCounters::default()),
        ];
        let m = metrics(&Counters::sum_cpus(&[raw]).unwrap(), &rules, ctx(&[8]));
        assert_eq!(m.shadow, "prop,full");
        let keys: Vec<_> = m.pairs.keys().cloned().collect();
        assert_eq!(keys, ["active/full", "active/prop", "prop/full"]);
        let p = &m.pairs["prop/full"];
        assert_eq!(
            (p.both, p.first_only, p.second_only, p.neither),
            (10, 0, 8, 2)
        );
        let a = &m.pairs["active/full"];
        assert_eq!(
            (a.both, a.first_only, a.second_only, a.neither),
            (13, 0, 5, 2)
        );
        // The single-shadow fields follow the first rule (prop).
        assert_eq!((m.shadow_both, m.shadow_active_only), (10, 3));
        assert_eq!((m.shadow_shadow_only, m.shadow_neither), (0, 7));
    }

    #[test]
    fn json_round_trip() {
        let m = metrics(
            &Counters::default(),
            &[(Policy::Full, rule(|_| {}))],
            ctx(&[8]),
        );
        let back: Metrics = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(m, back);
    }
}

#[cfg(test)]
mod wait_slot_tests {
    //! Userspace's slot ranges against BPF's slot function (wait_hist.h,
    //! compiled for the host by build.rs).

    use sisutil_proto::waits::{slot_range, SLOTS};

    extern "C" {
        fn sisu_wait_slot(ns: u64) -> u32;
    }

    fn slot(ns: u64) -> usize {
        // SAFETY: a pure function of its argument.
        unsafe { sisu_wait_slot(ns) as usize }
    }

    #[test]
    fn every_slot_holds_exactly_its_range() {
        for s in 0..SLOTS - 1 {
            let (lo, hi) = slot_range(s);
            assert_eq!(slot(lo), s, "lower bound of slot {s}");
            assert_eq!(slot(hi - 1), s, "upper bound of slot {s}");
            assert_eq!(slot(hi), s + 1, "past slot {s}");
        }
        assert_eq!(slot(0), 0);
        assert_eq!(slot(u64::MAX), SLOTS - 1, "the last slot takes the rest");
        assert_eq!(slot(1 << 40), SLOTS - 1);
    }
}
