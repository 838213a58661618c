//! What the host tests of both programs share: running one, the shape of
//! a refusal, a sched_ext shown to it in a mount namespace, running it as
//! nobody, and recording a check that cannot run here.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

/// Runs @bin with @args.
pub fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {bin}: {e}"))
}

/// Says that @test could not run here and why, and records it in the file
/// that SCX_SISUTIL_SKIPS names, for the test command's summary.
pub fn skip(test: &str, why: &str) {
    use std::io::Write as _;
    eprintln!("skipped: {test}: {why}");
    if let Some(path) = std::env::var_os("SCX_SISUTIL_SKIPS") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("cannot open the skip record");
        writeln!(f, "cli {test}: {why}").expect("cannot write the skip record");
    }
}

/// Runs @bin in a mount namespace of its own whose /sys/kernel is
/// empty but, with @loaded_state, for sched_ext's state file: the kernel
/// without sched_ext (None), or with sched_ext and that state, whatever
/// the host's kernel has. None when the namespace cannot be made (it takes
/// root and unshare).
pub fn with_sched_ext(bin: &str, loaded_state: Option<&str>, args: &[&str]) -> Option<Output> {
    let setup = match loaded_state {
        Some(state) => {
            format!("mkdir /sys/kernel/sched_ext && echo {state} >/sys/kernel/sched_ext/state && ")
        }
        None => String::new(),
    };
    let script = format!("mount -t tmpfs none /sys/kernel && {setup}exec \"$0\" \"$@\"");
    let out = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
            bin,
        ])
        .args(args)
        .output()
        .ok()?;
    // unshare or mount refused: the namespace was never made.
    let err = String::from_utf8_lossy(&out.stderr);
    (!err.starts_with("unshare:") && !err.starts_with("mount:")).then_some(out)
}

pub fn is_root() -> bool {
    // SAFETY: geteuid() has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Exits with `code` and says one line on stderr, from program @name, that
/// contains `pattern`.
pub fn refuses(name: &str, out: &Output, code: i32, pattern: &str, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: exit status, stderr {err:?}"
    );
    assert_eq!(
        err.lines().count(),
        1,
        "{what}: one line wanted, got {err:?}"
    );
    assert!(err.starts_with(&format!("{name}: ")), "{what}: {err:?}");
    assert!(err.contains(pattern), "{what}: {err:?} lacks {pattern:?}");
    assert!(!err.contains("panicked"), "{what}: {err:?}");
}

pub const NOBODY: u32 = 65534;

/// Runs `bin` as nobody. The clone may sit where nobody cannot reach it
/// (under /root, a 0750 home), so the binary is first copied into a
/// private directory in /tmp that every user may enter.
pub fn as_nobody_from(bin: &Path, args: &[&str]) -> Output {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!(
        "scx_sisutil-nobody-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).expect("cannot create the staging directory");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
        .expect("cannot open the staging directory to other users");
    let staged = dir.join(bin.file_name().expect("a program's path names a file"));
    std::fs::copy(bin, &staged).expect("cannot stage the program for nobody");
    // A test running beside this one may fork while the copy is still open
    // for writing; its child holds the file open until it execs, and running
    // the copy meanwhile fails with ETXTBSY. That passes: try again.
    let mut tries = 0;
    let out = loop {
        match Command::new(&staged)
            .args(args)
            .current_dir("/")
            .uid(NOBODY)
            .gid(NOBODY)
            .output()
        {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r => break r.expect("cannot run the program as nobody"),
        }
    };
    std::fs::remove_dir_all(&dir).expect("cannot remove the staging directory");
    out
}
