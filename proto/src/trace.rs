//! The trace's two files, as the scheduler writes them and the lab reads
//! them: a row of `wakeups.csv` per wakeup on record, a row of `llcs.csv`
//! per LLC and interval. The columns are the fields below, in their order
//! (serde's names are csv's header), so that the writer and every reader
//! hold one schema; an empty cell is a field that does not apply (no
//! scan, no shadow rule, a CPU outside the topology).

use serde::{Deserialize, Serialize};

use crate::policy::Policy;

/// Declares the wakeup row with a `shadow_<rule>` column for every rule
/// that can shadow, as intf.h's rules table marks them (proto's build
/// script writes the invocation).
macro_rules! wakeup_row {
    ($($col:ident $rule:ident),*) => {
        /// One wakeup: what its placement decided, and what the task then waited.
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        pub struct Wakeup {
            /// CLOCK_MONOTONIC at the placement.
            pub woke_ns: u64,
            /// From the placement to the task's first run.
            pub wait_us: f64,
            /// The task that ran the wakeup (the idle task, pid 0, for one from
            /// an interrupt on an idle CPU); 0 and "" for a queued wakeup, placed
            /// in enqueue, where the waker is not known.
            pub waker_pid: i32,
            pub waker_comm: String,
            pub wakee_pid: i32,
            pub wakee_comm: String,
            /// The CPU the wakee last ran on, the waker's CPU the placement
            /// started from, and the CPU it chose: each with its LLC and node.
            pub prev: i32,
            pub prev_llc: Option<u32>,
            pub prev_node: Option<u32>,
            pub target: i32,
            pub target_llc: Option<u32>,
            pub target_node: Option<u32>,
            pub cpu: i32,
            pub cpu_llc: Option<u32>,
            pub cpu_node: Option<u32>,
            /// Where the task first ran.
            pub ran_cpu: i32,
            /// The active rule, and the rule that set the scan's depth ("" when
            /// nothing was scanned; auto names the rule it chose).
            pub rule: String,
            pub scan_rule: String,
            pub limit: Option<u32>,
            pub examined: Option<u32>,
            /// What the placement found: idle, found, missed, none or current
            /// (the statistics' wait kinds).
            pub found: String,
            /// How the placement ended: target, prev, recent, smt, scan, busy or
            /// fork.
            pub placement: String,
            /// 1 for a queued wakeup, placed in enqueue.
            pub queued: u8,
            /// Each shadow rule's verdict on the same scan: 1 where a scan
            /// to its depth would have found an idle CPU.
            $(pub $col: Option<u8>,)*
        }

        impl Wakeup {
            /// Each shadow rule's column and verdict, in the rules' order.
            pub fn shadows(&self) -> Vec<(&'static str, Policy, Option<u8>)> {
                vec![$((stringify!($col), Policy::$rule, self.$col),)*]
            }

            /// Sets @rule's verdict (a rule without a column has none).
            pub fn set_shadow(&mut self, rule: Policy, verdict: Option<u8>) {
                match rule {
                    $(Policy::$rule => self.$col = verdict,)*
                    _ => {}
                }
            }
        }
    };
}

include!(concat!(env!("OUT_DIR"), "/wakeup_row.rs"));

/// One LLC's state in one interval of the scheduler's loop.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LlcSample {
    pub t_ns: u64,
    pub llc: u32,
    pub width: u32,
    pub util_pct: f64,
    /// SIS_UTIL's depth for the LLC.
    pub nr_idle_scan: u32,
    /// The rule auto chose for it ("" unless auto runs).
    pub auto_rule: String,
}

/// The header line of a file of @T rows, as csv writes it before the
/// first row: written at once, a trace without a wakeup still names its
/// columns.
pub fn header<T: Serialize + Default>() -> Vec<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing to memory cannot fail, and serde's names are plain.
    if w.serialize(T::default()).is_err() {
        return Vec::new();
    }
    let bytes = w.into_inner().unwrap_or_default();
    let mut r = csv::Reader::from_reader(bytes.as_slice());
    r.headers()
        .map(|h| h.iter().map(String::from).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_the_fields_in_order() {
        let h = header::<Wakeup>();
        // 23 columns and one per rule that can shadow.
        let shadows = Policy::ALL.iter().filter(|p| p.can_shadow()).count();
        assert_eq!(h.len(), 23 + shadows);
        assert_eq!(&h[..3], ["woke_ns", "wait_us", "waker_pid"]);
        // The VM test reads a few columns by number (awk's $17, $21, $25).
        assert_eq!(
            (&*h[16], &*h[20], &*h[24]),
            ("rule", "found", "shadow_prop")
        );
        assert_eq!(header::<LlcSample>()[3], "util_pct");
    }

    #[test]
    fn a_shadow_column_per_rule_that_can_shadow() {
        let cols: Vec<String> = header::<Wakeup>()
            .into_iter()
            .filter(|c| c.starts_with("shadow_"))
            .collect();
        let rules: Vec<String> = Policy::ALL
            .iter()
            .filter(|p| p.can_shadow())
            .map(|p| format!("shadow_{}", p.name()))
            .collect();
        assert_eq!(cols, rules);
        let mut row = Wakeup::default();
        row.set_shadow(Policy::Full, Some(1));
        row.set_shadow(Policy::Builtin, Some(1));
        let set: Vec<_> = row
            .shadows()
            .into_iter()
            .filter(|s| s.2.is_some())
            .collect();
        assert_eq!(set, [("shadow_full", Policy::Full, Some(1))]);
    }

    #[test]
    fn a_row_reads_back_as_written() {
        let row = Wakeup {
            woke_ns: 7,
            wait_us: 12.345,
            wakee_comm: "a,b".into(),
            prev_llc: Some(1),
            limit: None,
            found: "missed".into(),
            shadow_prop: Some(1),
            ..Default::default()
        };
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(&row).unwrap();
        let bytes = w.into_inner().unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.lines().nth(1).unwrap().starts_with("7,12.345,"),
            "{text}"
        );
        let back: Vec<Wakeup> = csv::Reader::from_reader(bytes.as_slice())
            .deserialize()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back, [row]);
    }
}
