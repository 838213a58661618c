//! Bindings for the scheduler's src/bpf/intf.h: the policies' values, the
//! topology's limits and spans come from the header BPF is built from.
fn main() {
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
