//! The statistics' schema: the one machine-readable record (`Metrics`)
//! that `stats`, `--monitor`, `--json`, the OpenMetrics exporter and the
//! lab all read, with its description for scx_stats. The scheduler fills
//! it from BPF's counters; tables.rs renders it as the review thread's
//! tables; monitor.rs reads it from a running instance.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Result;
use scx_stats::prelude::*;
use scx_stats_derive::{stat_doc, Stats};
use serde::{Deserialize, Serialize};

/// One LLC's state and what its scans found. A record of `Metrics::llcs`,
/// keyed by the LLC's index: a dict of structs, which scx_stats'
/// OpenMetrics exporter turns into one gauge per field labelled by LLC
/// (`llc_util_pct{llc="0"}`).
#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(_om_prefix = "llc_", _om_label = "llc")]
#[serde(default)]
pub struct LlcMetrics {
    #[stat(desc = "LLC index")]
    pub index: u64,
    #[stat(desc = "Its CPUs", _om_skip)]
    pub cpus: String,
    #[stat(desc = "Number of CPUs")]
    pub width: u64,
    #[stat(desc = "Utilisation in % of the LLC's capacity")]
    pub util_pct: f64,
    #[stat(desc = "Sum of the CPUs' utilisations (0..1024 each)")]
    pub sum_util: u64,
    #[stat(desc = "SIS_UTIL scan depth published to BPF")]
    pub nr_idle_scan: u64,
    #[stat(desc = "Kernel's idle-core hint for the LLC (SMT only)")]
    pub has_idle_cores: u64,
    // The observer's (scx_sisutil observe): the kernel's own view, zero
    // in the scheduler's record.
    #[stat(desc = "observe: SIS_UTIL's formula on sum_util, beside the kernel's own nr_idle_scan")]
    pub formula_nr_idle_scan: u64,
    #[stat(
        desc = "observe: the LLC's utilisation the kernel keeps in sched_domain_shared (0 if it keeps none)"
    )]
    pub kernel_util_avg: u64,
    #[stat(desc = "observe: ... and its capacity")]
    pub kernel_capacity: u64,
    #[stat(desc = "observe: the kernel's own LLC width (sd_llc_size)")]
    pub kernel_llc_size: u64,
    #[stat(desc = "SIS_PROP active: mean of the CPUs' avg_scan_cost (ns)")]
    pub prop_avg_scan_cost_ns: u64,
    #[stat(desc = "SIS_PROP active: mean of the CPUs' wake_avg_idle (ns)")]
    pub prop_wake_avg_idle_ns: u64,
    #[stat(
        desc = "SIS_PROP in the shadow, with state of its own apart from an active SIS_PROP's: mean avg_scan_cost (ns)"
    )]
    pub shadow_prop_avg_scan_cost_ns: u64,
    #[stat(desc = "SIS_PROP in the shadow, with state of its own: mean wake_avg_idle (ns)")]
    pub shadow_prop_wake_avg_idle_ns: u64,
    #[stat(desc = "SIS_PROP: mean of the CPUs' avg_idle (ns)")]
    pub prop_avg_idle_ns: u64,
    // The scan outcomes per LLC came later: older results files lack them.
    // Named apart from the machine-wide counters, which scripts grep for.
    #[stat(desc = "Scans of this LLC")]
    pub scanned: u64,
    #[stat(desc = "... an idle CPU existed in it, and was found")]
    pub found: u64,
    #[stat(desc = "... an idle CPU existed in it, and was not found")]
    pub missed: u64,
    #[stat(desc = "Found-rate: % of its scans with an idle CPU that found one")]
    pub found_pct: f64,
    #[stat(
        desc = "Utilisation its scans' depth came from, the mean over them (% of the LLC's capacity)"
    )]
    pub scan_util_pct: f64,
    #[stat(
        desc = "observe: ... the same from util_avg alone, without the util_est the kernel's sum takes where larger"
    )]
    pub scan_util_avg_pct: f64,
    #[stat(
        desc = "observe: ... the scheduler's estimate of the same load (its fold of the CPUs' busy time)"
    )]
    pub scan_est_pct: f64,
    #[stat(
        desc = "Mean wait, placement to first run, of wakees a scan here queued though an idle CPU existed (us)"
    )]
    pub missed_wait_us: f64,
    #[stat(
        desc = "Mean wait, placement to first run, of wakees sent to the idle CPU a scan here found (us)"
    )]
    pub found_wait_us: f64,
    #[stat(desc = "auto: the rule it scans this LLC with now", _om_skip)]
    pub auto_rule: String,
    #[stat(desc = "auto: times it changed its rule here")]
    pub auto_switches: u64,
    #[stat(desc = "auto: S, what a find saves a wakee: the missed wait less the found one (us)")]
    pub auto_saved_us: f64,
    #[stat(desc = "auto: c, the time to examine one CPU (ns)")]
    pub auto_cpu_ns: f64,
    #[stat(
        desc = "auto: it takes its candidates' verdicts (what each would find) on one scan here in this many"
    )]
    pub auto_judges_one_in: u64,
    #[stat(desc = "auto: scans here on which its candidates' verdicts were taken")]
    pub auto_judged: u64,
    #[stat(
        desc = "auto: the gain of a scan per candidate, S P - 2 c E (ns; util, prop, full)",
        _om_skip
    )]
    pub auto_gain_ns: Vec<f64>,
}

/// One op's BPF run time, a record of `Metrics::ops` keyed by the op.
#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(_om_prefix = "op_", _om_label = "op")]
pub struct OpMetrics {
    #[stat(desc = "Calls")]
    pub calls: u64,
    #[stat(desc = "Total run time (ns)")]
    pub ns: u64,
    #[stat(desc = "Mean run time per call (ns)")]
    pub ns_per_call: f64,
}

/// What one shadow rule would have done on the active policy's scans, a
/// record of `Metrics::rules` keyed by the rule (`rule_found_pct{rule="prop"}`).
#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(_om_prefix = "rule_", _om_label = "rule")]
#[serde(default)]
pub struct RuleMetrics {
    // Named apart from the machine-wide and per-LLC counters, which
    // scripts grep for by name.
    #[stat(
        desc = "Scans on which this rule's verdict was taken (what a scan to its depth would find)"
    )]
    pub judged: u64,
    #[stat(desc = "... an idle CPU existed, and a scan to its depth would have found one")]
    pub would_find: u64,
    #[stat(desc = "... an idle CPU existed, and it would not have found one")]
    pub would_miss: u64,
    #[stat(desc = "Found-rate: % of the scans with an idle CPU it would have found one on")]
    pub would_find_pct: f64,
    #[stat(desc = "Mean depth limit, each capped at the widest LLC")]
    pub limit_mean: f64,
    #[stat(desc = "Mean CPUs its scan examines")]
    pub searched_mean: f64,
    #[stat(desc = "Its share of the look-only walks' time (ns)")]
    pub walk_ns: u64,
    #[stat(
        desc = "Histogram of its depth limit per scan (last slot: that many or more)",
        _om_skip
    )]
    pub limit_hist: Vec<u64>,
    #[stat(desc = "Histogram of CPUs its scan examines per scan", _om_skip)]
    pub searched_hist: Vec<u64>,
}

/// The review's "able to find" matrix of two rules over the scans that had
/// an idle CPU to find, a record of `Metrics::pairs` keyed "a/b", where
/// "active" is the active policy and the rest are shadow rules
/// (`pair_first_only{pair="active/prop"}`).
#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(_om_prefix = "pair_", _om_label = "pair")]
pub struct PairMetrics {
    #[stat(desc = "Both found one")]
    pub both: u64,
    #[stat(desc = "Only the first found one")]
    pub first_only: u64,
    #[stat(desc = "Only the second found one")]
    pub second_only: u64,
    #[stat(desc = "Neither found one")]
    pub neither: u64,
}

impl PairMetrics {
    pub fn total(&self) -> u64 {
        self.both + self.first_only + self.second_only + self.neither
    }
}

/// The waits from a wakeup's placement to the task's first run, by what
/// the placement found: a record of `Metrics::waits` keyed by the kind
/// (`idle`, `found`, `missed`, `none`, `current`;
/// `wait_p90_us{kind="missed"}`).
#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(_om_prefix = "wait_", _om_label = "kind")]
#[serde(default)]
pub struct WaitMetrics {
    #[stat(desc = "Wakeups timed")]
    pub count: u64,
    #[stat(desc = "Mean wait (us)")]
    pub mean_us: f64,
    #[stat(desc = "Median wait (us, from 4-per-octave slots: within 12.5 %)")]
    pub p50_us: f64,
    #[stat(desc = "90th percentile (us)")]
    pub p90_us: f64,
    #[stat(desc = "99th percentile (us)")]
    pub p99_us: f64,
    #[stat(
        desc = "Histogram of the waits in BPF's slots (sisutil_proto::waits)",
        _om_skip
    )]
    pub hist: Vec<u64>,
}

impl WaitMetrics {
    /// The record of @count waits totalling @ns, binned in @hist.
    pub fn of(count: u64, ns: u64, hist: &[u64]) -> Self {
        let us = |q: f64| crate::waits::quantile(hist, q).unwrap_or(0.0) / 1000.0;
        WaitMetrics {
            count,
            mean_us: ratio(ns, count) / 1000.0,
            p50_us: us(0.5),
            p90_us: us(0.9),
            p99_us: us(0.99),
            hist: hist.to_vec(),
        }
    }
}

/// The `policy` of the observer's record: the kernel's own placement.
pub const KERNEL: &str = "kernel";

/// The names of the wait kinds, in BPF's `enum sisu_wait` order.
pub const WAIT_KINDS: [&str; 5] = ["idle", "found", "missed", "none", "current"];

/// The kinds a scan's outcome names (an idle CPU found, one missed, none
/// there): what the waits tables and plots set side by side.
pub const SCAN_WAITS: [&str; 3] = [WAIT_KINDS[1], WAIT_KINDS[2], WAIT_KINDS[3]];

/// Where @kind reads in a report: a scan's outcomes first, then the rest
/// in BPF's order, an unknown kind last.
pub fn wait_rank(kind: &str) -> usize {
    let rest = WAIT_KINDS.iter().filter(|k| !SCAN_WAITS.contains(k));
    SCAN_WAITS
        .iter()
        .chain(rest)
        .position(|k| *k == kind)
        .unwrap_or(WAIT_KINDS.len())
}

/// The three depth histograms' counts at one depth, a record of
/// `Metrics::depths` keyed by the number of CPUs: the lists the tables and
/// scripts read, in the shape the OpenMetrics exporter takes
/// (`depth_examined{cpus="2"}`).
#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(_om_prefix = "depth_", _om_label = "cpus")]
pub struct DepthCounts {
    #[stat(desc = "Scans that examined this many CPUs (the last: or more)")]
    pub examined: u64,
    #[stat(desc = "Scans whose depth limit was this")]
    pub limit: u64,
    #[stat(desc = "Scans whose (first) shadow rule's limit was this")]
    pub shadow_limit: u64,
}

// Every field defaults: results files keep the record of the version
// that wrote them, and a counter added since is zero in them.
#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(top)]
#[serde(default)]
pub struct Metrics {
    #[stat(desc = "Active policy", _om_skip)]
    pub policy: String,
    #[stat(desc = "Shadow rules, comma-separated, empty if none", _om_skip)]
    pub shadow: String,
    #[stat(desc = "util: full scan of LLCs with at most this many CPUs (0 = off)")]
    pub small_llc: u64,
    #[stat(desc = "Policy switches since start")]
    pub switches: u64,
    #[stat(desc = "Seconds the counters cover (since the last switch or reset)")]
    pub elapsed_s: f64,
    #[stat(desc = "Topology", _om_skip)]
    pub topology: String,
    // Whether the scheduler's own work was on time (zero in records made
    // before it was counted).
    #[stat(desc = "The loop's interval: how often it folds busy time and publishes (ms)")]
    pub loop_interval_ms: u64,
    #[stat(desc = "Intervals the loop ran (over elapsed_s)")]
    pub loop_intervals: u64,
    #[stat(desc = "... how late each started against its intended start, median (us)")]
    pub loop_late_p50_us: u64,
    #[stat(desc = "... 99th percentile (us)")]
    pub loop_late_p99_us: u64,
    #[stat(desc = "... the latest (us)")]
    pub loop_late_max_us: u64,
    #[stat(desc = "Intervals that never ran: the loop woke one or more whole intervals late")]
    pub loop_skipped: u64,
    #[stat(desc = "Requests answered on the stats socket (stats and control)")]
    pub requests: u64,
    #[stat(desc = "... time from arrival (the read completing the request) to reply, median (us)")]
    pub request_p50_us: u64,
    #[stat(desc = "... 99th percentile (us)")]
    pub request_p99_us: u64,
    #[stat(desc = "... the longest (us)")]
    pub request_max_us: u64,
    #[stat(
        desc = "The oldest published depth a scan may use (ms): past it the scan derives SIS_UTIL's depth from the LLC's CPUs busy at that moment"
    )]
    pub depth_ttl_ms: u64,
    #[stat(desc = "Scans that found their LLC's published depth older than that")]
    pub stale_depths: u64,
    #[stat(
        desc = "The scheduler's own threads put at the head of their queue, within their run-time budget"
    )]
    pub own_first: u64,
    #[stat(desc = "Wakeups placed (by select_cpu, or by enqueue where the kernel skipped it)")]
    pub wakeups: u64,
    #[stat(desc = "... placed by enqueue: woken while still switching out (queued wakeup)")]
    pub queued_wakeups: u64,
    #[stat(desc = "... whose wake target was the waker's CPU (wake-affine)")]
    pub wake_affine: u64,
    #[stat(desc = "... on the wake target, which was idle")]
    pub wake_target: u64,
    #[stat(desc = "... on prev, which was idle")]
    pub wake_prev: u64,
    #[stat(desc = "... on the recently used CPU, which was idle")]
    pub wake_recent: u64,
    #[stat(desc = "... on an idle SMT sibling of prev")]
    pub wake_smt: u64,
    #[stat(desc = "... on an idle CPU the LLC scan found")]
    pub wake_scan: u64,
    #[stat(desc = "... queued on the busy target: nothing idle found")]
    pub wake_busy: u64,
    #[stat(desc = "... a new task, on the idlest LLC near its parent (fork balancing)")]
    pub wake_fork: u64,
    #[stat(desc = "1 if the kernel says when a CPU found idle was taken (SCX_ENQ_IMMED), else 0")]
    pub found_checked: u64,
    #[stat(
        desc = "1 if only what scans did was counted, not what they missed, their time, waits or hand-backs (no --detail-stats), else 0"
    )]
    pub lean: u64,
    #[stat(desc = "1 if scans were not counted at all (--no-scan-stats), else 0")]
    pub stats_off: u64,
    #[stat(desc = "Wakeups sent to a CPU found idle (all but the busy ones)")]
    pub found_placed: u64,
    #[stat(desc = "... whose CPU was no longer free when the task got there")]
    pub found_taken: u64,
    #[stat(desc = "... of which the LLC scan had found (out of wake_scan)")]
    pub scan_taken: u64,
    #[stat(desc = "Wakeups placed in another LLC than prev's")]
    pub wake_moved_llc: u64,
    #[stat(desc = "... in another NUMA node than prev's")]
    pub wake_moved_node: u64,
    #[stat(desc = "Tasks CPUs took from other queues of their LLC")]
    pub pull_llc: u64,
    #[stat(desc = "... from other LLCs of their NUMA node")]
    pub pull_node: u64,
    #[stat(desc = "... from other nodes of their package")]
    pub pull_package: u64,
    // Results files from single-LLC-per-node machines counted every other
    // LLC here; there that is the same as another node and package.
    #[stat(desc = "... from other packages and nodes")]
    pub pull_remote: u64,
    #[stat(desc = "... of which running, moved to even out idle CPUs between nodes")]
    pub pull_running: u64,
    #[stat(desc = "Tasks run out of turn after waiting 1 s (starvation guard)")]
    pub rescued: u64,
    #[stat(desc = "Tasks preempted inside an RCU read-side section, queued as nice 0 would be")]
    pub rcu_readers: u64,
    #[stat(desc = "Wakeups that reached the LLC scan")]
    pub scans: u64,
    #[stat(desc = "... of which looked for an idle core")]
    pub core_scans: u64,
    #[stat(desc = "Total time spent scanning (ns)")]
    pub scan_ns: u64,
    #[stat(desc = "Mean time per scan (ns)")]
    pub scan_ns_mean: f64,
    #[stat(desc = "Scan time per CPU examined (ns): the active scans, which claim what they find")]
    pub scan_ns_per_cpu: f64,
    #[stat(desc = "Total time the shadow rules' look-only walks took (one per scan serves all)")]
    pub shadow_scan_ns: u64,
    #[stat(desc = "Shadow walk time per CPU examined (ns): they look without claiming")]
    pub shadow_scan_ns_per_cpu: f64,
    #[stat(desc = "Scans: an idle CPU existed in the LLC, and was found")]
    pub idle_found: u64,
    #[stat(desc = "Scans: an idle CPU existed in the LLC, and was not found")]
    pub idle_missed: u64,
    #[stat(desc = "Scans: no idle CPU existed in the LLC")]
    pub no_idle: u64,
    #[stat(desc = "Scans: none existed yet one was found (raced with an idle entry)")]
    pub no_idle_found: u64,
    #[stat(desc = "1 if SIS_CACHE is on, else 0")]
    pub sis_cache: u64,
    #[stat(desc = "SIS_CACHE: sleeps that kept their CPU for the sleeper")]
    pub cache_kept: u64,
    #[stat(desc = "SIS_CACHE: idle CPUs a scan passed over, kept for another task")]
    pub cache_skipped: u64,
    #[stat(desc = "SIS_CACHE: scans that took a kept CPU, every idle one examined being kept")]
    pub cache_fallback: u64,
    #[stat(desc = "SIS_CACHE: wakeups placed on the CPU kept for them")]
    pub cache_reclaimed: u64,
    #[stat(desc = "1 if SIS_CURRENT is on, else 0")]
    pub sis_current: u64,
    #[stat(desc = "SIS_CURRENT: wakeups put on the waker's CPU instead of a scan")]
    pub current_cut: u64,
    #[stat(desc = "SIS_CURRENT: ... while an idle CPU of the LLC stood idle")]
    pub current_idle_left: u64,
    #[stat(desc = "auto: scans it made with each candidate's depth, by rule")]
    pub auto_scans: BTreeMap<String, u64>,
    // The first shadow rule's matrix and limits (below) are what `pairs`
    // and `rules` hold for every rule; they stay because results files
    // written before those maps, and the documents' tables quoting them,
    // have only these, and the review's tables (active beside one rule)
    // print them as they are.
    #[stat(desc = "Idle CPU existed: active and (first) shadow rule both found one")]
    pub shadow_both: u64,
    #[stat(desc = "Idle CPU existed: only the active policy found one")]
    pub shadow_active_only: u64,
    #[stat(desc = "Idle CPU existed: only the (first) shadow rule would have found one")]
    pub shadow_shadow_only: u64,
    #[stat(desc = "Idle CPU existed: neither found one")]
    pub shadow_neither: u64,
    #[stat(
        desc = "Histogram of CPUs examined per scan (last slot: that many or more)",
        _om_skip
    )]
    pub examined: Vec<u64>,
    #[stat(
        desc = "Histogram of the depth limit per scan (last slot: that many or more)",
        _om_skip
    )]
    pub limit: Vec<u64>,
    #[stat(
        desc = "Histogram of the (first) shadow rule's depth limit per scan",
        _om_skip
    )]
    pub shadow_limit: Vec<u64>,
    #[stat(desc = "The three histograms by depth, for OpenMetrics")]
    pub depths: BTreeMap<u32, DepthCounts>,
    #[stat(desc = "Each shadow rule's verdicts, by rule")]
    pub rules: BTreeMap<String, RuleMetrics>,
    #[stat(desc = "Every pair's \"able to find\" matrix (active and shadow rules), by \"a/b\"")]
    pub pairs: BTreeMap<String, PairMetrics>,
    #[stat(desc = "Waits from a wakeup's placement to its first run, by what the placement found")]
    pub waits: BTreeMap<String, WaitMetrics>,
    #[stat(desc = "Per-LLC state and scan outcomes, by LLC index")]
    #[serde(deserialize_with = "compat::llcs")]
    pub llcs: BTreeMap<u32, LlcMetrics>,
    #[stat(desc = "BPF run time per op (empty unless BPF statistics are on)")]
    #[serde(deserialize_with = "compat::ops")]
    pub ops: BTreeMap<String, OpMetrics>,
}

impl Metrics {
    /// Fills `depths` from the three histograms, which stay the record's
    /// own (the tables, the harness and scripts read them as lists).
    pub fn with_depths(mut self) -> Self {
        let n = self.examined.len().max(self.limit.len());
        let at = |h: &[u64], i: usize| h.get(i).copied().unwrap_or(0);
        self.depths = (0..n)
            .map(|i| {
                let d = DepthCounts {
                    examined: at(&self.examined, i),
                    limit: at(&self.limit, i),
                    shadow_limit: at(&self.shadow_limit, i),
                };
                (i as u32, d)
            })
            .collect();
        self
    }

    /// Share of scans that found an idle CPU when one existed, in %.
    pub fn found_rate(&self) -> f64 {
        100.0 * ratio(self.idle_found, self.idle_found + self.idle_missed)
    }

    /// The found-rate with the kernel's word for it: a CPU the scan found
    /// counts only if it was still free when the task got there.
    pub fn free_found_rate(&self) -> f64 {
        let free = self.idle_found.saturating_sub(self.scan_taken);
        100.0 * ratio(free, self.idle_found + self.idle_missed)
    }

    /// The review's 2x2 matrix over the scans that had an idle CPU to find.
    pub fn shadow_total(&self) -> u64 {
        self.shadow_both + self.shadow_active_only + self.shadow_shadow_only + self.shadow_neither
    }
}

pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// What each statistic is, for the socket's "stats_meta" request and for
/// --help-stats.
pub fn metas() -> Vec<StatsMeta> {
    vec![
        LlcMetrics::meta(),
        OpMetrics::meta(),
        RuleMetrics::meta(),
        PairMetrics::meta(),
        WaitMetrics::meta(),
        DepthCounts::meta(),
        Metrics::meta(),
    ]
}

/// Describes every statistic (--help-stats).
pub fn describe<W: Write>(w: &mut W) -> Result<()> {
    metas()
        .into_iter()
        .fold(StatsServerData::<(), ()>::new(), |d, m| d.add_meta(m))
        .describe_meta(w, None)
}

/// Results files written before the per-LLC records and the per-op times
/// became dicts (for OpenMetrics) hold them as lists; both read.
mod compat {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer};

    use super::{LlcMetrics, OpMetrics};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrMap<K: Ord, V, L> {
        Map(BTreeMap<K, V>),
        List(Vec<L>),
    }

    pub fn llcs<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<u32, LlcMetrics>, D::Error> {
        // Keyed by the records' own index: an untagged enum's map keys
        // arrive as strings, which do not read as integers.
        let records: Vec<LlcMetrics> =
            match ListOrMap::<String, LlcMetrics, LlcMetrics>::deserialize(d)? {
                ListOrMap::Map(m) => m.into_values().collect(),
                ListOrMap::List(v) => v,
            };
        Ok(records.into_iter().map(|l| (l.index as u32, l)).collect())
    }

    /// A listed op carried its name in an `op` field.
    #[derive(Deserialize)]
    struct NamedOp {
        op: String,
        #[serde(flatten)]
        m: OpMetrics,
    }

    pub fn ops<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, OpMetrics>, D::Error> {
        Ok(
            match ListOrMap::<String, OpMetrics, NamedOp>::deserialize(d)? {
                ListOrMap::Map(m) => m,
                ListOrMap::List(v) => v.into_iter().map(|n| (n.op, n.m)).collect(),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_from_before_a_counter_was_added_still_read() {
        let mut v = serde_json::to_value(Metrics::default()).unwrap();
        for gone in ["queued_wakeups", "rcu_readers", "depths"] {
            v.as_object_mut().unwrap().remove(gone);
        }
        let m: Metrics = serde_json::from_value(v).unwrap();
        assert_eq!((m.queued_wakeups, m.rcu_readers), (0, 0));
    }

    #[test]
    fn a_report_reads_a_scans_outcomes_first() {
        let mut kinds = WAIT_KINDS.to_vec();
        kinds.sort_by_key(|k| wait_rank(k));
        assert_eq!(kinds, ["found", "missed", "none", "idle", "current"]);
        assert_eq!(wait_rank("nope"), WAIT_KINDS.len());
    }
}
