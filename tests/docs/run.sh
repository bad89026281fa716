#!/usr/bin/env bash
# run.sh MODE BUILD_DIR DRIVER_ARGS...: readies what run_snippets.py --run
# MODE needs, then runs it.
#  - c, python, rust: stripe-mock (tests/conformance's pin, built once under
#    BUILD_DIR by tests/lib/go_tool.sh), so that the blocks naming Stripe also
#    run against Stripe's own mock server. Without Go or the module proxy they
#    run against payretry-sim only, saying so; with PAYRETRY_REQUIRE_MOCKS=1
#    (CI) that is a failure.
#  - python: an interpreter that imports the payretry package built from this
#    checkout: the venv of the package's own test
#    (tests/python/run_tests.sh) when nothing changed since it installed the
#    package, else one made here (pip install ./python,
#    as that test does) and installed again, incrementally, when python/,
#    src/ or include/ changed.
#  - go, rust: BUILD_DIR installed into a temporary prefix
#    (bindings/installed_prefix.sh), as the bindings' tests build consumers.
set -uo pipefail
mode=$1
build=$(cd "$2" && pwd)
shift 2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
args=(--repo "$repo" --run "$mode")

mock_pid=
cleanup() {
  [ -n "$mock_pid" ] && { kill "$mock_pid" 2>/dev/null; wait "$mock_pid" 2>/dev/null; }
  [ -n "${prefix:-}" ] && rm -rf "$prefix"
  return 0
}
trap cleanup EXIT

start_stripe_mock() {
  local version tool why log
  version=$(sed -n 's/^version=//p' "$repo/tests/conformance/run_stripe_mock.sh")
  # go_tool calls missing() and expects it not to return: a subshell each.
  tool=$(
    missing() { echo "$*" >&2; exit 3; }
    . "$repo/tests/lib/go_tool.sh"
    go_tool "$build/stripe-mock-$version" "github.com/stripe/stripe-mock@$version" stripe-mock >&2 && echo "$TOOL"
  ) || why="stripe-mock $version could not be built (see above)"
  if [ -z "${why:-}" ]; then
    . "$repo/tests/lib/go_tool.sh"
    port=$(free_port)
    log="$build/tests/docs-stripe-mock.log"
    mkdir -p "$(dirname "$log")"
    # It serves HTTPS on a second port, which the blocks do not use. It takes
    # seconds to load Stripe's OpenAPI document: the driver runs the blocks
    # against payretry-sim meanwhile, and waits for it before its first use.
    "$tool" -http-port "$port" -https-port "$(free_port)" >"$log" 2>&1 &
    mock_pid=$!
  fi
  if [ -n "${why:-}" ]; then
    if [ "${PAYRETRY_REQUIRE_MOCKS:-}" = 1 ]; then
      echo "FAIL: PAYRETRY_REQUIRE_MOCKS=1 but $why" >&2
      exit 1
    fi
    echo "note: $why: the blocks naming Stripe run against payretry-sim only"
    return 0
  fi
  args+=(--stripe-mock "http://127.0.0.1:$port")
}

python_with_payretry() {
  local py=$build/tests/python/work/venv/bin/python venv=$build/tests/docs/venv stamp ext
  # That test's venv, unless the checkout changed since it installed the package.
  ext=$("$py" -c 'import payretry._payretry as m, prometheus_client; print(m.__file__)' 2>/dev/null)
  if [ -n "$ext" ] && [ -z "$(find "$repo/python" "$repo/src" "$repo/include" -newer "$ext" -type f -print -quit)" ]; then
    echo "$py"
    return 0
  fi
  stamp=$venv/installed
  if [ -f "$stamp" ] && "$venv/bin/python" -c 'import payretry' 2>/dev/null &&
     [ -z "$(find "$repo/python" "$repo/src" "$repo/include" -newer "$stamp" -type f -print -quit)" ]; then
    echo "$venv/bin/python"
    return 0
  fi
  # Without build isolation and with a build folder kept here, a change to
  # the core recompiles only what changed (the first build takes minutes).
  echo "installing ./python into $venv (the first time: a few minutes)" >&2
  rm -f "$stamp"
  { [ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv" >&2; } &&
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      scikit-build-core pybind11 prometheus_client >&2 &&
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
      -Cbuild-dir="$build/tests/docs/python-build" "$repo/python" >&2 &&
    touch "$stamp" && echo "$venv/bin/python"
}

case $mode in
  c|python|rust) start_stripe_mock ;;
esac
case $mode in
  python)
    py=$(python_with_payretry) || { echo "FAIL: no Python with the payretry package" >&2; exit 1; }
    args+=(--python "$py")
    ;;
  go|rust)
    prefix_tag=docs
    . "$repo/bindings/installed_prefix.sh"
    trap cleanup EXIT  # installed_prefix.sh set its own
    export GOTOOLCHAIN=local CGO_ENABLED=1
    # As bindings/go/run_tests.sh: naming this run's prefix in CGO_CPPFLAGS
    # (which Go's build cache hashes) rebuilds the cgo package against it.
    export CGO_CPPFLAGS="-I$prefix/include${CGO_CPPFLAGS:+ $CGO_CPPFLAGS}"
    ;;
esac
if [ "$mode" = rust ]; then
  # cargo runs rustc from its own folder.
  prev=
  for a in "$@"; do case $prev in --cargo) PATH=$(dirname "$a"):$PATH ;; esac; prev=$a; done
fi
python3 "$here/run_snippets.py" "${args[@]}" "$@"
