//! Where the running instance's stats socket lives, and the client's way
//! in: statistics, settings and the run-time switch all go through it.

use anyhow::Result;

/// Where scx_stats serves a root scheduler's statistics.
pub const SOCKET: &str = "/var/run/scx/root/stats";

/// Where `scx_sisutil observe` serves the kernel's statistics: apart from
/// the scheduler's, which any sched_ext scheduler may take over.
pub const OBSERVER: &str = "/var/run/scx_sisutil/observe";

/// The socket of the running instance: the scheduler's while it is the
/// loaded sched_ext scheduler, else an observer's if one runs.
pub fn path() -> &'static str {
    let observing = !crate::sysfs::ours_enabled() && std::path::Path::new(OBSERVER).exists();
    if observing {
        OBSERVER
    } else {
        SOCKET
    }
}

/// A client of the running instance's socket (`None`: wait as long as the
/// client library does by default).
pub fn connect(timeout_ms: Option<u64>) -> Result<scx_stats::prelude::StatsClient> {
    connect_to(path(), timeout_ms)
}

/// A client of the socket at @path.
pub fn connect_to(path: &str, timeout_ms: Option<u64>) -> Result<scx_stats::prelude::StatsClient> {
    scx_stats::prelude::StatsClient::new()
        .set_path(path)
        .connect(timeout_ms)
        .map_err(|_| {
            anyhow::anyhow!(
                "{} (its stats socket does not answer)",
                crate::sysfs::NOT_RUNNING
            )
        })
}

/// Refuses when neither scx_sisutil's scheduler nor its observer runs:
/// what a client that only reads statistics, or resets them, asks.
pub fn require_instance() -> Result<()> {
    let observer = std::path::Path::new(OBSERVER).exists()
        && matches!(crate::sysfs::state().as_str(), "" | "disabled");
    if !crate::sysfs::ours_enabled() && !observer {
        anyhow::bail!(crate::sysfs::NOT_RUNNING);
    }
    Ok(())
}
