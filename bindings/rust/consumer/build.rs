// Records libpayretry's folder in the program (its rpath), so that it runs
// without LD_LIBRARY_PATH against a prefix the loader does not search, as
// an application built against `cmake --install --prefix DIR` should.
// payretry-sys finds the library with pkg-config, but cargo gives a
// dependency's link arguments to no program (rust-lang/cargo#9554): the
// program's own build script has to. A system install (/usr) gets no -L
// from pkg-config, and no rpath.
fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-changed=build.rs");
    let lib = pkg_config::Config::new()
        .cargo_metadata(false)
        .probe("payretry")
        .unwrap_or_else(|e| panic!("libpayretry not found with pkg-config: {e}"));
    for dir in &lib.link_paths {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
}
