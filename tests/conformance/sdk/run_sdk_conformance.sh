#!/usr/bin/env bash
# Runs one SDK conformance case: the provider's official SDK and payretry send
# the same payment through a recorder to payretry-sim, and compare.py checks
# that payretry's requests are the SDK's, field by field (runner.py).
#
#   run_sdk_conformance.sh BUILD_DIR PROFILE PAYRETRY_BIN SIM_BIN
#
# The SDKs are installed once from PyPI (requirements.txt, constraints.txt)
# into a venv under BUILD_DIR, keyed by the hash of those files and the Python
# version, and reused by later runs. Without Python's venv module or without
# the package index the case is skipped (exit 77), unless
# PAYRETRY_REQUIRE_MOCKS=1 (CI): then that is a failure.
# SDK_CONFORMANCE_WORK=DIR keeps the recordings (DIR/PROFILE/*.jsonl).
set -uo pipefail

build=$1 profile=$2 payretry=$3 sim=$4
here=$(cd "$(dirname "$0")" && pwd)

. "$(dirname "$0")/../../lib/skip_or_fail.sh"
missing() { skip_or_fail PAYRETRY_REQUIRE_MOCKS "$@"; }

python=${PYTHON:-$(command -v python3 || true)}
[ -n "$python" ] || missing "python3 is not installed"
"$python" -c 'import venv, ensurepip' 2>/dev/null || missing "$python has no venv/ensurepip module (Debian: python3-venv)"

pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
hash=$(cat "$here/requirements.txt" "$here/constraints.txt" | { cat; echo "python $pyver"; } | sha256sum | cut -c1-16)
venv="$build/sdk-conformance-venv-$hash"

# One install at a time when the cases run in parallel; a venv is used only
# once it is complete (.complete is written last).
if [ ! -f "$venv/.complete" ]; then
  mkdir -p "$build"
  (
    flock 9
    if [ ! -f "$venv/.complete" ]; then
      rm -rf "$venv"
      echo "installing the providers' SDKs into $venv (once)"
      "$python" -m venv "$venv" || exit 3
      log="$venv/pip-install.log"
      if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q \
             -r "$here/requirements.txt" -c "$here/constraints.txt" >"$log" 2>&1; then
        index=${PIP_INDEX_URL:-https://pypi.org/simple}
        if ! "$python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)' \
               "${index%/}/pip/" >/dev/null 2>&1; then
          rm -rf "$venv"
          exit 2  # no package index: skip
        fi
        tail -20 "$log" >&2
        rm -rf "$venv"
        exit 4  # the index answers, the install failed: a real failure
      fi
      touch "$venv/.complete"
    fi
  ) 9>"$build/sdk-conformance-venv.lock"
  case $? in
    0) ;;
    2) missing "the package index (${PIP_INDEX_URL:-https://pypi.org/simple}) is unreachable: cannot install the SDKs" ;;
    3) missing "$python -m venv failed" ;;
    *) echo "FAIL: installing the SDKs from requirements.txt failed (the index is reachable)" >&2; exit 1 ;;
  esac
fi

work_args=()
if [ -n "${SDK_CONFORMANCE_WORK:-}" ]; then
  work_args=(--work "$SDK_CONFORMANCE_WORK/$profile")
fi
exec "$venv/bin/python" "$here/runner.py" --profile "$profile" --payretry "$payretry" --sim "$sim" \
  --keys "$here/../../keys" ${work_args[@]+"${work_args[@]}"}
