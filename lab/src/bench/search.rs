//! What a run's counters say about the idle-CPU search, per arm and point:
//! the figures the study's summary, its charts and the documents' tables
//! set beside each benchmark result.

use super::report;
use super::results::Sample;
use sisutil_proto::stats::Metrics;

/// Share of `part` in `whole`, in %.
fn pct(part: u64, whole: u64) -> f64 {
    100.0 * sisutil_proto::stats::ratio(part, whole)
}

/// What a run's counters say about the search, each a mean over the
/// iterations: the columns of the summary and the series of its charts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Search {
    OnIdle,
    Scanned,
    Found,
    DepthZero,
    Limit,
    Examined,
    ScanNs,
    /// What a scan to the (first) shadow rule's depth would have found, on the
    /// same scans as `found`.
    ShadowFound,
    /// What a scan to SIS_PROP's depth would have found, where prop was
    /// judged in the shadow (`--shadow prop`, the observer's `all`), on
    /// the same scans as `found`.
    PropFound,
    /// Wakeups placed in another LLC, or another node, than prev's.
    MovedLlc,
    MovedNode,
    /// Tasks pulled from a queue within the node, and from farther.
    PullNear,
    PullRemote,
    /// Running tasks moved between nodes (counted in the pulls too).
    PullRunning,
    /// Mean wait, placement to first run, of wakees sent to the idle CPU
    /// the scan found, and of those a scan queued though one existed.
    FoundWait,
    MissedWait,
    /// Of auto's scans, the share it made with util's depth.
    AutoUtil,
    /// Wakeups SIS_CURRENT sent to their waker's CPU, in %.
    Current,
    /// Of the tasks sent to a CPU found idle, the share the kernel handed
    /// back because something else had taken it (kernels with
    /// SCX_ENQ_IMMED, runs with the scan statistics).
    Taken,
    /// BPF's mean run time per call of select_cpu and of running
    /// (`--bpf-stats`).
    SelectNs,
    RunningNs,
}

impl Search {
    pub const ALL: [Search; 7] = [
        Search::OnIdle,
        Search::Scanned,
        Search::Found,
        Search::DepthZero,
        Search::Limit,
        Search::Examined,
        Search::ScanNs,
    ];

    pub fn head(self) -> &'static str {
        match self {
            Search::OnIdle => "on idle %",
            Search::Scanned => "scanned %",
            Search::Found => "found %",
            Search::DepthZero => "depth 0 %",
            Search::Limit => "limit",
            Search::Examined => "examined",
            Search::ScanNs => "scan ns",
            Search::ShadowFound => "shadow found %",
            Search::PropFound => "prop would find %",
            Search::MovedLlc => "moved LLC %",
            Search::MovedNode => "moved node %",
            Search::PullNear => "pulls in node",
            Search::PullRemote => "pulls farther",
            Search::PullRunning => "running moved",
            Search::FoundWait => "found wait us",
            Search::MissedWait => "missed wait us",
            Search::AutoUtil => "auto at util %",
            Search::Current => "to waker %",
            Search::Taken => "found taken %",
            Search::SelectNs => "select_cpu ns",
            Search::RunningNs => "running ns",
        }
    }

    pub fn of(self, m: &Metrics) -> f64 {
        match self {
            // Wakeups that did not have to queue behind a running task.
            Search::OnIdle => pct(m.wakeups.saturating_sub(m.wake_busy), m.wakeups),
            Search::Scanned => pct(m.scans, m.wakeups),
            Search::Found => m.found_rate(),
            Search::DepthZero => pct(m.limit.first().copied().unwrap_or(0), m.scans),
            Search::Limit => report::hist_mean(&m.limit),
            Search::Examined => report::hist_mean(&m.examined),
            Search::ScanNs => m.scan_ns_mean,
            Search::ShadowFound => pct(
                m.shadow_both + m.shadow_shadow_only,
                m.idle_found + m.idle_missed,
            ),
            Search::PropFound => m
                .rules
                .get("prop")
                .map_or(0.0, |r| pct(r.would_find, r.would_find + r.would_miss)),
            Search::MovedLlc => pct(m.wake_moved_llc, m.wakeups),
            Search::MovedNode => pct(m.wake_moved_node, m.wakeups),
            Search::PullNear => (m.pull_llc + m.pull_node) as f64,
            Search::PullRemote => (m.pull_package + m.pull_remote) as f64,
            Search::PullRunning => m.pull_running as f64,
            Search::FoundWait => m.waits.get("found").map_or(0.0, |w| w.mean_us),
            Search::MissedWait => m.waits.get("missed").map_or(0.0, |w| w.mean_us),
            Search::AutoUtil => pct(
                m.auto_scans.get("util").copied().unwrap_or(0),
                m.auto_scans.values().sum(),
            ),
            Search::Current => pct(m.current_cut, m.wakeups),
            Search::Taken => pct(m.found_taken, m.found_placed),
            Search::SelectNs => m.ops.get("select_cpu").map_or(0.0, |o| o.ns_per_call),
            Search::RunningNs => m.ops.get("running").map_or(0.0, |o| o.ns_per_call),
        }
    }

    /// The BPF op this figure times, if it is one.
    fn op(self) -> Option<&'static str> {
        match self {
            Search::SelectNs => Some("select_cpu"),
            Search::RunningNs => Some("running"),
            _ => None,
        }
    }

    /// One value per run of one arm at a point; empty where `mean` is None.
    pub fn values(self, samples: &[Sample]) -> Vec<f64> {
        if self.mean(samples).is_none() {
            return Vec::new();
        }
        samples
            .iter()
            .filter_map(|s| s.stats.as_ref().map(|m| self.of(m)))
            .collect()
    }

    /// Mean over a point's runs of one arm; None without counters, or for
    /// a scan figure of an arm that never scanned.
    pub fn mean(self, samples: &[Sample]) -> Option<f64> {
        let scanned = samples
            .iter()
            .any(|s| s.stats.as_ref().is_some_and(|m| m.scans > 0));
        let scan_figure = !matches!(
            self,
            Search::OnIdle
                | Search::Scanned
                | Search::MovedLlc
                | Search::MovedNode
                | Search::PullNear
                | Search::PullRemote
                | Search::PullRunning
                | Search::Current
                | Search::Taken
                | Search::SelectNs
                | Search::RunningNs
        );
        if !scanned && scan_figure {
            return None;
        }
        let adaptive = samples.iter().any(|s| {
            s.stats
                .as_ref()
                .is_some_and(|m| m.auto_scans.values().sum::<u64>() > 0)
        });
        if self == Search::AutoUtil && !adaptive {
            return None;
        }
        let checked = samples
            .iter()
            .any(|s| s.stats.as_ref().is_some_and(|m| m.found_checked > 0));
        if self == Search::Taken && !checked {
            return None;
        }
        let prop_judged = samples.iter().any(|s| {
            s.stats
                .as_ref()
                .is_some_and(|m| m.rules.contains_key("prop"))
        });
        if self == Search::PropFound && !prop_judged {
            return None;
        }
        if let Some(op) = self.op() {
            let timed = samples
                .iter()
                .any(|s| s.stats.as_ref().is_some_and(|m| m.ops.contains_key(op)));
            if !timed {
                return None;
            }
        }
        report::mean_of(samples, |m| self.of(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sisutil_proto::stats::RuleMetrics;

    fn sample(rules: &[(&str, u64, u64)]) -> Sample {
        let mut s = super::super::fixture::results().points[0].samples["util"][0].clone();
        let m = s.stats.as_mut().unwrap();
        m.scans = 10;
        m.rules.clear();
        for &(name, find, miss) in rules {
            let r = RuleMetrics {
                would_find: find,
                would_miss: miss,
                ..RuleMetrics::default()
            };
            m.rules.insert(name.into(), r);
        }
        s
    }

    #[test]
    fn prop_found_reads_the_prop_rule_and_only_where_it_was_judged() {
        let judged = [sample(&[("util", 1, 3), ("prop", 3, 1)])];
        assert_eq!(Search::PropFound.mean(&judged), Some(75.0));
        let without = [sample(&[("util", 1, 3)])];
        assert_eq!(Search::PropFound.mean(&without), None);
    }
}
