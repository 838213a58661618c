fn main() {
    // The BPF program, one file per concern (src/bpf/sisutil.bpf.h lists
    // them), linked into one object. BpfBuilder links in name order, and
    // main.bpf.c, which defines the maps, must come before every file that
    // declares one extern: libbpf 1.7's linker otherwise keeps the extern's
    // placeholder offset in the .maps section and the skeleton cannot open
    // the object (the build fails, it does not misbehave). The concern
    // files' names sort after main.
    scx_cargo::BpfBuilder::new()
        .unwrap()
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .add_source("src/bpf/placement.bpf.c")
        .add_source("src/bpf/migration.bpf.c")
        .add_source("src/bpf/vtime.bpf.c")
        .add_source("src/bpf/sis_cache.bpf.c")
        .add_source("src/bpf/sis_current.bpf.c")
        .add_source("src/bpf/trace.bpf.c")
        .compile_link_gen()
        .unwrap();

    // The rules' pure arithmetic (SIS_PROP's, SIS_CURRENT's decision, the
    // wait histogram's slots), compiled for the host as well so that the
    // unit tests exercise the same code as the BPF side.
    for f in [
        "host.c",
        "sis_prop.h",
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
