#!/bin/sh
# run_tests.sh BUILD_DIR: installs that build into a temporary prefix and, against
# the installed library (found with pkg-config, not the build tree) and the
# simulator built there:
#  1. `cargo test --workspace --all-features` (the serde reports included);
#  2. `cargo clippy -D warnings`, with the default features and with all;
#  3. consumer/, copied out of the repository into a temporary folder with its
#     path dependency pointed at this binding, built and run as an application,
#     without LD_LIBRARY_PATH (its build.rs records the prefix's lib folder as
#     its rpath): it signs every attempt and lookup through its request hook
#     against `payretry-sim --hmac-secret`;
#  4. `cargo package --workspace` for both crates (verified: each .crate is
#     unpacked and built), after checking that each carries LICENSE.
# Cargo's output goes to BUILD_DIR/rust-target, never into the repository.
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
consumer=$(mktemp -d "${TMPDIR:-/tmp}/payretry-rs-consumer.XXXXXX")
trap 'rm -rf "$prefix" "$consumer"' EXIT INT TERM
export CARGO_TARGET_DIR="$build/rust-target"
# The prefix is new on every run, and build.rs reruns when PKG_CONFIG_PATH
# changes, so payretry-sys always links against this run's install.

cd "$here"
"$cargo" test --workspace --all-features
if "$cargo" clippy --version >/dev/null 2>&1; then
  "$cargo" clippy --workspace --all-targets -- -D warnings
  "$cargo" clippy --workspace --all-targets --all-features -- -D warnings
else
  echo "run_tests.sh: cargo clippy is not installed; skipping clippy" >&2
fi

# The consumer, outside the repository: its Cargo.toml names the binding as
# "../payretry", rewritten here to this checkout's absolute path. The
# workspace's lock file seeds its versions (cargo drops what it does not use).
cp -R "$here/consumer/." "$consumer/"
sed -i "s|path = \"../payretry\"|path = \"$here/payretry\"|" "$consumer/Cargo.toml"
grep -q "path = \"$here/payretry\"" "$consumer/Cargo.toml" || {
  echo "run_tests.sh: could not point consumer/Cargo.toml at $here/payretry" >&2
  exit 1
}
cp "$here/Cargo.lock" "$consumer/Cargo.lock"
(
  cd "$consumer"
  if "$cargo" clippy --version >/dev/null 2>&1; then
    "$cargo" clippy --quiet --all-targets -- -D warnings
  fi
  "$cargo" build --quiet
  # Run as a user runs the program: no LD_LIBRARY_PATH (nor cargo run, which
  # sets one), and this prefix's library, not some other install's.
  program="$CARGO_TARGET_DIR/debug/payretry-hmac-consumer"
  unset LD_LIBRARY_PATH
  line=$(ldd "$program" | grep 'libpayretry\.so' || true)
  loaded=$(echo "$line" | awk '{print $3}')
  [ -f "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$libdir/libpayretry.so.0")" ] || {
    echo "run_tests.sh: the consumer should load libpayretry from $libdir (its rpath), not:$line" >&2
    readelf -d "$program" | grep -E 'RPATH|RUNPATH' >&2 || true
    exit 1
  }
  "$program" "$PAYRETRY_SIM"
)

# Packaging: both crates must ship the license, and build from their .crate.
for crate in payretry-sys payretry; do
  "$cargo" package --list -p "$crate" --allow-dirty | grep -qx LICENSE || {
    echo "run_tests.sh: the $crate package has no LICENSE" >&2
    exit 1
  }
done
# Verifying payretry unpacks the payretry-sys .crate from a temporary local
# registry into $CARGO_HOME/registry/src/-<hash of its path>/, and cargo reuses
# a copy unpacked there before (same name and version) instead of this run's:
# drop those copies, so that the crates verified are the ones just packaged.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/payretry-sys-*
"$cargo" package --workspace --allow-dirty
