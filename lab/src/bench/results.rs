//! The results file of an A/B run: every raw sample with the scheduler's
//! counters for its run, the environment and the method, as `compare`,
//! `plot` and `study-summary` read it back.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::arms::Arm;
use super::workload::{Matrix, Point};
use sisutil_proto::control::TraceState;
use sisutil_proto::stats::Metrics;

pub const FORMAT: &str = "scx_sisutil-ab/1";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Env {
    pub kernel: String,
    pub hostname: String,
    pub topology: String,
    pub cpus: u64,
    pub scheduler_version: String,
    pub scheduler_args: Vec<String>,
    pub command_line: Vec<String>,
    /// The commit the lab and the scheduler were built from ("g<sha>"),
    /// empty where unknown: results files written before it was recorded,
    /// and builds from outside a git checkout.
    #[serde(default)]
    pub commit: String,
    /// Whether tracked files differed from that commit.
    #[serde(default)]
    pub dirty: bool,
}

impl Env {
    /// "g<sha>" or "g<sha>-dirty", as `scx_sisutil --version` prints it.
    pub fn build(&self) -> Option<String> {
        (!self.commit.is_empty())
            .then(|| format!("{}{}", self.commit, if self.dirty { "-dirty" } else { "" }))
    }

    /// The commit and dirt of a build string such as BUILD_COMMIT.
    pub fn split_build(build: &str) -> (String, bool) {
        match build.strip_suffix("-dirty") {
            Some(c) => (c.to_string(), true),
            None => (build.to_string(), false),
        }
    }
}

pub use super::order::Order;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Method {
    pub iterations: u32,
    /// Results files written before the order was a choice have none:
    /// they were all run alternating.
    #[serde(default)]
    pub order: Order,
    /// Whether each point's rounds start the arms' order afresh; results
    /// files written before they did have none: their cycle of orders ran
    /// on across points.
    #[serde(default)]
    pub order_per_point: bool,
    pub warmup: bool,
    pub settle_s: f64,
    pub alpha: f64,
    pub baseline: String,
    /// The equivalence margin, in % of the base's mean, stated before the
    /// run (`--margin`); without it the report takes one from a control
    /// arm, where one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin_pct: Option<f64>,
    /// The analyses declared before the run: `sisutil-lab table` options,
    /// run on this results file when the run ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declared: Vec<String>,
    pub matrix: Matrix,
}

/// One measured run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub iteration: u32,
    pub values: BTreeMap<String, f64>,
    pub wall_s: f64,
    /// The scheduler's counters over the run (scx arms only).
    pub stats: Option<Metrics>,
    /// Why the run gave no values: the benchmark failed, or a server it
    /// needs did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// The trace of a `+traceN` arm's run: what it put on record, its
    /// folder relative to the results' (the last iteration's stays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceState>,
}

impl Sample {
    pub fn failed(iteration: u32, why: String) -> Self {
        Sample {
            iteration,
            values: BTreeMap::new(),
            wall_s: 0.0,
            stats: None,
            failed: Some(why),
            trace: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    pub point: Point,
    /// Samples per arm name.
    pub samples: BTreeMap<String, Vec<Sample>>,
}

impl PointResult {
    /// Whether any of @arm's samples failed.
    pub fn failed(&self, arm: &str) -> bool {
        self.samples
            .get(arm)
            .is_some_and(|ss| ss.iter().any(|s| s.failed.is_some()))
    }

    pub fn values(&self, arm: &str, metric: &str) -> Vec<f64> {
        self.samples
            .get(arm)
            .map(|ss| {
                ss.iter()
                    .filter_map(|s| s.values.get(metric).copied())
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Results {
    pub format: String,
    pub created: String,
    pub env: Env,
    pub method: Method,
    pub arms: Vec<Arm>,
    pub points: Vec<PointResult>,
    /// Set when the run stopped early, and why.
    #[serde(default)]
    pub incomplete: Option<String>,
    /// Other projects' arms that failed and were left out of the rest of
    /// the run, and why.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dropped: BTreeMap<String, String>,
    /// When the run was taken up again after its machine died, and with how
    /// many of its samples (`--resume`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<String>,
}

/// Files written before the statistics kept auto's scans by rule hold
/// one key per candidate, `auto_<rule>_scans`: moved into `auto_scans`.
fn auto_scans_by_rule(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            let old: Vec<String> = m
                .keys()
                .filter(|k| k.len() > "auto__scans".len())
                .filter(|k| k.starts_with("auto_") && k.ends_with("_scans"))
                .cloned()
                .collect();
            for k in old {
                let rule = k["auto_".len()..k.len() - "_scans".len()].to_string();
                let n = m.remove(&k).unwrap_or(Value::Null);
                let by_rule = m
                    .entry("auto_scans")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Value::Object(by_rule) = by_rule {
                    by_rule.insert(rule, n);
                }
            }
            m.values_mut().for_each(auto_scans_by_rule);
        }
        Value::Array(a) => a.iter_mut().for_each(auto_scans_by_rule),
        _ => {}
    }
}

impl Results {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let not_ours = || format!("{} is not a scx_sisutil results file", path.display());
        let mut v: serde_json::Value = serde_json::from_str(&text).with_context(not_ours)?;
        auto_scans_by_rule(&mut v);
        let r: Results = serde_json::from_value(v).with_context(not_ours)?;
        if r.format != FORMAT {
            bail!(
                "{}: format {:?}, expected {FORMAT:?}",
                path.display(),
                r.format
            );
        }
        Ok(r)
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("json.part");
        std::fs::write(&tmp, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Sections in the order their points ran.
    pub fn sections(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.points {
            if !out.contains(&p.point.section) {
                out.push(p.point.section.clone());
            }
        }
        out
    }

    /// The failed samples, as (section, label, arm, why).
    pub fn failures(&self) -> Vec<(&str, &str, &str, &str)> {
        let mut out = Vec::new();
        for p in &self.points {
            for (arm, samples) in &p.samples {
                for why in samples.iter().filter_map(|s| s.failed.as_deref()) {
                    out.push((
                        p.point.section.as_str(),
                        p.point.label.as_str(),
                        arm.as_str(),
                        why,
                    ));
                }
            }
        }
        out
    }

    /// The traces the run kept, as (point, arm, trace): per point and
    /// arm the last run's, whose files each run overwrote.
    pub fn traces(&self) -> Vec<(&PointResult, &str, &TraceState)> {
        let mut out = Vec::new();
        for p in &self.points {
            for (arm, samples) in &p.samples {
                if let Some(t) = samples.iter().rev().find_map(|s| s.trace.as_ref()) {
                    out.push((p, arm.as_str(), t));
                }
            }
        }
        out
    }

    pub fn section_points(&self, section: &str) -> Vec<&PointResult> {
        self.points
            .iter()
            .filter(|p| p.point.section == section)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_files_keep_auto_scans_by_rule() {
        let mut v: serde_json::Value = serde_json::from_str(
            r#"{"a":[{"stats":{"auto_util_scans":3,"auto_full_scans":1,"auto_judged":2}}]}"#,
        )
        .unwrap();
        auto_scans_by_rule(&mut v);
        let stats = &v["a"][0]["stats"];
        assert_eq!(stats["auto_scans"]["util"], 3);
        assert_eq!(stats["auto_scans"]["full"], 1);
        assert_eq!(stats["auto_judged"], 2);
        assert!(stats.get("auto_util_scans").is_none());
        let m: Metrics = serde_json::from_value(stats.clone()).unwrap();
        assert_eq!(m.auto_scans.values().sum::<u64>(), 4);
    }
}
