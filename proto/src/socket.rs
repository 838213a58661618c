//! Where the running instance's stats socket lives, and the client's way
//! in: statistics, settings and the run-time switch all go through it.

use anyhow::Result;

/// Where scx_stats serves a root scheduler's statistics.
pub const SOCKET: &str = "/var/run/scx/root/stats";

/// A client of the running instance's socket (`None`: wait as long as the
/// client library does by default).
pub fn connect(timeout_ms: Option<u64>) -> Result<scx_stats::prelude::StatsClient> {
    scx_stats::prelude::StatsClient::new()
        .connect(timeout_ms)
        .map_err(|_| {
            anyhow::anyhow!(
                "{} (its stats socket does not answer)",
                crate::sysfs::NOT_RUNNING
            )
        })
}
