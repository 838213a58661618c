fn main() {
    scx_cargo::BpfBuilder::new()
        .unwrap()
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .compile_link_gen()
        .unwrap();

    // SIS_PROP's arithmetic, compiled for the host as well so that the unit
    // tests exercise the same code as the BPF side.
    println!("cargo:rerun-if-changed=src/bpf/sis_prop_host.c");
    println!("cargo:rerun-if-changed=src/bpf/sis_prop.h");
    cc::Build::new()
        .file("src/bpf/sis_prop_host.c")
        .warnings(true)
        .extra_warnings(true)
        .compile("sis_prop_host");
}
