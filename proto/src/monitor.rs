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
    scx_utils::monitor_stats::<Metrics>(
        &[],
        intv,
        || shutdown.load(Ordering::Relaxed),
        |m| print(&m, json),
    )
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
