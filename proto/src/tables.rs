//! The statistics as text: the review thread's tables (found-rate, the "able
//! to find" matrix, "CPU Searched | Count") and the per-LLC table, which
//! `--stats`, `--monitor`, `stats` and the harness's report print.

use std::io::Write;

use anyhow::Result;

use crate::stats::{ratio, LlcMetrics, Metrics};

impl Metrics {
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
            "wakeups {} ({:.0}/s, affine {:.1}%, queued {:.1}%): target {:.1}% prev {:.1}% recent {:.1}% smt {:.1}% scan {:.1}% busy {:.1}% fork {:.1}% | moved llc {} node {} | pulls llc {} node {} package {} remote {} (running {}) | rescued {} rcu-readers {}",
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
            pct(self.wake_fork),
            self.wake_moved_llc,
            self.wake_moved_node,
            self.pull_llc,
            self.pull_node,
            self.pull_package,
            self.pull_remote,
            self.pull_running,
            self.rescued,
            self.rcu_readers
        )?;
        write!(
            w,
            "scans {} (idle-core {}): found {:.1}% when an idle CPU existed | scan time total {} ns, mean {:.0} ns, {:.0} ns per CPU examined",
            self.scans,
            self.core_scans,
            self.found_rate(),
            self.scan_ns,
            self.scan_ns_mean,
            self.scan_ns_per_cpu
        )?;
        if self.shadow_scan_ns > 0 {
            write!(
                w,
                " (the shadow's, looking only: {:.0})",
                self.shadow_scan_ns_per_cpu
            )?;
        }
        writeln!(w)?;
        if !self.ops.is_empty() {
            let ops: Vec<String> = self
                .ops
                .iter()
                .map(|(op, o)| format!("{op} {:.0}", o.ns_per_call))
                .collect();
            writeln!(w, "BPF ns per call: {}", ops.join(", "))?;
        }
        writeln!(w, "{}", llc_table(self.llcs.values()))?;
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

    /// The review's matrix: both policies' success where an idle CPU existed.
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

fn llc_table<'a>(llcs: impl Iterator<Item = &'a LlcMetrics>) -> String {
    let rows: Vec<Vec<String>> = llcs
        .map(|l| {
            vec![
                l.index.to_string(),
                l.cpus.clone(),
                format!("{:.1}", l.util_pct),
                l.nr_idle_scan.to_string(),
                l.has_idle_cores.to_string(),
                l.scanned.to_string(),
                format!("{:.1}", l.found_pct),
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
            "scans",
            "found %",
            "prop avg_scan_cost ns",
            "prop wake_avg_idle ns",
        ],
        &rows,
    )
}

/// A table in the review's style: +---+ rules, centred cells.
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

#[cfg(test)]
mod tests {
    use crate::stats::{LlcMetrics, Metrics, OpMetrics};

    #[test]
    fn tables_render_like_the_review() {
        let mut examined = vec![0; 17];
        examined[0] = 10520;
        examined[16] = 26157;
        let m = Metrics {
            policy: "util".into(),
            shadow: "prop".into(),
            shadow_neither: 66444,
            shadow_shadow_only: 34153,
            shadow_active_only: 57204,
            shadow_both: 119263,
            examined,
            limit: vec![0; 17],
            shadow_limit: vec![0; 17],
            llcs: [(
                0,
                LlcMetrics {
                    width: 16,
                    ..Default::default()
                },
            )]
            .into(),
            ops: [(
                "select_cpu".to_string(),
                OpMetrics {
                    calls: 4,
                    ns: 1000,
                    ns_per_call: 250.0,
                },
            )]
            .into(),
            ..Default::default()
        }
        .with_depths();
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
}
