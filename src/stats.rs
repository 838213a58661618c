//! Scan statistics: the per-CPU counters BPF keeps, summed and turned into
//! the one machine-readable record (`Metrics`) that `--stats`, `--monitor`,
//! `--json` and the A/B harness all read, and into the seed thread's
//! tables.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use scx_stats::prelude::*;
use scx_stats_derive::{stat_doc, Stats};
use serde::{Deserialize, Serialize};

use crate::bpf_intf;
use crate::runtime::RunTime;

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

/// Folds a histogram into `top + 1` slots, the last holding `top` and more.
pub fn fold_hist(hist: &[u64], top: usize) -> Vec<u64> {
    let top = top.min(SLOTS - 1);
    let mut out = hist[..top.min(hist.len())].to_vec();
    out.resize(top, 0);
    out.push(hist.iter().skip(top).sum());
    out
}

#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
pub struct LlcMetrics {
    #[stat(desc = "LLC index")]
    pub index: u64,
    #[stat(desc = "Its CPUs")]
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
    #[stat(desc = "SIS_PROP: mean of the CPUs' avg_scan_cost (ns)")]
    pub prop_avg_scan_cost_ns: u64,
    #[stat(desc = "SIS_PROP: mean of the CPUs' wake_avg_idle (ns)")]
    pub prop_wake_avg_idle_ns: u64,
    #[stat(desc = "SIS_PROP: mean of the CPUs' avg_idle (ns)")]
    pub prop_avg_idle_ns: u64,
}

#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
pub struct OpMetrics {
    #[stat(desc = "sched_ext operation")]
    pub op: String,
    #[stat(desc = "Calls")]
    pub calls: u64,
    #[stat(desc = "Total run time (ns)")]
    pub ns: u64,
    #[stat(desc = "Mean run time per call (ns)")]
    pub ns_per_call: f64,
}

#[stat_doc]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(top)]
pub struct Metrics {
    #[stat(desc = "Active policy")]
    pub policy: String,
    #[stat(desc = "Shadow policy, empty if none")]
    pub shadow: String,
    #[stat(desc = "util: full scan of LLCs with at most this many CPUs (0 = off)")]
    pub small_llc: u64,
    #[stat(desc = "Policy switches since start")]
    pub switches: u64,
    #[stat(desc = "Seconds the counters cover (since the last switch or reset)")]
    pub elapsed_s: f64,
    #[stat(desc = "Topology")]
    pub topology: String,
    #[stat(desc = "Wakeups placed (by select_cpu, or by enqueue where the kernel skipped it)")]
    pub wakeups: u64,
    #[stat(desc = "... placed by enqueue: woken while still switching out (queued wakeup)")]
    #[serde(default)] // results files from before it was counted
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
    #[stat(desc = "Tasks idle CPUs pulled from their LLC")]
    pub pull_llc: u64,
    #[stat(desc = "Tasks idle CPUs pulled from other LLCs")]
    pub pull_remote: u64,
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
    #[stat(desc = "Scans: an idle CPU existed in the LLC, and was found")]
    pub idle_found: u64,
    #[stat(desc = "Scans: an idle CPU existed in the LLC, and was not found")]
    pub idle_missed: u64,
    #[stat(desc = "Scans: no idle CPU existed in the LLC")]
    pub no_idle: u64,
    #[stat(desc = "Scans: none existed yet one was found (raced with an idle entry)")]
    pub no_idle_found: u64,
    #[stat(desc = "Idle CPU existed: active and shadow policy both found one")]
    pub shadow_both: u64,
    #[stat(desc = "Idle CPU existed: only the active policy found one")]
    pub shadow_active_only: u64,
    #[stat(desc = "Idle CPU existed: only the shadow policy would have found one")]
    pub shadow_shadow_only: u64,
    #[stat(desc = "Idle CPU existed: neither found one")]
    pub shadow_neither: u64,
    #[stat(desc = "Histogram of CPUs examined per scan (last slot: that many or more)")]
    pub examined: Vec<u64>,
    #[stat(desc = "Histogram of the depth limit per scan (last slot: that many or more)")]
    pub limit: Vec<u64>,
    #[stat(desc = "Histogram of the shadow policy's depth limit per scan")]
    pub shadow_limit: Vec<u64>,
    #[stat(desc = "Per-LLC state")]
    pub llcs: Vec<LlcMetrics>,
    #[stat(desc = "BPF run time per op (empty unless BPF statistics are on)")]
    pub ops: Vec<OpMetrics>,
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
    pub ops: Vec<(String, RunTime)>,
}

impl Metrics {
    pub fn new(c: &Counters, ctx: Context) -> Self {
        let s = c.view();
        let out = |o: u32| s.outcome[o as usize];
        let top = ctx.llcs.iter().map(|l| l.width as usize).max().unwrap_or(0);
        Self {
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
            pull_llc: s.pull_llc,
            pull_remote: s.pull_remote,
            rescued: s.rescued,
            rcu_readers: s.rcu_readers,
            scans: s.scans,
            core_scans: s.core_scans,
            scan_ns: s.scan_ns,
            scan_ns_mean: ratio(s.scan_ns, s.scans),
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
            llcs: ctx.llcs,
            ops: ctx
                .ops
                .into_iter()
                .filter(|(_, rt)| rt.calls > 0)
                .map(|(op, rt)| OpMetrics {
                    op,
                    calls: rt.calls,
                    ns: rt.ns,
                    ns_per_call: ratio(rt.ns, rt.calls),
                })
                .collect(),
        }
    }

    /// Share of scans that found an idle CPU when one existed, in %.
    pub fn found_rate(&self) -> f64 {
        100.0 * ratio(self.idle_found, self.idle_found + self.idle_missed)
    }

    /// The seed's 2x2 matrix over the scans that had an idle CPU to find.
    #[cfg(test)]
    pub fn shadow_total(&self) -> u64 {
        self.shadow_both + self.shadow_active_only + self.shadow_shadow_only + self.shadow_neither
    }

    pub fn format<W: Write>(&self, w: &mut W) -> Result<()> {
        let shadow = if self.shadow.is_empty() {
            String::new()
        } else {
            format!(", shadow {}", self.shadow)
        };
        let small = match self.small_llc {
            0 => String::new(),
            n => format!(", small-llc {n}"),
        };
        writeln!(
            w,
            "scx_sisutil: policy {}{shadow}{small} | {} | counting {:.1}s, {} switch(es)",
            self.policy, self.topology, self.elapsed_s, self.switches
        )?;
        let pct = |n: u64| 100.0 * ratio(n, self.wakeups);
        writeln!(
            w,
            "wakeups {} ({:.0}/s, affine {:.1}%, queued {:.1}%): target {:.1}% prev {:.1}% recent {:.1}% smt {:.1}% scan {:.1}% busy {:.1}% | pulls llc {} remote {} | rescued {} rcu-readers {}",
            self.wakeups,
            ratio(self.wakeups, 1) / self.elapsed_s.max(1e-9),
            pct(self.wake_affine),
            pct(self.queued_wakeups),
            pct(self.wake_target),
            pct(self.wake_prev),
            pct(self.wake_recent),
            pct(self.wake_smt),
            pct(self.wake_scan),
            pct(self.wake_busy),
            self.pull_llc,
            self.pull_remote,
            self.rescued,
            self.rcu_readers
        )?;
        writeln!(
            w,
            "scans {} (idle-core {}): found {:.1}% when an idle CPU existed | scan time total {} ns, mean {:.0} ns",
            self.scans,
            self.core_scans,
            self.found_rate(),
            self.scan_ns,
            self.scan_ns_mean
        )?;
        if !self.ops.is_empty() {
            let ops: Vec<String> = self
                .ops
                .iter()
                .map(|o| format!("{} {:.0}", o.op, o.ns_per_call))
                .collect();
            writeln!(w, "BPF ns per call: {}", ops.join(", "))?;
        }
        writeln!(w, "{}", llc_table(&self.llcs))?;
        writeln!(w, "{}", self.found_table())?;
        if !self.shadow.is_empty() {
            writeln!(w, "{}", self.shadow_table())?;
        }
        writeln!(w, "{}", self.hist_table())?;
        Ok(())
    }

    /// "Idle CPU in LLC | <policy> able to find CPU | Count".
    pub fn found_table(&self) -> String {
        let found = format!("{} able to find CPU", self.policy);
        let rows = vec![
            vec!["1".into(), "0".into(), self.idle_missed.to_string()],
            vec!["1".into(), "1".into(), self.idle_found.to_string()],
            vec!["0".into(), "0".into(), self.no_idle.to_string()],
            vec!["0".into(), "1".into(), self.no_idle_found.to_string()],
        ];
        box_table(&["Idle CPU in LLC", &found, "Count"], &rows)
    }

    /// The seed's matrix: both policies' success where an idle CPU existed.
    pub fn shadow_table(&self) -> String {
        let active = format!("{} able to find CPU", self.policy);
        let shadow = format!("{} able to find CPU", self.shadow);
        let row = |a: &str, s: &str, n: u64| vec!["1".into(), a.into(), s.into(), n.to_string()];
        let rows = vec![
            row("0", "0", self.shadow_neither),
            row("0", "1", self.shadow_shadow_only),
            row("1", "0", self.shadow_active_only),
            row("1", "1", self.shadow_both),
        ];
        box_table(&["Idle CPU in LLC", &active, &shadow, "Count"], &rows)
    }

    /// "CPU Searched | Count", with the depth limits beside.
    pub fn hist_table(&self) -> String {
        let n = self.examined.len();
        let mut head = vec!["CPU Searched", "Count", "Limit Count"];
        if !self.shadow.is_empty() {
            head.push("Shadow Limit Count");
        }
        let rows: Vec<Vec<String>> = (0..n)
            .map(|i| {
                let label = if i + 1 == n && n > 1 {
                    format!(">={i}")
                } else {
                    i.to_string()
                };
                let mut row = vec![
                    label,
                    self.examined[i].to_string(),
                    self.limit.get(i).copied().unwrap_or(0).to_string(),
                ];
                if !self.shadow.is_empty() {
                    row.push(self.shadow_limit.get(i).copied().unwrap_or(0).to_string());
                }
                row
            })
            .collect();
        box_table(&head, &rows)
    }
}

fn llc_table(llcs: &[LlcMetrics]) -> String {
    let rows: Vec<Vec<String>> = llcs
        .iter()
        .map(|l| {
            vec![
                l.index.to_string(),
                l.cpus.clone(),
                format!("{:.1}", l.util_pct),
                l.nr_idle_scan.to_string(),
                l.has_idle_cores.to_string(),
                l.prop_avg_scan_cost_ns.to_string(),
                l.prop_wake_avg_idle_ns.to_string(),
            ]
        })
        .collect();
    box_table(
        &[
            "LLC",
            "CPUs",
            "util %",
            "nr_idle_scan",
            "idle core",
            "prop avg_scan_cost ns",
            "prop wake_avg_idle ns",
        ],
        &rows,
    )
}

pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// A table in the seed's style: +---+ rules, centred cells.
pub fn box_table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let rule: String = widths
        .iter()
        .map(|w| format!("+{}", "-".repeat(w + 2)))
        .collect::<String>()
        + "+";
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        widths
            .iter()
            .zip(cells)
            .map(|(w, c)| format!("| {c:^w$} "))
            .collect::<String>()
            + "|"
    };
    let mut out = vec![rule.clone(), line(&mut head.iter().copied()), rule.clone()];
    for row in rows {
        out.push(line(&mut row.iter().map(|s| s.as_str())));
    }
    out.push(rule);
    out.join("\n")
}

/// What each statistic is, for the socket's "stats_meta" request and for
/// --help-stats.
pub fn metas() -> Vec<StatsMeta> {
    vec![LlcMetrics::meta(), OpMetrics::meta(), Metrics::meta()]
}

/// Describes every statistic (--help-stats).
pub fn describe<W: Write>(w: &mut W) -> Result<()> {
    metas()
        .into_iter()
        .fold(StatsServerData::<(), ()>::new(), |d, m| d.add_meta(m))
        .describe_meta(w, None)
}

/// The metrics of the running instance.
pub fn fetch() -> Result<Metrics> {
    let mut client = StatsClient::new().connect(Some(5000)).map_err(|_| {
        anyhow::anyhow!("no scx_sisutil instance is running (its stats socket does not answer)")
    })?;
    client.request("stats", vec![])
}

/// Prints the metrics of the running instance once.
pub fn print_once(json: bool) -> Result<()> {
    let m = fetch()?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(&m)?)?;
    } else {
        m.format(&mut out)?;
    }
    Ok(())
}

/// Prints the metrics of the running instance every `intv` until
/// `shutdown`, as text or as one JSON object per line.
pub fn monitor(intv: Duration, json: bool, shutdown: Arc<AtomicBool>) -> Result<()> {
    scx_utils::monitor_stats::<Metrics>(
        &[],
        intv,
        || shutdown.load(Ordering::Relaxed),
        |m| {
            let mut out = std::io::stdout().lock();
            if json {
                writeln!(out, "{}", serde_json::to_string(&m)?)?;
            } else {
                m.format(&mut out)?;
            }
            out.flush()?;
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_from_before_queued_wakeups_still_read() {
        let mut v = serde_json::to_value(Metrics::default()).unwrap();
        v.as_object_mut().unwrap().remove("queued_wakeups");
        let m: Metrics = serde_json::from_value(v).unwrap();
        assert_eq!(m.queued_wakeups, 0);
    }

    fn record(f: impl Fn(&mut bpf_intf::sisu_stats)) -> Vec<u8> {
        let mut s = Counters::default().view();
        f(&mut s);
        Counters::from_view(&s)
            .0
            .iter()
            .flat_map(|w| w.to_ne_bytes())
            .collect()
    }

    fn ctx(widths: &[u64]) -> Context {
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
                ("select_cpu".into(), RunTime { calls: 4, ns: 1000 }),
                ("tick".into(), RunTime::default()),
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
        let m = Metrics::new(&Counters::sum_cpus(&[raw]).unwrap(), ctx(&[4, 4]));
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
        assert_eq!(m.ops[0].ns_per_call, 250.0);
    }

    #[test]
    fn tables_render_like_the_seed() {
        let raw = record(|s| {
            s.shadow = [[66444, 34153], [57204, 119263]];
            s.examined[0] = 10520;
            s.examined[16] = 26157;
        });
        let m = Metrics::new(&Counters::sum_cpus(&[raw]).unwrap(), ctx(&[16]));
        let t = m.shadow_table();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 8);
        assert!(lines[1].contains("util able to find CPU"));
        assert!(lines[1].contains("prop able to find CPU"));
        assert!(lines[3].contains("66444"));
        assert!(lines[6].contains("119263"));
        assert!(lines.iter().all(|l| l.len() == lines[0].len()));

        let h = m.hist_table();
        assert!(h.lines().any(|l| l.contains(" 0 ") && l.contains("10520")));
        assert!(h.lines().any(|l| l.contains(">=16") && l.contains("26157")));

        let mut text = Vec::new();
        m.format(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("policy util, shadow prop"));
        assert!(text.contains("CPU Searched"));
        assert!(text.contains("BPF ns per call: select_cpu 250"));
    }

    #[test]
    fn json_round_trip() {
        let m = Metrics::new(&Counters::default(), ctx(&[8]));
        let back: Metrics = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(m, back);
    }
}
