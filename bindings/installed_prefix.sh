# Sourced (POSIX sh) by the bindings' run_tests.sh: installs the CMake build in
# $build into a temporary prefix removed on exit, finds the simulator, and
# exports what the binding tests read. $prefix_tag names the temporary folder.
prefix=$(mktemp -d "${TMPDIR:-/tmp}/payretry-${prefix_tag:-binding}.XXXXXX")
trap 'rm -rf "$prefix"' EXIT INT TERM
cmake --install "$build" --prefix "$prefix" >/dev/null

sim="$prefix/bin/payretry-sim"
[ -x "$sim" ] || sim=$(find "$build" -type f -name payretry-sim -perm -u+x | head -n 1)
if [ -z "$sim" ]; then
  echo "run_tests.sh: no payretry-sim under $build" >&2
  exit 1
fi
pcdir=$(dirname "$(find "$prefix" -name payretry.pc | head -n 1)")
libdir=$(dirname "$pcdir")

export PAYRETRY_PREFIX="$prefix" PAYRETRY_SIM="$sim" PAYRETRY_REQUIRE_BINDINGS=1
export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
