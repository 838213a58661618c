//! The run-time switch. A second invocation (`scx_sisutil set policy prop`)
//! asks the running instance, through its stats server's socket, to change
//! the policy or its options; the instance applies the change between two
//! wakeups, without unloading, and answers with its new state.
//!
//! The socket is the stats server's (root-only); a request is a
//! "control" request (scx_stats' wire format) whose arguments say what to
//! change, answered with the settings that result.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use scx_stats::prelude::*;
use serde::{Deserialize, Serialize};

use crate::policy::{Policy, Shadow};
use crate::{socket, sysfs};

/// The request that carries a change.
pub const REQUEST: &str = "control";

/// What to change; `None` leaves a setting as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Change {
    pub policy: Option<Policy>,
    /// `Some(Shadow::off())` turns the shadow rules off.
    pub shadow: Option<Shadow>,
    /// `Some(0)` turns the small-LLC rule off.
    pub small_llc: Option<u32>,
    /// SIS_CACHE on or off (docs/policies.md).
    pub sis_cache: Option<bool>,
    /// SIS_CURRENT on or off (docs/policies.md).
    pub sis_current: Option<bool>,
    /// Start or stop putting wakeups on record (the trace).
    pub trace: Option<TraceCmd>,
    /// Restart the counters without changing anything else.
    pub reset: bool,
}

/// What to do with the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceCmd {
    Start(TraceStart),
    Stop,
}

/// A trace to start: wakeups on record into `dir` (the scheduler writes
/// `wakeups.csv` and `llcs.csv` there), one in `every` per CPU, for at
/// most `seconds` and `max_mb` megabytes, whichever ends it first: a
/// client that dies does not leave it running.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceStart {
    pub dir: String,
    pub every: u32,
    pub seconds: u32,
    pub max_mb: u32,
    /// Whether a trace already in `dir` may be overwritten; without it
    /// the start is refused.
    pub replace: bool,
}

/// The trace as the scheduler last ran it (the running one's, or the
/// last one's after it ended).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceState {
    pub dir: String,
    pub every: u32,
    /// Still putting wakeups on record.
    pub running: bool,
    /// Records written to wakeups.csv.
    pub records: u64,
    /// Records the ring buffer had no room for.
    pub dropped: u64,
    /// Records BPF sent that the scheduler's thread had not read when the
    /// trace ended (it fell behind the wakeups).
    #[serde(default)]
    pub unread: u64,
    /// Why it ended early, if it did (a full disk, its size cap, its time).
    pub ended: Option<String>,
    /// A write failed and its files were removed (else they are whole).
    #[serde(default)]
    pub removed: bool,
}

/// What the running scheduler may change without a reload: the one type
/// these settings have from the command line, through a run-time change,
/// to the configuration BPF reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    pub policy: Policy,
    pub shadow: Shadow,
    /// util: scan the whole of an LLC with at most this many CPUs; 0 = off.
    pub small_llc: u32,
    /// Status records from before SIS_CACHE read as off.
    #[serde(default)]
    pub sis_cache: bool,
    /// ... and from before SIS_CURRENT.
    #[serde(default)]
    pub sis_current: bool,
}

/// The widest LLC the small-LLC rule can name: the topology's limit.
pub const SMALL_LLC_MAX: u32 = 1024;

impl Settings {
    /// Why these settings cannot run, if they cannot: the one check a
    /// start and a run-time change both pass.
    pub fn check(&self) -> Result<(), String> {
        if self.small_llc > SMALL_LLC_MAX {
            return Err(format!(
                "small-llc {} is wider than any LLC (at most {SMALL_LLC_MAX})",
                self.small_llc
            ));
        }
        Ok(())
    }
}

impl std::fmt::Display for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "policy {}", self.policy)?;
        if self.shadow.is_empty() {
            write!(f, ", no shadow")?;
        } else {
            write!(f, ", shadow {}", self.shadow)?;
        }
        match self.small_llc {
            0 => write!(f, ", small-llc off")?,
            n => write!(f, ", small-llc {n}")?,
        }
        if self.sis_cache {
            write!(f, ", sis-cache on")?;
        }
        if self.sis_current {
            write!(f, ", sis-current on")?;
        }
        Ok(())
    }
}

/// The instance's settings after a request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    #[serde(flatten)]
    pub settings: Settings,
    pub switches: u64,
    /// The reply comes from `scx_sisutil observe`, which has no policy.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub observer: bool,
    /// The trace, in a reply to a trace request; never part of the
    /// settings a switch compares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceState>,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.observer {
            return write!(
                f,
                "observing the kernel's placement, shadow {}",
                self.settings.shadow
            );
        }
        write!(
            f,
            "{} ({} switch(es) since start)",
            self.settings, self.switches
        )
    }
}

impl Change {
    /// The request's arguments on the wire.
    pub fn to_args(&self) -> Vec<(String, String)> {
        let mut args = Vec::new();
        if let Some(p) = self.policy {
            args.push(("policy".into(), p.name().into()));
        }
        if let Some(s) = &self.shadow {
            args.push(("shadow".into(), s.to_string()));
        }
        if let Some(n) = self.small_llc {
            args.push(("small_llc".into(), n.to_string()));
        }
        if let Some(on) = self.sis_cache {
            args.push(("sis_cache".into(), on_off(on).into()));
        }
        if let Some(on) = self.sis_current {
            args.push(("sis_current".into(), on_off(on).into()));
        }
        match &self.trace {
            Some(TraceCmd::Start(t)) => {
                args.push(("trace".into(), "start".into()));
                args.push(("trace_dir".into(), t.dir.clone()));
                args.push(("trace_every".into(), t.every.to_string()));
                args.push(("trace_seconds".into(), t.seconds.to_string()));
                args.push(("trace_max_mb".into(), t.max_mb.to_string()));
                if t.replace {
                    args.push(("trace_replace".into(), "1".into()));
                }
            }
            Some(TraceCmd::Stop) => args.push(("trace".into(), "stop".into())),
            None => {}
        }
        if self.reset {
            args.push(("reset".into(), "1".into()));
        }
        args
    }

    pub fn from_args(args: &BTreeMap<String, String>) -> Result<Self> {
        let mut c = Change::default();
        let num = |k: &str| -> Result<u32> {
            let v = args
                .get(k)
                .ok_or_else(|| anyhow!("trace start without {k}"))?;
            v.parse().map_err(|_| anyhow!("bad {k} {v:?}"))
        };
        for (k, v) in args {
            match k.as_str() {
                "trace" => {
                    c.trace = Some(match v.as_str() {
                        "stop" => TraceCmd::Stop,
                        "start" => TraceCmd::Start(TraceStart {
                            dir: args
                                .get("trace_dir")
                                .cloned()
                                .ok_or_else(|| anyhow!("trace start without trace_dir"))?,
                            every: num("trace_every")?,
                            seconds: num("trace_seconds")?,
                            max_mb: num("trace_max_mb")?,
                            replace: args.get("trace_replace").is_some_and(|v| v == "1"),
                        }),
                        _ => bail!("bad trace {v:?}: start or stop"),
                    })
                }
                "trace_dir" | "trace_every" | "trace_seconds" | "trace_max_mb"
                | "trace_replace" => {}
                "policy" => c.policy = Some(v.parse().map_err(|e: String| anyhow!(e))?),
                "shadow" => c.shadow = Some(v.parse::<Shadow>().map_err(|e| anyhow!(e))?),
                "small_llc" => {
                    c.small_llc = Some(v.parse().map_err(|_| anyhow!("bad small_llc {v:?}"))?)
                }
                "sis_cache" => c.sis_cache = Some(parse_on_off(k, v)?),
                "sis_current" => c.sis_current = Some(parse_on_off(k, v)?),
                "reset" => c.reset = true,
                _ => bail!("unknown setting {k:?}"),
            }
        }
        Ok(c)
    }

    /// The settings this change leads to from `cur`, or why they cannot
    /// run.
    pub fn apply(&self, cur: &Settings) -> Result<Settings, String> {
        let mut next = cur.clone();
        if let Some(p) = self.policy {
            next.policy = p;
        }
        // A shadow set holds only rules that can shadow (Shadow::of), and
        // a rule may shadow the active policy itself: it keeps its own
        // state.
        if let Some(s) = &self.shadow {
            next.shadow = s.clone();
        }
        if let Some(n) = self.small_llc {
            next.small_llc = n;
        }
        if let Some(on) = self.sis_cache {
            next.sis_cache = on;
        }
        if let Some(on) = self.sis_current {
            next.sis_current = on;
        }
        next.check()?;
        Ok(next)
    }

    /// The status this change leads to from `cur`: its settings, and one
    /// switch more where they changed.
    pub fn apply_to(&self, cur: &Status) -> Result<Status, String> {
        let settings = self.apply(&cur.settings)?;
        let switched = settings != cur.settings;
        Ok(Status {
            switches: cur.switches + u64::from(switched),
            settings,
            observer: cur.observer,
            trace: cur.trace.clone(),
        })
    }
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

fn parse_on_off(key: &str, v: &str) -> Result<bool> {
    match v {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => bail!("bad {key} {v:?}: on or off"),
    }
}

/// The client side: sends `change` to the running instance.
pub fn send(change: &Change) -> Result<Status> {
    sysfs::require_root("only root may change the running scheduler's settings")?;
    // An observer answers a status request and a reset, and refuses the
    // rest with its reason.
    socket::require_instance()?;
    let mut client = socket::connect(None)?;
    match client.request::<Status>(REQUEST, change.to_args()) {
        Ok(status) => Ok(status),
        // The server answers a refusal with an errno and the reason as a
        // JSON string.
        Err(e) if e.downcast_ref::<StatsErrno>().is_some() => {
            let raw = e.root_cause().to_string();
            let why = serde_json::from_str::<String>(&raw).unwrap_or(raw);
            bail!(
                "the running instance refused: {}",
                why.lines().next().unwrap_or_default()
            )
        }
        Err(e) => Err(e.context("the running instance did not answer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status() -> Status {
        Status::default()
    }

    #[test]
    fn args_round_trip() {
        let c = Change {
            policy: Some(Policy::Prop),
            shadow: Some("util,full".parse().unwrap()),
            small_llc: Some(16),
            sis_cache: Some(true),
            sis_current: Some(false),
            trace: None,
            reset: true,
        };
        let args: BTreeMap<String, String> = c.to_args().into_iter().collect();
        assert_eq!(Change::from_args(&args).unwrap(), c);
        for trace in [
            TraceCmd::Stop,
            TraceCmd::Start(TraceStart {
                dir: "/tmp/a b".into(),
                every: 64,
                seconds: 10,
                max_mb: 100,
                replace: true,
            }),
        ] {
            let c = Change {
                trace: Some(trace),
                ..Default::default()
            };
            let args: BTreeMap<String, String> = c.to_args().into_iter().collect();
            assert_eq!(Change::from_args(&args).unwrap(), c);
        }
        let off = Change {
            shadow: Some(Shadow::off()),
            ..Default::default()
        };
        let args: BTreeMap<String, String> = off.to_args().into_iter().collect();
        assert_eq!(Change::from_args(&args).unwrap(), off);
    }

    #[test]
    fn bad_args_are_refused() {
        let bad = |k: &str, v: &str| {
            let args = BTreeMap::from([(k.to_string(), v.to_string())]);
            Change::from_args(&args).is_err()
        };
        assert!(bad("policy", "fast"));
        assert!(bad("shadow", "nope"));
        assert!(bad("small_llc", "-1"));
        assert!(bad("sis_cache", "yes"));
        assert!(bad("sis_current", "1"));
        assert!(bad("trace", "pause"));
        assert!(bad("trace", "start"), "a start names its folder and sizes");
        assert!(bad("colour", "red"));
    }

    #[test]
    fn apply_counts_switches_and_checks_the_shadow() {
        let cur = status();
        let next = Change {
            policy: Some(Policy::Prop),
            ..Default::default()
        }
        .apply_to(&cur)
        .unwrap();
        assert_eq!(next.settings.policy, Policy::Prop);
        assert_eq!(next.switches, 1);

        let same = Change {
            policy: Some(Policy::Util),
            ..Default::default()
        };
        assert_eq!(same.apply_to(&cur).unwrap().switches, 0);

        // A rule may shadow the active policy: it keeps its own books.
        let own_shadow = Change {
            shadow: Some("util".parse().unwrap()),
            ..Default::default()
        };
        let next = own_shadow.apply_to(&cur).unwrap();
        assert_eq!(
            (next.settings.shadow.to_string(), next.switches),
            ("util".into(), 1)
        );
        let status = serde_json::to_string(&next).unwrap();
        assert_eq!(serde_json::from_str::<Status>(&status).unwrap(), next);

        // SIS_CACHE switches like the rest, and shows in the status line.
        let cache = Change {
            sis_cache: Some(true),
            ..Default::default()
        }
        .apply_to(&cur)
        .unwrap();
        assert!(cache.settings.sis_cache && cache.switches == 1);
        assert!(cache.to_string().contains("sis-cache on"), "{cache}");
        // A status saved before SIS_CACHE reads as off.
        let mut old = serde_json::to_value(&cache).unwrap();
        old.as_object_mut().unwrap().remove("sis_cache");
        assert!(
            !serde_json::from_value::<Status>(old)
                .unwrap()
                .settings
                .sis_cache
        );

        // So does SIS_CURRENT.
        let current = Change {
            sis_current: Some(true),
            ..Default::default()
        }
        .apply_to(&cur)
        .unwrap();
        assert!(current.settings.sis_current && current.switches == 1);
        assert!(current.to_string().contains("sis-current on"), "{current}");

        // What no LLC can be is refused, from the socket as from a start.
        let wide = Change {
            small_llc: Some(SMALL_LLC_MAX + 1),
            ..Default::default()
        };
        assert!(wide
            .apply_to(&cur)
            .unwrap_err()
            .contains("wider than any LLC"));
    }
}
