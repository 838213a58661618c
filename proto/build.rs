//! Bindings for the scheduler's src/bpf/intf.h: the policies' values, the
//! topology's limits and spans come from the header BPF is built from,
//! and the rules' table (SISU_RULES) becomes policy.rs's `rules!` lines.
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

/// One rule of intf.h's SISU_RULES table.
struct Rule {
    bpf: String,
    name: String,
    shadows: bool,
    auto: bool,
    about: String,
}

/// The lines of intf.h's `#define SISU_RULES(R)`, each `R(ENUM, name,
/// shadows, auto, "about")`, in order.
fn rules(header: &str) -> Vec<Rule> {
    let lines = header
        .lines()
        .skip_while(|l| !l.starts_with("#define SISU_RULES(R)"))
        .skip(1);
    let mut rules = Vec::new();
    for line in lines {
        let line = line.trim_end();
        let more = line.ends_with('\\');
        let entry = line.trim_end_matches('\\').trim();
        let body = entry
            .strip_prefix("R(")
            .and_then(|e| e.strip_suffix(')'))
            .unwrap_or_else(|| panic!("intf.h: SISU_RULES line {entry:?} is not R(...)"));
        let mut parts = body.splitn(5, ',').map(str::trim);
        let mut next = || {
            parts
                .next()
                .expect("intf.h: a SISU_RULES line has five fields")
        };
        let (bpf, name, shadows, auto, about) = (next(), next(), next(), next(), next());
        rules.push(Rule {
            bpf: format!("sisu_policy_SISU_POL_{bpf}"),
            name: name.to_string(),
            shadows: shadows == "1",
            auto: auto == "1",
            about: about.to_string(),
        });
        if !more {
            break;
        }
    }
    assert!(!rules.is_empty(), "intf.h: no SISU_RULES table");
    rules
}

/// The rule's variant in Rust: its name, capitalised.
fn variant(r: &Rule) -> String {
    let mut v = r.name.clone();
    v[..1].make_ascii_uppercase();
    v
}

/// The `rules!` invocation policy.rs includes: one line per rule.
fn rules_rs(rules: &[Rule]) -> String {
    let mut out = String::from("rules! {\n");
    for r in rules {
        out += &format!(
            "    {} {:?} {} {} {};\n",
            variant(r),
            r.name,
            r.bpf,
            r.shadows,
            r.about
        );
    }
    let auto: Vec<String> = rules
        .iter()
        .filter(|r| r.auto)
        .map(|r| format!("Policy::{}", variant(r)))
        .collect();
    out += "}\n\nimpl Policy {\n";
    out += "    /// The rules the adaptive rule chooses from, in the table's order.\n";
    out += &format!(
        "    pub const AUTO_CANDIDATES: [Policy; {}] = [{}];\n}}\n",
        auto.len(),
        auto.join(", ")
    );
    out
}

/// The trace's `wakeup_row!` invocation: a `shadow_<name>` column per
/// rule that can shadow.
fn wakeup_row_rs(rules: &[Rule]) -> String {
    let cols: Vec<String> = rules
        .iter()
        .filter(|r| r.shadows)
        .map(|r| format!("shadow_{} {}", r.name, variant(r)))
        .collect();
    format!("wakeup_row! {{ {} }}\n", cols.join(", "))
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
    let text = std::fs::read_to_string(header).expect("cannot read intf.h");
    let rules = rules(&text);
    std::fs::write(out.join("rules.rs"), rules_rs(&rules)).expect("cannot write rules.rs");
    std::fs::write(out.join("wakeup_row.rs"), wakeup_row_rs(&rules))
        .expect("cannot write wakeup_row.rs");
}
