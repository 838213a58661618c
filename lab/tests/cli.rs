//! Bad input to the lab on the host: every refusal is one line on stderr
//! and a non-zero exit, never a panic. Its A/B harness needs root and a
//! kernel with sched_ext; the VM tests run it there.

#[path = "../../tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::Output;

use support::{as_nobody_from, is_root, skip};

const BIN: &str = env!("CARGO_BIN_EXE_sisutil-lab");

fn run(args: &[&str]) -> Output {
    support::run(BIN, args)
}

fn refuses(out: &Output, code: i32, pattern: &str, what: &str) {
    support::refuses("sisutil-lab", out, code, pattern, what)
}

#[test]
fn bad_options_are_one_line_usage_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["bench", "--iterations", "0"], "--iterations"),
        (&["bench", "--bench", "dhrystone"], "dhrystone"),
        (&["wakebench", "--workers", "0"], "--workers"),
        (&["wakebench", "--messengers", "100000"], "--messengers"),
        (&["compare", "only-one.json"], "<B>"),
        (&["table"], "<RUNS>"),
        (&["no-such-command"], "no-such-command"),
    ];
    for (args, pattern) in cases {
        refuses(&run(args), 2, pattern, &args.join(" "));
    }
}

#[test]
fn bad_files_and_values_are_refused() {
    let cases: &[(&[&str], &str)] = &[
        (&["wakebench", "--seconds", "0"], "--seconds"),
        (
            &["compare", "/nonexistent/a.json", "/nonexistent/b.json"],
            "cannot read",
        ),
        (&["plot", "/nonexistent/results.json"], "cannot read"),
        (&["compare", "a.json", "b.json", "--alpha", "2"], "--alpha"),
        (&["table", "/nonexistent"], "cannot read"),
        (&["docs", "/nonexistent.md"], "cannot read"),
    ];
    for (args, pattern) in cases {
        refuses(&run(args), 1, pattern, &args.join(" "));
    }
}

#[test]
fn help_and_version_succeed() {
    for args in [&["--help"][..], &["--version"], &["bench", "--help"]] {
        let out = run(args);
        assert!(out.status.success(), "{args:?}");
        assert!(!out.stdout.is_empty());
    }
    let help = String::from_utf8_lossy(&run(&["--help"]).stdout).into_owned();
    for word in [
        "bench",
        "compare",
        "plot",
        "table",
        "wakebench",
        "streambench",
        "ycsb",
    ] {
        assert!(help.contains(word), "--help lacks {word}");
    }
}

#[test]
fn an_ab_run_needs_root_and_sched_ext() {
    let bench = [
        "bench",
        "--preset",
        "quick",
        "--arms",
        "eevdf,util",
        "--out",
        "/tmp/sisu-lab-refused",
    ];
    if !is_root() {
        refuses(&run(&bench), 1, "must run as root", "bench");
        return;
    }
    refuses(
        &as_nobody_from(Path::new(BIN), &bench),
        1,
        "must run as root",
        "bench as nobody",
    );
    match support::with_sched_ext(BIN, None, &bench) {
        Some(out) => refuses(&out, 1, "no sched_ext", "bench without sched_ext"),
        None => skip(
            "an_ab_run_needs_root_and_sched_ext",
            "unshare cannot make a mount namespace here",
        ),
    }
}
