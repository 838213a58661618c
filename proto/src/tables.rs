//! The statistics as text: the review thread's tables (found-rate, the "able
//! to find" matrix, "CPU Searched | Count") and the per-LLC table, which
//! `--stats`, `--monitor`, `stats` and the harness's report print.

use std::io::Write;

use anyhow::Result;

use crate::policy::Policy;
use crate::stats::{ratio, LlcMetrics, Metrics};

impl Metrics {
    /// Whether the scheduler's (or observer's) own loop and socket kept time.
    pub fn timeliness_line(&self) -> String {
        let ms = |us: u64| us as f64 / 1000.0;
        let mut line = format!(
            "loop every {} ms: {} intervals, late p50 {:.1} ms p99 {:.1} ms max {:.1} ms, {} skipped | requests {}: p50 {:.1} ms p99 {:.1} ms max {:.1} ms",
            self.loop_interval_ms,
            self.loop_intervals,
            ms(self.loop_late_p50_us),
            ms(self.loop_late_p99_us),
            ms(self.loop_late_max_us),
            self.loop_skipped,
            self.requests,
            ms(self.request_p50_us),
            ms(self.request_p99_us),
            ms(self.request_max_us),
        );
        if self.depth_ttl_ms > 0 {
            line.push_str(&format!(
                " | depths older than {} ms: {} scans | own threads queued first: {}",
                self.depth_ttl_ms, self.stale_depths, self.own_first
            ));
        }
        line
    }

    /// How many CPUs found idle were still free when their task got there:
    /// the kernel's word against the idle mask's.
    pub fn taken_line(&self) -> String {
        if self.lean > 0 {
            return format!(
                "found CPUs taken before their task got there: {}",
                self.not_counted()
            );
        }
        if self.found_checked == 0 {
            return "found CPUs taken before their task got there: not known (the kernel lacks SCX_ENQ_IMMED)".into();
        }
        format!(
            "found CPUs taken before their task got there: {} of {} ({:.2}%), of the scan's {} of {} ({:.2}%): found {:.1}% by the idle mask, {:.1}% still free",
            self.found_taken,
            self.found_placed,
            100.0 * ratio(self.found_taken, self.found_placed),
            self.scan_taken,
            self.wake_scan,
            100.0 * ratio(self.scan_taken, self.wake_scan),
            self.found_rate(),
            self.free_found_rate()
        )
    }

    /// Why a figure the lean statistics leave out is missing, and how to
    /// get it: --detail-stats cannot be added to --no-scan-stats.
    fn not_counted(&self) -> &'static str {
        if self.stats_off > 0 {
            "not counted (statistics are off: --no-scan-stats)"
        } else {
            "not counted (start with --detail-stats)"
        }
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
        let small = if self.sis_cache > 0 {
            format!("{small}, sis-cache")
        } else {
            small
        };
        let small = if self.sis_current > 0 {
            format!("{small}, sis-current")
        } else {
            small
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
        // The kernel places a task on the CPU it chose, taken or not: no
        // hand-back to count.
        if self.policy != crate::stats::KERNEL {
            writeln!(w, "{}", self.taken_line())?;
        }
        if self.loop_intervals > 0 {
            writeln!(w, "{}", self.timeliness_line())?;
        }
        if self.sis_cache > 0 || self.cache_kept > 0 {
            writeln!(
                w,
                "SIS_CACHE{}: {} sleeps kept their CPU, {} wakeups got it back; scans passed over {} kept CPUs and fell back to one {} times",
                if self.sis_cache > 0 { "" } else { " (off now)" },
                self.cache_kept,
                self.cache_reclaimed,
                self.cache_skipped,
                self.cache_fallback
            )?;
        }
        if self.sis_current > 0 || self.current_cut > 0 {
            writeln!(
                w,
                "SIS_CURRENT{}: {} wakeups went to their waker's CPU instead of a scan, {} of them while an idle CPU of the LLC stood idle",
                if self.sis_current > 0 { "" } else { " (off now)" },
                self.current_cut,
                self.current_idle_left
            )?;
        }
        let auto: u64 = self.auto_scans.values().sum();
        if auto > 0 {
            // "util's depth 80.0%, prop's 15.0%, full's 5.0%"
            let shares: Vec<String> = Policy::AUTO_CANDIDATES
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let n = self.auto_scans.get(p.name()).copied().unwrap_or(0);
                    let depth = if i == 0 { " depth" } else { "" };
                    format!("{}'s{depth} {:.1}%", p.name(), 100.0 * ratio(n, auto))
                })
                .collect();
            writeln!(
                w,
                "auto: scanned with {} of {auto} scans",
                shares.join(", ")
            )?;
        }
        if self.lean > 0 {
            write!(
                w,
                "scans {} (idle-core {}): found one in {:.1}% | whether one existed when they missed, and scan time: {}",
                self.scans,
                self.core_scans,
                100.0 * ratio(self.wake_scan, self.scans),
                self.not_counted()
            )?;
        } else {
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
        }
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
        writeln!(w, "{}", llc_table(self.llcs.values(), self.lean > 0))?;
        if !self.waits.is_empty() {
            writeln!(w, "{}", self.waits_table())?;
        }
        writeln!(w, "{}", self.review_tables())?;
        Ok(())
    }

    /// Placement to first run, by what the placement found: what a miss
    /// costs beside what a find does.
    pub fn waits_table(&self) -> String {
        fn label(k: &str) -> &str {
            match k {
                "idle" => "idle CPU before the scan",
                "found" => "found by the scan",
                "missed" => "missed an idle CPU",
                "none" => "no idle CPU to find",
                "current" => "sent to its waker",
                other => other,
            }
        }
        let rows: Vec<Vec<String>> = crate::stats::WAIT_KINDS
            .iter()
            .filter_map(|k| self.waits.get(*k).map(|m| (k, m)))
            .map(|(k, m)| {
                vec![
                    label(k).to_string(),
                    m.count.to_string(),
                    format!("{:.1}", m.mean_us),
                    format!("{:.1}", m.p50_us),
                    format!("{:.1}", m.p90_us),
                    format!("{:.1}", m.p99_us),
                ]
            })
            .collect();
        box_table(
            &[
                "The wakeup's placement",
                "Wakeups",
                "mean wait us",
                "p50 us",
                "p90 us",
                "p99 us",
            ],
            &rows,
        )
    }

    /// The review's tables: found-rate, each shadow rule's "able to find"
    /// matrix against the active policy (and every other pair on a line
    /// each), "CPU Searched | Count".
    pub fn review_tables(&self) -> String {
        // Lean statistics do not know whether a missed scan had one to find.
        let mut out = if self.lean > 0 {
            vec![]
        } else {
            vec![self.found_table()]
        };
        if !self.rules.is_empty() {
            out.push(self.rules_table());
            for rule in self.rules.keys() {
                out.push(self.pair_table(&format!("active/{rule}")));
            }
            if self.rules.len() > 1 {
                out.push(self.pairs_table());
            }
        } else if !self.shadow.is_empty() {
            out.push(self.shadow_table());
        }
        out.push(self.hist_table());
        out.join("\n")
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

    /// The review's matrix: both policies' success where an idle CPU
    /// existed, for the active policy and the (first) shadow rule.
    pub fn shadow_table(&self) -> String {
        if let Some(first) = self
            .shadow
            .split(',')
            .next()
            .filter(|_| !self.pairs.is_empty())
        {
            return self.pair_table(&format!("active/{first}"));
        }
        let p = crate::stats::PairMetrics {
            both: self.shadow_both,
            first_only: self.shadow_active_only,
            second_only: self.shadow_shadow_only,
            neither: self.shadow_neither,
        };
        matrix(&self.policy, &self.shadow, &p)
    }

    /// The review's matrix of one pair of `pairs` ("a/b"; "active" is
    /// the active policy).
    pub fn pair_table(&self, key: &str) -> String {
        let (a, b) = key.split_once('/').unwrap_or((key, ""));
        let name = |r: &str| {
            if r == "active" {
                self.policy.clone()
            } else if r == self.policy {
                format!("{r} (shadow)")
            } else {
                r.to_string()
            }
        };
        let p = self.pairs.get(key).cloned().unwrap_or_default();
        matrix(&name(a), &name(b), &p)
    }

    /// One row per shadow rule: what a scan to its depth would have found.
    pub fn rules_table(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .rules
            .iter()
            .map(|(r, m)| {
                vec![
                    r.clone(),
                    m.judged.to_string(),
                    format!("{:.1}", m.would_find_pct),
                    format!("{:.2}", m.limit_mean),
                    format!("{:.2}", m.searched_mean),
                    format!("{:.0}", ratio(m.walk_ns, m.judged)),
                ]
            })
            .collect();
        box_table(
            &[
                "Shadow rule",
                "Scans",
                "found %",
                "mean limit",
                "mean CPUs searched",
                "ns per scan (its share of the walk)",
            ],
            &rows,
        )
    }

    /// Every pair's matrix on one line each.
    pub fn pairs_table(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .pairs
            .iter()
            .map(|(k, p)| {
                vec![
                    k.replace("active", &format!("{} (active)", self.policy)),
                    p.both.to_string(),
                    p.first_only.to_string(),
                    p.second_only.to_string(),
                    p.neither.to_string(),
                ]
            })
            .collect();
        box_table(
            &[
                "Pair (first/second)",
                "both found",
                "first only",
                "second only",
                "neither",
            ],
            &rows,
        )
    }

    /// "CPU Searched | Count", with the depth limits beside.
    pub fn hist_table(&self) -> String {
        let n = self.examined.len();
        let mut head = vec![
            "CPU Searched".to_string(),
            "Count".into(),
            "Limit Count".into(),
        ];
        // A column per shadow rule; results from before the rules had one.
        let shadows: Vec<(String, &[u64])> = if self.rules.is_empty() {
            if self.shadow.is_empty() {
                Vec::new()
            } else {
                vec![("Shadow Limit Count".into(), &self.shadow_limit[..])]
            }
        } else {
            self.rules
                .iter()
                .map(|(r, m)| (format!("{r} Limit Count"), &m.limit_hist[..]))
                .collect()
        };
        head.extend(shadows.iter().map(|(h, _)| h.clone()));
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
                for (_, h) in &shadows {
                    row.push(h.get(i).copied().unwrap_or(0).to_string());
                }
                row
            })
            .collect();
        let head: Vec<&str> = head.iter().map(|h| h.as_str()).collect();
        box_table(&head, &rows)
    }
}

/// "Idle CPU in LLC | a able to find CPU | b able to find CPU | Count".
fn matrix(a: &str, b: &str, p: &crate::stats::PairMetrics) -> String {
    let (a, b) = (
        format!("{a} able to find CPU"),
        format!("{b} able to find CPU"),
    );
    let row = |x: &str, y: &str, n: u64| vec!["1".into(), x.into(), y.into(), n.to_string()];
    let rows = vec![
        row("0", "0", p.neither),
        row("0", "1", p.second_only),
        row("1", "0", p.first_only),
        row("1", "1", p.both),
    ];
    box_table(&["Idle CPU in LLC", &a, &b, "Count"], &rows)
}

/// @lean: found % and waits were not counted (no --detail-stats).
fn llc_table<'a>(llcs: impl Iterator<Item = &'a LlcMetrics> + Clone, lean: bool) -> String {
    // SIS_PROP's shadow books, where SIS_PROP is judged in the shadow; the
    // adaptive rule's choice and its prices, where it is the policy.
    let shadow_books = llcs.clone().any(|l| l.shadow_prop_avg_scan_cost_ns > 0);
    let auto = llcs.clone().any(|l| !l.auto_rule.is_empty());
    let rows: Vec<Vec<String>> = llcs
        .map(|l| {
            let mut row = vec![
                l.index.to_string(),
                l.cpus.clone(),
                format!("{:.1}", l.util_pct),
                l.nr_idle_scan.to_string(),
                l.has_idle_cores.to_string(),
                l.scanned.to_string(),
                if lean {
                    "-".into()
                } else {
                    format!("{:.1}", l.found_pct)
                },
                l.prop_avg_scan_cost_ns.to_string(),
                l.prop_wake_avg_idle_ns.to_string(),
            ];
            if shadow_books {
                row.push(l.shadow_prop_avg_scan_cost_ns.to_string());
            }
            row.push(if lean {
                "-".into()
            } else {
                format!("{:.1}/{:.1}", l.missed_wait_us, l.found_wait_us)
            });
            if auto {
                let gains: Vec<String> = l.auto_gain_ns.iter().map(|g| format!("{g:.0}")).collect();
                row.push(format!("{} ({})", l.auto_rule, l.auto_switches));
                row.push(format!("{:.1}", l.auto_saved_us));
                row.push(format!("{:.0}", l.auto_cpu_ns));
                row.push(l.auto_judges_one_in.to_string());
                row.push(gains.join("/"));
            }
            row
        })
        .collect();
    let mut head = vec![
        "LLC",
        "CPUs",
        "util %",
        "nr_idle_scan",
        "idle core",
        "scans",
        "found %",
        "prop avg_scan_cost ns",
        "prop wake_avg_idle ns",
    ];
    if shadow_books {
        head.push("shadow prop avg_scan_cost ns");
    }
    head.push("wait us missed/found");
    if auto {
        head.extend([
            "auto rule (switches)",
            "S us",
            "c ns",
            "judges 1 in",
            "gain ns util/prop/full",
        ]);
    }
    box_table(&head, &rows)
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
    use crate::stats::{LlcMetrics, Metrics, OpMetrics, PairMetrics, RuleMetrics};

    #[test]
    fn every_shadow_rule_gets_its_row_matrix_and_column() {
        let rule = |would_find_pct: f64, limit_hist: Vec<u64>| RuleMetrics {
            judged: 10,
            would_find_pct,
            limit_hist,
            ..Default::default()
        };
        let pair = |both| PairMetrics {
            both,
            ..Default::default()
        };
        let m = Metrics {
            policy: "prop".into(),
            shadow: "prop,full".into(),
            examined: vec![1, 2, 3],
            limit: vec![0, 0, 6],
            rules: [
                ("prop".to_string(), rule(40.0, vec![0, 9, 1])),
                ("full".to_string(), rule(100.0, vec![0, 0, 10])),
            ]
            .into(),
            pairs: [
                ("active/prop".to_string(), pair(4)),
                ("active/full".to_string(), pair(5)),
                ("prop/full".to_string(), pair(6)),
            ]
            .into(),
            ..Default::default()
        };
        let mut text = Vec::new();
        m.format(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("| prop (shadow) able to find CPU |"),
            "{text}"
        );
        assert!(text.contains("| full able to find CPU |"), "{text}");
        assert!(text.contains("prop (active)/full"), "{text}");
        let rules = m.rules_table();
        assert!(rules
            .lines()
            .any(|l| l.contains(" full ") && l.contains("100.0")));
        let h = m.hist_table();
        assert!(h.lines().nth(1).unwrap().contains("prop Limit Count"));
        assert!(
            h.lines()
                .any(|l| l.starts_with("|      1 ") && l.contains(" 9 ")),
            "{h}"
        );
        // The review's matrix for the first rule.
        assert!(m.shadow_table().contains("prop (shadow) able to find CPU"));
    }

    #[test]
    fn the_waits_table_names_each_kind_in_words() {
        let w = |count| crate::stats::WaitMetrics {
            count,
            mean_us: 1.5,
            ..Default::default()
        };
        let m = Metrics {
            waits: [("none".to_string(), w(3)), ("found".to_string(), w(7))].into(),
            ..Default::default()
        };
        let t = m.waits_table();
        let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("| ")).collect();
        assert!(
            rows[1].contains("found by the scan") && rows[1].contains(" 7 "),
            "{t}"
        );
        assert!(rows[2].contains("no idle CPU to find"), "{t}");
        // A shadow rule's row is "| none | ...": the kinds do not read as one.
        assert!(!t.lines().any(|l| l.starts_with("| none")), "{t}");
    }

    #[test]
    fn the_kernels_record_has_no_taken_line() {
        let text = |policy: &str| {
            let m = Metrics {
                policy: policy.into(),
                ..Default::default()
            };
            let mut out = Vec::new();
            m.format(&mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert!(text("util").contains("found CPUs taken"));
        assert!(!text(crate::stats::KERNEL).contains("found CPUs taken"));
    }

    #[test]
    fn lean_statistics_say_what_they_do_not_count() {
        let m = Metrics {
            policy: "util".into(),
            lean: 1,
            scans: 10,
            wake_scan: 4,
            ..Default::default()
        };
        let mut out = Vec::new();
        m.format(&mut out).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(
            t.contains("scans 10 (idle-core 0): found one in 40.0%"),
            "{t}"
        );
        assert!(
            t.contains("taken before their task got there: not counted"),
            "{t}"
        );
        // No found-rate, no matrix of what was there to find.
        assert!(!t.contains("when an idle CPU existed"), "{t}");
        assert!(!t.contains("Idle CPU in LLC"), "{t}");
        // With statistics off, --detail-stats is not the way to them.
        let off = Metrics { stats_off: 1, ..m };
        let mut out = Vec::new();
        off.format(&mut out).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(t.contains("not counted (statistics are off"), "{t}");
        assert!(!t.contains("start with --detail-stats"), "{t}");
    }

    #[test]
    fn taken_line_says_what_the_kernel_said_or_that_it_cannot() {
        let mut m = Metrics {
            wake_scan: 40,
            idle_found: 40,
            idle_missed: 60,
            found_placed: 50,
            found_taken: 5,
            scan_taken: 4,
            ..Default::default()
        };
        assert!(m.taken_line().contains("not known"), "{}", m.taken_line());
        m.found_checked = 1;
        let l = m.taken_line();
        assert!(l.contains("5 of 50 (10.00%)"), "{l}");
        assert!(l.contains("4 of 40 (10.00%)"), "{l}");
        assert!(
            l.contains("found 40.0% by the idle mask, 36.0% still free"),
            "{l}"
        );
    }

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
