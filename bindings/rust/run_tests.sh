#!/bin/sh
# run_tests.sh BUILD_DIR: installs that build into a temporary prefix and runs
# `cargo test --workspace` and `cargo clippy -D warnings` of the Rust binding
# against the installed library (found with pkg-config, not the build tree),
# with the simulator built there. Cargo's output goes to BUILD_DIR/rust-target,
# never into the repository.
# PAYRETRY_REQUIRE_BINDINGS=1 is set: a missing piece fails instead of skipping.
set -eu
if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
cargo=${CARGO:-cargo}
command -v "$cargo" >/dev/null 2>&1 || cargo=$HOME/.cargo/bin/cargo

prefix_tag=rs
. "$here/../installed_prefix.sh"
export CARGO_TARGET_DIR="$build/rust-target"
# The prefix is new on every run, and build.rs reruns when PKG_CONFIG_PATH
# changes, so payretry-sys always links against this run's install.

cd "$here"
"$cargo" test --workspace
if "$cargo" clippy --version >/dev/null 2>&1; then
  "$cargo" clippy --workspace --all-targets -- -D warnings
else
  echo "run_tests.sh: cargo clippy is not installed; skipping clippy" >&2
fi
