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
    // Dependents (links = "payretry") read DEP_PAYRETRY_INCLUDE.
    if let Some(inc) = lib.include_paths.first() {
        println!("cargo:include={}", inc.display());
        // The header check in tests/ reads the headers from here.
        println!("cargo:rustc-env=PAYRETRY_SYS_INCLUDEDIR={}", inc.display());
    }
}
