//! What the scheduler and the lab share: the policies' names, the CPU
//! topology as the scheduler reads it, the statistics' schema and its
//! tables, the run-time switch's requests, the trace's rows, and the
//! client side of the running instance's socket and of sched_ext's sysfs.

/// The commit the build came from, as "g<sha>" ("-dirty" if tracked files
/// differed from it), empty when it was not built from a git checkout.
pub const BUILD_COMMIT: &str = env!("SISUTIL_GIT_VERSION");

pub mod console;
pub mod control;
pub mod intf;
pub mod monitor;
pub mod policy;
pub mod socket;
pub mod stats;
pub mod sysfs;
pub mod tables;
pub mod topology;
pub mod trace;
pub mod waits;
