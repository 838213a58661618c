//! The stats socket, which also carries the run-time switch: scx_stats'
//! wire protocol (one JSON request per line, `{"req": "stats" |
//! "stats_meta" | "control", "args": {...}}`; one JSON reply per line,
//! `{"errno": N, "args": {"resp": ...}}`), served within bounds. A
//! "control" request carries a change of settings (sisutil_proto's
//! control) and is answered with the settings that result.
//!
//! Not the scx_stats crate's server: it starts a thread per connection
//! without limit and reads each request with an unbounded `read_line`, so
//! clients that send without a newline grow the scheduler until the OOM
//! killer ends it, and it has no setting for either. Keeping the protocol
//! keeps its clients working (`--monitor`, `stats`, `set`, the harness, the
//! scx tools that read the socket). The bounds:
//! - at most `MAX_CLIENTS` connections; a new one beyond that evicts the
//!   connection that has held a half-sent request longest, else the one
//!   silent longest, so that a crowd of hostile clients cannot lock out
//!   `set policy` or `stats`;
//! - a request is at most `MAX_REQUEST` bytes and must arrive whole within
//!   `PARTIAL_TIMEOUT` of its first byte; a connection may stay silent
//!   between requests for `IDLE_TIMEOUT`; a reply must be taken within
//!   `WRITE_TIMEOUT`. A client over a bound gets an error line (if it still
//!   reads) and is dropped.
//!
//! So memory and threads stay flat whatever the clients do: per connection
//! one thread with a small stack and one request buffer.
//!
//! Requests reach the scheduler's loop as jobs, each with its own reply
//! channel: a slow client holds up only its own connection. The loop
//! sleeps between intervals parked, and a job unparks it: a request waits
//! for the loop's current work, not for the rest of its sleep.

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossbeam::channel::{bounded, unbounded, Receiver, Sender};
use log::warn;
use scx_stats::prelude::*;
use serde_json::{json, Value};

use crate::stats::Metrics;
use crate::timeliness::RequestTimes;
use sisutil_proto::control::{self, Change, Status};

/// A request from the socket's threads for the scheduler's loop, with
/// the channel its own kind of answer goes back on.
pub enum Job {
    Stats(Sender<Metrics>),
    Control(Change, Sender<Result<Status, String>>),
}

pub const MAX_CLIENTS: usize = 32;
pub const MAX_REQUEST: usize = 64 * 1024;
pub const PARTIAL_TIMEOUT: Duration = Duration::from_secs(2);
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a request may wait for the loop (which each request wakes).
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a connection's thread wakes to check its deadlines.
const TICK: Duration = Duration::from_millis(250);
const STACK: usize = 256 * 1024;

/// What the acceptor knows of a connection, to choose one to evict.
struct Slot {
    stream: UnixStream,
    /// Since when it has held part of a request, if it does.
    partial_since: Option<Instant>,
    /// When it last finished a request (or connected).
    quiet_since: Instant,
}

type Slots = Arc<Mutex<BTreeMap<u64, Slot>>>;

pub struct Server {
    jobs: Receiver<Job>,
    path: std::path::PathBuf,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Binds `path` (root only) and serves it on threads of its own,
    /// which record every request's time from arrival to reply in `times`.
    /// The calling thread is the loop that takes the jobs: each job wakes it.
    pub fn launch(path: &Path, metas: Vec<StatsMeta>, times: RequestTimes) -> Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {dir:?}"))?;
        }
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("cannot remove the stale {path:?}"))
            }
            _ => {}
        }
        let listener = UnixListener::bind(path)
            .with_context(|| format!("cannot create the socket {path:?}"))?;
        restrict(path);
        let meta: BTreeMap<String, StatsMeta> =
            metas.into_iter().map(|m| (m.name.clone(), m)).collect();
        let meta =
            Arc::new(serde_json::to_value(meta).context("cannot encode the stats metadata")?);
        let (tx, rx) = unbounded();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let waker = std::thread::current();
        std::thread::Builder::new()
            .name("stats-accept".into())
            .stack_size(STACK)
            .spawn(move || accept(listener, tx, waker, meta, flag, times))
            .context("cannot start the stats server")?;
        Ok(Self {
            jobs: rx,
            path: path.to_path_buf(),
            stop,
        })
    }

    /// The requests waiting for the loop.
    pub fn jobs(&self) -> &Receiver<Job> {
        &self.jobs
    }
}

/// A restart (CPU hotplug) binds the socket anew: the old acceptor must
/// let go of it first. A connection wakes it to see the flag.
impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = UnixStream::connect(&self.path);
    }
}

/// Only root may read stats or switch policies.
fn restrict(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
        warn!("cannot restrict {path:?} to root: {e}");
    }
}

fn accept(
    listener: UnixListener,
    jobs: Sender<Job>,
    waker: Thread,
    meta: Arc<Value>,
    stop: Arc<AtomicBool>,
    times: RequestTimes,
) {
    let slots: Slots = Arc::new(Mutex::new(BTreeMap::new()));
    for (id, stream) in (0u64..).zip(listener.incoming()) {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let Ok(watch) = stream.try_clone() else {
            continue;
        };
        if let Ok(mut s) = slots.lock() {
            if s.len() >= MAX_CLIENTS {
                evict(&mut s);
            }
            s.insert(
                id,
                Slot {
                    stream: watch,
                    partial_since: None,
                    quiet_since: Instant::now(),
                },
            );
        }
        let conn = Conn {
            id,
            stream,
            slots: slots.clone(),
            jobs: jobs.clone(),
            waker: waker.clone(),
            meta: meta.clone(),
            times: times.clone(),
        };
        let spawned = std::thread::Builder::new()
            .name("stats-conn".into())
            .stack_size(STACK)
            .spawn(move || conn.serve());
        if spawned.is_err() {
            if let Ok(mut s) = slots.lock() {
                s.remove(&id);
            }
        }
    }
}

/// Drops the connection that has held a half-sent request longest, else
/// the one silent longest.
fn evict(slots: &mut BTreeMap<u64, Slot>) {
    let victim = slots
        .iter()
        .filter_map(|(id, s)| s.partial_since.map(|t| (t, *id)))
        .min()
        .or_else(|| slots.iter().map(|(id, s)| (s.quiet_since, *id)).min())
        .map(|(_, id)| id);
    if let Some(s) = victim.and_then(|id| slots.remove(&id)) {
        let mut stream = s.stream;
        // Never block the acceptor on a client that does not read.
        let _ = stream.set_nonblocking(true);
        let _ = stream.write_all(&error_line(libc::EBUSY, "too many connections: dropped"));
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }
}

fn error_line(errno: i32, why: &str) -> Vec<u8> {
    reply_line(errno, json!(why))
}

fn reply_line(errno: i32, resp: Value) -> Vec<u8> {
    let mut line = json!({ "errno": errno, "args": { "resp": resp } }).to_string();
    line.push('\n');
    line.into_bytes()
}

struct Conn {
    id: u64,
    stream: UnixStream,
    slots: Slots,
    jobs: Sender<Job>,
    /// The loop that takes the jobs, woken for each.
    waker: Thread,
    meta: Arc<Value>,
    times: RequestTimes,
}

impl Conn {
    fn serve(mut self) {
        if self.stream.set_read_timeout(Some(TICK)).is_ok()
            && self.stream.set_write_timeout(Some(WRITE_TIMEOUT)).is_ok()
        {
            if let Err(why) = self.run() {
                let _ = self.stream.write_all(&error_line(libc::EINVAL, &why));
            }
        }
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        if let Ok(mut s) = self.slots.lock() {
            s.remove(&self.id);
        }
    }

    /// Reads and answers requests until the client leaves (Ok) or breaks a
    /// bound (Err, with what to tell it).
    fn run(&mut self) -> Result<(), String> {
        let mut line: Vec<u8> = Vec::new();
        let mut buf = [0u8; 4096];
        let mut quiet_since = Instant::now();
        let mut partial_since: Option<Instant> = None;
        loop {
            if let Some(t) = partial_since {
                if t.elapsed() > PARTIAL_TIMEOUT {
                    return Err(format!(
                        "request not complete within {} s: dropped",
                        PARTIAL_TIMEOUT.as_secs()
                    ));
                }
            } else if quiet_since.elapsed() > IDLE_TIMEOUT {
                return Err(format!("silent for {} s: dropped", IDLE_TIMEOUT.as_secs()));
            }
            let n = match self.stream.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    continue
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return Ok(()),
            };
            // A request arrives with the read that completes its line: the
            // time its thread took to wake for it is not counted.
            let arrived = Instant::now();
            let mut rest = &buf[..n];
            while let Some(end) = rest.iter().position(|&b| b == b'\n') {
                if line.len() + end > MAX_REQUEST {
                    return Err(too_long());
                }
                line.extend_from_slice(&rest[..end]);
                rest = &rest[end + 1..];
                let reply = self.answer(&line);
                line.clear();
                if self.stream.write_all(&reply).is_err() {
                    return Ok(());
                }
                self.times.record(arrived.elapsed());
                partial_since = None;
                quiet_since = Instant::now();
                self.note(None, quiet_since);
            }
            if line.len() + rest.len() > MAX_REQUEST {
                return Err(too_long());
            }
            if !rest.is_empty() && line.is_empty() && partial_since.is_none() {
                let now = Instant::now();
                partial_since = Some(now);
                self.note(Some(now), quiet_since);
            }
            line.extend_from_slice(rest);
        }
    }

    /// Tells the acceptor this connection's state, for eviction.
    fn note(&self, partial_since: Option<Instant>, quiet_since: Instant) {
        if let Ok(mut s) = self.slots.lock() {
            if let Some(slot) = s.get_mut(&self.id) {
                slot.partial_since = partial_since;
                slot.quiet_since = quiet_since;
            }
        }
    }

    fn answer(&self, line: &[u8]) -> Vec<u8> {
        match self.handle(line) {
            Ok(resp) => reply_line(0, resp),
            Err((errno, why)) => error_line(errno, &why),
        }
    }

    fn handle(&self, line: &[u8]) -> Result<Value, (i32, String)> {
        let einval = |why: String| (libc::EINVAL, why);
        let req: StatsRequest =
            serde_json::from_slice(line).map_err(|e| einval(format!("bad request: {e}")))?;
        match req.req.as_str() {
            "stats_meta" => Ok((*self.meta).clone()),
            "stats" => match req.args.get("target").map_or("top", String::as_str) {
                "top" => {
                    let m = self.ask(Job::Stats)?;
                    serde_json::to_value(m).map_err(|e| einval(e.to_string()))
                }
                other => Err(einval(format!("unknown stat target {other:?}"))),
            },
            control::REQUEST => {
                let change = Change::from_args(&req.args).map_err(|e| einval(e.to_string()))?;
                let status = self.ask(|tx| Job::Control(change, tx))?.map_err(einval)?;
                serde_json::to_value(status).map_err(|e| einval(e.to_string()))
            }
            other => Err(einval(format!("unknown command {other:?}"))),
        }
    }

    /// Hands the job @job makes to the scheduler's loop and waits for its
    /// answer.
    fn ask<T>(&self, job: impl FnOnce(Sender<T>) -> Job) -> Result<T, (i32, String)> {
        let (tx, rx) = bounded(1);
        let gone = || (libc::ESHUTDOWN, "the scheduler is stopping".to_string());
        self.jobs.send(job(tx)).map_err(|_| gone())?;
        self.waker.unpark();
        rx.recv_timeout(REPLY_TIMEOUT).map_err(|_| gone())
    }
}

fn too_long() -> String {
    format!("request longer than {} KiB: dropped", MAX_REQUEST / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{LlcMetrics, OpMetrics};
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    /// A server on a private path, answered by a stand-in for the loop.
    fn start(tag: &str) -> (Server, std::path::PathBuf) {
        start_with(tag, Metrics::default())
    }

    /// The same, serving `metrics` as the statistics.
    fn start_with(tag: &str, metrics: Metrics) -> (Server, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("sisu-sock-{}-{tag}", std::process::id()));
        let path = dir.join("stats");
        let server = Server::launch(&path, crate::stats::metas(), RequestTimes::default()).unwrap();
        let jobs = server.jobs().clone();
        std::thread::spawn(move || {
            for job in jobs.iter() {
                match job {
                    Job::Stats(tx) => {
                        let _ = tx.send(metrics.clone());
                    }
                    Job::Control(c, tx) => {
                        let _ = tx.send(c.policy.ok_or("nothing to change".into()).map(|p| {
                            control::Status {
                                settings: control::Settings {
                                    policy: p,
                                    ..Default::default()
                                },
                                switches: 1,
                                ..Default::default()
                            }
                        }));
                    }
                }
            }
        });
        (server, path)
    }

    fn client(path: &Path) -> StatsClient {
        StatsClient::new()
            .set_path(path)
            .connect(Some(2000))
            .unwrap()
    }

    #[test]
    fn speaks_the_scx_stats_protocol() {
        let (_server, path) = start("proto");
        let mut c = client(&path);
        let m: crate::stats::Metrics = c.request("stats", vec![]).unwrap();
        assert_eq!(m.wakeups, 0);
        let meta: BTreeMap<String, Value> = c.request("stats_meta", vec![]).unwrap();
        assert!(meta.contains_key("Metrics") && meta.contains_key("LlcMetrics"));
        let change = Change {
            policy: Some(crate::policy::Policy::Prop),
            ..Default::default()
        };
        let st: control::Status = c.request(control::REQUEST, change.to_args()).unwrap();
        assert_eq!(st.settings.policy, crate::policy::Policy::Prop);
        let refused = c.request::<Value>(control::REQUEST, Change::default().to_args());
        let err = refused.unwrap_err();
        assert!(err.downcast_ref::<StatsErrno>().is_some(), "{err:#}");
        assert!(c
            .request::<Value>("stats", vec![("target".into(), "x".into())])
            .is_err());
    }

    /// A loop parked for far longer than a request should wait: the
    /// request wakes it, as it wakes the scheduler's loop between
    /// intervals.
    #[test]
    fn a_request_wakes_the_parked_loop() {
        let dir = std::env::temp_dir().join(format!("sisu-sock-{}-park", std::process::id()));
        let path = dir.join("stats");
        let (ready_tx, ready_rx) = bounded(1);
        let at = path.clone();
        std::thread::spawn(move || {
            let server =
                Server::launch(&at, crate::stats::metas(), RequestTimes::default()).unwrap();
            ready_tx.send(()).unwrap();
            loop {
                std::thread::park_timeout(Duration::from_secs(60));
                while let Ok(job) = server.jobs().try_recv() {
                    if let Job::Stats(tx) = job {
                        let _ = tx.send(Metrics::default());
                    }
                }
            }
        });
        ready_rx.recv().unwrap();
        // Let the loop park before the request comes.
        std::thread::sleep(Duration::from_millis(200));
        let t = Instant::now();
        let m: crate::stats::Metrics = client(&path).request("stats", vec![]).unwrap();
        assert_eq!(m.wakeups, 0);
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    }

    /// Sends `bytes`, then reads what the server says until it closes.
    fn exchange(path: &Path, bytes: &[u8]) -> (String, Duration) {
        let mut s = UnixStream::connect(path).unwrap();
        let t = Instant::now();
        let _ = s.write_all(bytes);
        let mut out = String::new();
        let _ = BufReader::new(s).read_line(&mut out);
        (out, t.elapsed())
    }

    #[test]
    fn a_request_without_end_is_dropped() {
        let (_server, path) = start("long");
        let (out, _) = exchange(&path, &vec![b'x'; MAX_REQUEST + 4096]);
        assert!(out.contains("longer than 64 KiB"), "{out}");
        // Half a request, then silence: dropped after PARTIAL_TIMEOUT.
        let (out, took) = exchange(&path, b"{\"req\":\"sta");
        assert!(out.contains("not complete within"), "{out}");
        assert!(
            took >= PARTIAL_TIMEOUT && took < PARTIAL_TIMEOUT * 3,
            "{took:?}"
        );
        // Garbage and wrong types get an error line and the connection stays.
        let mut s = UnixStream::connect(&path).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        for bad in [
            "garbage",
            "{\"req\":1}",
            "{\"req\":\"stats\",\"args\":{\"target\":7}}",
        ] {
            s.write_all(format!("{bad}\n").as_bytes()).unwrap();
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["errno"], libc::EINVAL, "{bad}: {line}");
        }
    }

    #[test]
    fn a_crowd_cannot_lock_out_a_client() {
        let (_server, path) = start("crowd");
        // Every slot taken by a client holding half a request.
        let crowd: Vec<UnixStream> = (0..MAX_CLIENTS + 8)
            .map(|_| {
                let mut s = UnixStream::connect(&path).unwrap();
                s.write_all(b"{\"req\":").unwrap();
                s
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let mut c = client(&path);
        let m: crate::stats::Metrics = c.request("stats", vec![]).unwrap();
        assert_eq!(m.wakeups, 0);
        drop(crowd);
    }

    /// The scx project's OpenMetrics exporter, as its crate ships it.
    fn exporter_script() -> std::path::PathBuf {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .args([
                "metadata",
                "--format-version",
                "1",
                "--offline",
                "--filter-platform",
                &format!("{}-unknown-linux-gnu", std::env::consts::ARCH),
                "--manifest-path",
            ])
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
            .output()
            .unwrap();
        let meta: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "cargo metadata: {e}: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let manifest = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "scx_stats")
            .and_then(|p| p["manifest_path"].as_str())
            .expect("scx_stats is a dependency")
            .to_string();
        Path::new(&manifest)
            .with_file_name("scripts")
            .join("scxstats_to_openmetrics.py")
    }

    #[test]
    fn the_openmetrics_exporter_sees_llcs_ops_and_depths() {
        let mut m = Metrics {
            wakeups: 1234,
            scans: 100,
            idle_found: 90,
            idle_missed: 10,
            examined: vec![5, 60, 35],
            limit: vec![0, 0, 100],
            shadow_limit: vec![0, 0, 0],
            ..Default::default()
        };
        for i in 0..2u32 {
            let l = LlcMetrics {
                index: i as u64,
                cpus: format!("{}-{}", 4 * i, 4 * i + 3),
                width: 4,
                util_pct: 12.5 + i as f64,
                nr_idle_scan: 4 - i as u64,
                scanned: 50,
                found_pct: 80.0 + 10.0 * i as f64,
                ..Default::default()
            };
            m.llcs.insert(i, l);
        }
        let op = OpMetrics {
            calls: 4,
            ns: 1000,
            ns_per_call: 250.0,
        };
        m.ops.insert("select_cpu".into(), op);
        let rule = crate::stats::RuleMetrics {
            judged: 100,
            would_find_pct: 75.0,
            limit_hist: vec![0, 1, 2],
            ..Default::default()
        };
        m.rules.insert("prop".into(), rule);
        let pair = crate::stats::PairMetrics {
            first_only: 7,
            ..Default::default()
        };
        m.pairs.insert("active/prop".into(), pair);
        let (_server, path) = start_with("om", m.with_depths());

        let script = exporter_script();
        assert!(script.exists(), "{} is missing", script.display());
        // Debian's Python, where setup.sh installs prometheus_client.
        let mut child = Command::new("/usr/bin/python3")
            .arg(&script)
            .arg("-p")
            .arg(&path)
            .args(["-i", "0.2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 runs (scripts/setup.sh installs it)");
        let want = [
            "wakeups 1234.0",
            "scans 100.0",
            "llc_util_pct{llc=\"0\"} 12.5",
            "llc_util_pct{llc=\"1\"} 13.5",
            "llc_nr_idle_scan{llc=\"1\"} 3.0",
            "llc_found_pct{llc=\"1\"} 90.0",
            "llc_scanned{llc=\"0\"} 50.0",
            "op_ns_per_call{op=\"select_cpu\"} 250.0",
            "depth_examined{cpus=\"1\"} 60.0",
            "depth_limit{cpus=\"2\"} 100.0",
            "rule_would_find_pct{rule=\"prop\"} 75.0",
            "rule_judged{rule=\"prop\"} 100.0",
            "pair_first_only{pair=\"active/prop\"} 7.0",
        ];
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !want.iter().all(|w| seen.iter().any(|l: &String| l == w)) {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => seen.push(line),
                Err(_) => break,
            }
        }
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        let missing: Vec<_> = want
            .iter()
            .filter(|w| !seen.iter().any(|l| l == *w))
            .collect();
        assert!(
            missing.is_empty(),
            "missing {missing:?}; exporter said {seen:?}, stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !seen.iter().any(|l| l.starts_with("examined")
                || l.starts_with("llc_cpus")
                || l.starts_with("rule_limit{")
                || l.starts_with("rule_examined{")),
            "lists and strings are skipped: {seen:?}"
        );
    }
}
