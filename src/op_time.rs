//! What the BPF side costs: the instructions the verifier walked to accept
//! each program (it grows with the topology's size), and the kernel's
//! run-time statistics of each of the scheduler's programs (calls and
//! nanoseconds spent), which it keeps while BPF statistics are enabled
//! (`--bpf-stats`, or the sysctl kernel.bpf_stats_enabled). The observer's
//! probes are read the same way.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use anyhow::{bail, Result};
use libbpf_rs::{Object, OpenObject};
use serde::{Deserialize, Serialize};

use crate::bpf_skel::BpfSkel;

/// Calls and time of one program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpTime {
    pub calls: u64,
    pub ns: u64,
}

impl OpTime {
    pub fn since(&self, base: &OpTime) -> OpTime {
        OpTime {
            calls: self.calls.saturating_sub(base.calls),
            ns: self.ns.saturating_sub(base.ns),
        }
    }
}

/// The ops worth watching, in the order a task meets them.
pub const OPS: [&str; 6] = [
    "select_cpu",
    "enqueue",
    "dispatch",
    "running",
    "tick",
    "stopping",
];

fn prog_fd<'a>(skel: &'a BpfSkel, op: &str) -> Option<BorrowedFd<'a>> {
    let p = &skel.progs;
    Some(match op {
        "select_cpu" => p.sisu_select_cpu.as_fd(),
        "enqueue" => p.sisu_enqueue.as_fd(),
        "dispatch" => p.sisu_dispatch.as_fd(),
        "running" => p.sisu_running.as_fd(),
        "tick" => p.sisu_tick.as_fd(),
        "stopping" => p.sisu_stopping.as_fd(),
        _ => return None,
    })
}

fn prog_info(fd: BorrowedFd) -> Option<libbpf_rs::libbpf_sys::bpf_prog_info> {
    let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of_val(&info) as u32;
    // SAFETY: info is a bpf_prog_info of the size given in len; the kernel
    // fills in at most that much.
    let ret = unsafe {
        libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len)
    };
    (ret == 0).then_some(info)
}

/// The kernel's calls and run time of the program @fd (zero while BPF
/// statistics are off).
pub fn read(fd: BorrowedFd) -> Option<OpTime> {
    prog_info(fd).map(|info| OpTime {
        calls: info.run_cnt,
        ns: info.run_time_ns,
    })
}

/// The kernel's BPF_LOG_STATS: the verifier's log holds only its totals
/// ("processed N insns ..."), which libbpf prints at debug level, and when a
/// program is refused for size (E2BIG), how far it got.
const LOG_STATS: u32 = 4;

/// Asks the verifier for its totals on every program (for --verbose).
pub fn log_verifier_stats(obj: &mut OpenObject) {
    for mut prog in obj.progs_mut() {
        prog.set_log_level(LOG_STATS);
    }
}

/// Instructions the verifier processed for each loaded program, largest
/// first: what sets the load time, and what hits the verifier's limit of
/// a million first as the topology grows.
pub fn verified_insns(obj: &Object) -> Vec<(String, u32)> {
    let mut v: Vec<(String, u32)> = obj
        .progs()
        .filter_map(|p| {
            let info = prog_info(p.as_fd())?;
            let name = p.name().to_string_lossy();
            Some((
                name.trim_start_matches("sisu_").to_string(),
                info.verified_insns,
            ))
        })
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

/// One line: the total, then each program.
pub fn describe_verified(v: &[(String, u32)]) -> String {
    let total: u64 = v.iter().map(|(_, n)| u64::from(*n)).sum();
    let each: Vec<String> = v.iter().map(|(name, n)| format!("{name} {n}")).collect();
    format!("{total} instructions ({})", each.join(", "))
}

/// Cumulative run time of every op in OPS.
pub fn sample(skel: &BpfSkel) -> Vec<OpTime> {
    OPS.iter()
        .map(|op| prog_fd(skel, op).and_then(read).unwrap_or_default())
        .collect()
}

/// Keeps the kernel's BPF run-time statistics on while held; the kernel
/// turns them off by itself when the scheduler's process ends, however it
/// ends, so they cannot be left on by accident.
pub struct Enabled(#[allow(dead_code)] OwnedFd);

pub fn enable() -> Result<Enabled> {
    // SAFETY: bpf_enable_stats() takes an enum value and returns an fd
    // or a negative error.
    let fd = unsafe {
        libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME)
    };
    if fd < 0 {
        bail!(
            "cannot enable BPF run-time statistics: {}",
            std::io::Error::from_raw_os_error(-fd)
        );
    }
    // SAFETY: fd was just returned by the kernel and is owned by no one else.
    Ok(Enabled(unsafe { OwnedFd::from_raw_fd(fd) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn difference_never_goes_negative() {
        let a = OpTime {
            calls: 10,
            ns: 1000,
        };
        let b = OpTime { calls: 4, ns: 400 };
        assert_eq!(a.since(&b), OpTime { calls: 6, ns: 600 });
        assert_eq!(b.since(&a), OpTime::default());
    }

    #[test]
    fn verified_line_sums_and_names_every_program() {
        let v = vec![("select_cpu".to_string(), 900), ("tick".to_string(), 100)];
        assert_eq!(
            describe_verified(&v),
            "1000 instructions (select_cpu 900, tick 100)"
        );
    }
}
