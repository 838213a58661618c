//! The running instance's statistics, read over its socket: once
//! (`stats`), every interval (`--monitor`, `--stats`), or as a record for
//! the A/B harness.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::stats::Metrics;

/// The metrics of the running instance.
pub fn fetch() -> Result<Metrics> {
    let mut client = crate::socket::connect(Some(5000))?;
    client.request("stats", vec![])
}

/// Prints the metrics of the running instance once.
pub fn print_once(json: bool) -> Result<()> {
    print(&fetch()?, json)
}

/// Prints the metrics of the running instance every `intv` until
/// `shutdown`, as text or as one JSON object per line.
pub fn monitor(intv: Duration, json: bool, shutdown: Arc<AtomicBool>) -> Result<()> {
    if crate::socket::path() == crate::socket::OBSERVER {
        return monitor_observer(intv, json, shutdown);
    }
    scx_utils::monitor_stats::<Metrics>(
        &[],
        intv,
        || shutdown.load(Ordering::Relaxed),
        |m| print(&m, json),
    )
}

/// The observer's records: scx_utils' loop knows only the scheduler's
/// socket. An observer that ends ends the loop.
fn monitor_observer(intv: Duration, json: bool, shutdown: Arc<AtomicBool>) -> Result<()> {
    let mut client = crate::socket::connect_to(crate::socket::OBSERVER, Some(5000))?;
    while !shutdown.load(Ordering::Relaxed) {
        print(&client.request("stats", vec![])?, json)?;
        let until = std::time::Instant::now() + intv;
        while std::time::Instant::now() < until && !shutdown.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50).min(intv));
        }
    }
    Ok(())
}

/// One record on stdout, as the tables or as one JSON line, flushed so
/// that a reader at the other end of a pipe sees it at once.
fn print(m: &Metrics, json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(m)?)?;
    } else {
        m.format(&mut out)?;
    }
    out.flush()?;
    Ok(())
}
