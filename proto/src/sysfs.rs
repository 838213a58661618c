//! What the kernel says is loaded: sched_ext's sysfs, read here and nowhere
//! else, and the checks every privileged command starts with.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// The name the kernel shows in /sys/kernel/sched_ext/root/ops.
pub const OPS_NAME: &str = "sisutil";
pub const SCHED_EXT: &str = "/sys/kernel/sched_ext";
const STATE: &str = "/sys/kernel/sched_ext/state";
const OPS: &str = "/sys/kernel/sched_ext/root/ops";

/// What a client says when there is nothing to talk to.
pub const NOT_RUNNING: &str = "no scx_sisutil instance is running";

/// Whether the kernel has sched_ext at all.
pub fn present() -> bool {
    Path::new(SCHED_EXT).exists()
}

/// sched_ext's state ("enabled", "disabled", ...), empty if unreadable.
pub fn state() -> String {
    read_trimmed(STATE)
}

/// The loaded scheduler's ops name, empty if none.
pub fn ops() -> String {
    read_trimmed(OPS)
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Whether the loaded sched_ext scheduler is scx_sisutil.
pub fn ours_enabled() -> bool {
    state() == "enabled" && ops().starts_with(OPS_NAME)
}

/// sched_ext's state, once a scheduler that is going away (after a
/// SIGKILL, say) has finished doing so.
pub fn settled_state() -> Result<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let state =
            std::fs::read_to_string(STATE).with_context(|| format!("cannot read {STATE}"))?;
        if state.trim() != "disabling" || Instant::now() >= deadline {
            return Ok(state.trim().to_string());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Refuses a caller that is not root with `refusal`, which says what
/// needed it.
pub fn require_root(refusal: &str) -> Result<()> {
    // SAFETY: geteuid() has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("{refusal}");
    }
    Ok(())
}

/// Refuses when scx_sisutil is not the loaded scheduler.
pub fn require_ours() -> Result<()> {
    if !ours_enabled() {
        bail!(NOT_RUNNING);
    }
    Ok(())
}
