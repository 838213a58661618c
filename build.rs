fn main() {
    // The BPF program, one file per concern (src/bpf/sisutil.bpf.h lists
    // them), linked into one object. BpfBuilder links in name order, and
    // main.bpf.c, which defines the maps, must come before every file that
    // declares one extern: libbpf 1.7's linker otherwise keeps the extern's
    // placeholder offset in the .maps section and the skeleton cannot open
    // the object. So a concern file's name must sort after main's, which
    // the build checks rather than leaves to whoever names the next one.
    const MAIN: &str = "main.bpf.c";
    const CONCERNS: [&str; 6] = [
        "placement.bpf.c",
        "migration.bpf.c",
        "vtime.bpf.c",
        "sis_cache.bpf.c",
        "sis_current.bpf.c",
        "trace.bpf.c",
    ];
    for f in CONCERNS {
        assert!(
            f > MAIN,
            "src/bpf/{f} sorts before {MAIN}, which BpfBuilder must link first: rename it"
        );
    }
    let mut bpf = scx_cargo::BpfBuilder::new().unwrap();
    bpf.enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel(&format!("src/bpf/{MAIN}"), "bpf");
    for f in CONCERNS {
        bpf.add_source(&format!("src/bpf/{f}"));
    }
    bpf.compile_link_gen().unwrap();

    // The observer (src/observe.rs): probes only, no struct_ops, so an
    // object and a skeleton of its own that loads without sched_ext.
    // BpfBuilder names its output bpf.bpf.o and bpf_skel.rs in OUT_DIR
    // whatever the skeleton, so the observer's gets a directory of its own.
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let obs_dir = out.join("observe");
    std::fs::create_dir_all(&obs_dir).unwrap();
    std::env::set_var("OUT_DIR", &obs_dir);
    let mut obs = scx_cargo::BpfBuilder::new().unwrap();
    obs.enable_skel("src/bpf/observe.bpf.c", "bpf");
    obs.compile_link_gen().unwrap();
    std::env::set_var("OUT_DIR", &out);

    // The rules' pure arithmetic (SIS_UTIL's and SIS_PROP's depths, every rule's depth, SIS_CURRENT's decision, the
    // wait histogram's slots), compiled for the host as well so that
    // userspace and the unit tests run the same code as the BPF side.
    for f in [
        "host.c",
        "sis_util.h",
        "sis_prop.h",
        "depth.h",
        "sis_current.h",
        "wait_hist.h",
        "intf.h",
    ] {
        println!("cargo:rerun-if-changed=src/bpf/{f}");
    }
    cc::Build::new()
        .file("src/bpf/host.c")
        .warnings(true)
        .extra_warnings(true)
        .compile("sisu_host");
}
