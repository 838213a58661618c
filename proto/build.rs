//! Bindings for the scheduler's src/bpf/intf.h: the policies' values, the
//! topology's limits and spans come from the header BPF is built from.
//! And the commit the build came from, which both programs report.

/// The commit of the checkout, as "g<sha>" with "-dirty" if tracked files
/// had changes; empty outside a git checkout.
fn git_version() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let Some(sha) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        return String::new();
    };
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
        println!("cargo:rerun-if-changed={dir}/refs/heads");
    }
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    format!("g{sha}{}", if dirty { "-dirty" } else { "" })
}

fn main() {
    println!("cargo:rustc-env=SISUTIL_GIT_VERSION={}", git_version());
    let header = "../src/bpf/intf.h";
    println!("cargo:rerun-if-changed={header}");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindgen::Builder::default()
        .header(header)
        .generate()
        .expect("cannot generate bindings for intf.h")
        .write_to_file(out.join("intf.rs"))
        .expect("cannot write the bindings");
}
