//! Bad input to the scheduler on the host: every refusal is one line on
//! stderr and a non-zero exit, never a panic, and leaves nothing behind.
//! What the kernel's sched_ext says is shown to the program in a mount
//! namespace of its own (a kernel without sched_ext, or one with nothing
//! loaded), so those checks run on any host as root; the VM tests cover
//! the rest. A check that cannot run here says why and is counted as
//! skipped (scripts/test.sh lists them in its summary). The lab's own are
//! in lab/tests/cli.rs.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::{as_nobody_from, is_root, skip};

const BIN: &str = env!("CARGO_BIN_EXE_scx_sisutil");

fn run(args: &[&str]) -> Output {
    support::run(BIN, args)
}

fn refuses(out: &Output, code: i32, pattern: &str, what: &str) {
    support::refuses("scx_sisutil", out, code, pattern, what)
}

fn with_sched_ext(loaded_state: Option<&str>, args: &[&str]) -> Option<Output> {
    support::with_sched_ext(BIN, loaded_state, args)
}

#[test]
fn bad_options_are_one_line_usage_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["--policy", "fast"], "--policy"),
        (&["--interval-ms", "0"], "--interval-ms"),
        (&["--interval-ms", "99999999999"], "--interval-ms"),
        (&["--interval-ms", "-1"], "-1"),
        (&["--interval-ms", "often"], "--interval-ms"),
        (&["--small-llc", "5000"], "--small-llc"),
        (&["--small-llc", "-1"], "-1"),
        (&["--slice-us", "0"], "--slice-us"),
        (&["--slice-us", "99999999999"], "--slice-us"),
        (&["--shadow", "fast"], "--shadow"),
        (&["--shadow", "builtin"], "builtin"),
        (&["--shadow", "prop,builtin"], "builtin"),
        (&["--stats", "0"], "--stats"),
        (&["--monitor", "-1"], "-1"),
        (&["--monitor", "nan"], "--monitor"),
        (&["--no-such-option"], "--no-such-option"),
        (&["set", "policy", "fast"], "fast"),
        (&["set", "policy"], "POLICY"),
        (&["set", "shadow", "builtin"], "builtin"),
        (&["set", "small-llc", "99999"], "99999"),
        (&["set", "colour", "red"], "colour"),
        (&["observe", "--shadow", "auto"], "auto"),
        (&["observe", "--stats", "0"], "--stats"),
    ];
    for (args, pattern) in cases {
        refuses(&run(args), 2, pattern, &args.join(" "));
    }
}

#[test]
fn inconsistent_settings_are_refused() {
    let cases: &[(&[&str], &str)] = &[
        (&["--shadow", "prop", "--no-scan-stats"], "--no-scan-stats"),
        (&["--shadow", "all", "--no-scan-stats"], "--no-scan-stats"),
    ];
    for (args, pattern) in cases {
        refuses(&run(args), 1, pattern, &args.join(" "));
    }
}

#[test]
fn help_and_version_succeed() {
    for args in [&["--help"][..], &["--version"], &["set", "--help"]] {
        let out = run(args);
        assert!(out.status.success(), "{args:?}");
        assert!(!out.stdout.is_empty());
    }
    let help = String::from_utf8_lossy(&run(&["--help"]).stdout).into_owned();
    for word in ["util", "prop", "full", "none", "builtin", "--interval-ms"] {
        assert!(help.contains(word), "--help lacks {word}");
    }
    assert!(
        !help.contains("__watch-socket"),
        "the internal command stays hidden"
    );
}

#[test]
fn clients_say_when_nothing_runs() {
    if !is_root() {
        skip(
            "clients_say_when_nothing_runs",
            "showing the program a sched_ext with nothing loaded takes root",
        );
        return;
    }
    let args: [&[&str]; 5] = [
        &["stats"][..],
        &["status"],
        &["--monitor", "1"],
        &["reset-stats"],
        &["set", "policy", "prop"],
    ];
    // Nothing loaded, or another scheduler (enabled, but not ours).
    for state in ["disabled", "enabled"] {
        for a in args {
            let Some(out) = with_sched_ext(Some(state), a) else {
                skip(
                    "clients_say_when_nothing_runs",
                    "unshare cannot make a mount namespace here",
                );
                return;
            };
            refuses(
                &out,
                1,
                "no scx_sisutil instance is running",
                &format!("{} with sched_ext {state}", a.join(" ")),
            );
        }
    }
}

fn as_nobody(args: &[&str]) -> Output {
    as_nobody_from(Path::new(BIN), args)
}

#[test]
fn non_root_callers_are_refused() {
    if !is_root() {
        refuses(
            &run(&["--policy", "util"]),
            1,
            "must run as root",
            "scheduler",
        );
        return;
    }
    refuses(
        &as_nobody(&["--policy", "util"]),
        1,
        "must run as root",
        "scheduler as nobody",
    );
    refuses(
        &as_nobody(&["set", "policy", "prop"]),
        1,
        "only root",
        "set as nobody",
    );
    refuses(
        &as_nobody(&["observe"]),
        1,
        "must run as root",
        "observe as nobody",
    );
}

/// A clone under a directory other users cannot enter (a 0750 home, /root)
/// with a space in its path: the refusal of a non-root caller still shows.
#[test]
fn non_root_checks_hold_wherever_the_clone_lives() {
    use std::os::unix::fs::PermissionsExt;
    if !is_root() {
        skip(
            "non_root_checks_hold_wherever_the_clone_lives",
            "switching to nobody takes root",
        );
        return;
    }
    let home = std::env::temp_dir().join(format!("scx_sisutil-home-{}", std::process::id()));
    let clone = home.join("a clone").join("target");
    std::fs::create_dir_all(&clone).expect("cannot create the private home");
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o750))
        .expect("cannot close the private home");
    let bin = clone.join("scx_sisutil");
    std::fs::copy(BIN, &bin).expect("cannot copy scx_sisutil into the private home");
    let out = as_nobody_from(&bin, &["set", "policy", "prop"]);
    std::fs::remove_dir_all(&home).expect("cannot remove the private home");
    refuses(&out, 1, "only root", "set as nobody from a private home");
}

#[test]
fn a_kernel_without_sched_ext_is_named() {
    if !is_root() {
        skip(
            "a_kernel_without_sched_ext_is_named",
            "showing the program a kernel without sched_ext takes root",
        );
        return;
    }
    let Some(out) = with_sched_ext(None, &["--policy", "util"]) else {
        skip(
            "a_kernel_without_sched_ext_is_named",
            "unshare cannot make a mount namespace here",
        );
        return;
    };
    refuses(&out, 1, "this kernel has no sched_ext", "scheduler");
    assert!(
        !Path::new("/var/run/scx/root/stats").exists(),
        "a refused start leaves no socket behind"
    );
}

#[test]
fn version_names_the_build() {
    let out = run(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let want = format!("scx_sisutil {}", env!("CARGO_PKG_VERSION"));
    assert!(text.starts_with(&want), "{text:?}");
    assert!(text.contains("-linux-"), "the target: {text:?}");
    assert_eq!(text.lines().count(), 1, "{text:?}");
}

#[test]
fn help_stats_describes_every_statistic() {
    let out = run(&["--help-stats"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for field in [
        "wakeups",
        "queued_wakeups",
        "idle_found",
        "nr_idle_scan",
        "util_pct",
    ] {
        assert!(text.contains(field), "{field} undescribed in {text}");
    }
}

/// The shipped unit passes systemd's own check, starts only where sched_ext
/// exists, restarts on failure and stops with SIGINT.
#[test]
fn the_service_unit_verifies() {
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/services/scx_sisutil.service"
    ))
    .expect("services/scx_sisutil.service");
    for line in [
        "ConditionPathIsDirectory=/sys/kernel/sched_ext",
        "Restart=on-failure",
        "KillSignal=SIGINT",
        "ExecStart=/usr/local/bin/scx_sisutil $SISUTIL_FLAGS",
    ] {
        assert!(unit.lines().any(|l| l == line), "the unit lacks {line}");
    }
    // systemd-analyze wants the binary it names to exist: point it at the
    // one under test, as scripts/install.sh does with its prefix.
    let dir = std::env::temp_dir().join(format!("scx_sisutil-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("cannot create a folder for the unit");
    let path = dir.join("scx_sisutil.service");
    std::fs::write(&path, unit.replace("/usr/local/bin/scx_sisutil", BIN))
        .expect("cannot write the unit");
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .expect("systemd-analyze is missing (scripts/setup.sh installs systemd)");
    std::fs::remove_dir_all(&dir).expect("cannot remove the unit's folder");
    let err = String::from_utf8_lossy(&out.stderr);
    let ours: Vec<&str> = err.lines().filter(|l| l.contains("scx_sisutil")).collect();
    assert!(out.status.success() && ours.is_empty(), "{err}");
}
