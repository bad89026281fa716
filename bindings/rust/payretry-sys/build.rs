// Finds libpayretry with pkg-config (payretry.pc from `cmake --install`).
// Set PKG_CONFIG_PATH to <prefix>/lib/pkgconfig (or lib64) of an install.
fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-changed=build.rs");
    let lib = pkg_config::Config::new()
        .range_version("0.1".."1.0")
        .probe("payretry")
        .unwrap_or_else(|e| {
            panic!(
                "payretry-sys: libpayretry (>= 0.1, < 1.0) not found with pkg-config: {e}\n\
                 Install payretry and set PKG_CONFIG_PATH to its lib/pkgconfig directory."
            )
        });
    // Where the library is, for a loader that does not look there (a prefix of
    // the user's own; a system install gives no -L, and needs nothing): this
    // crate's own tests, examples and binaries record it as their rpath, so
    // they run without LD_LIBRARY_PATH. Cargo passes a dependency's link
    // arguments to no other crate's program (rust-lang/cargo#9554), so an
    // application records it in its own build: its build.rs, as
    // bindings/rust/consumer/build.rs does, or
    //   RUSTFLAGS="-C link-arg=-Wl,-rpath,$(pkg-config --variable=libdir payretry)"
    // Dependents' build scripts read it as DEP_PAYRETRY_LIBDIR.
    if let Some(dir) = lib.link_paths.first() {
        println!("cargo:libdir={}", dir.display());
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    // Dependents (links = "payretry") read DEP_PAYRETRY_INCLUDE.
    if let Some(inc) = lib.include_paths.first() {
        println!("cargo:include={}", inc.display());
        // The header check in tests/ reads the headers from here.
        println!("cargo:rustc-env=PAYRETRY_SYS_INCLUDEDIR={}", inc.display());
    }
}
