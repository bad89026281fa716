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

. "$here/sdk_venv.sh"

work_args=()
if [ -n "${SDK_CONFORMANCE_WORK:-}" ]; then
  work_args=(--work "$SDK_CONFORMANCE_WORK/$profile")
fi
exec "$venv/bin/python" "$here/runner.py" --profile "$profile" --payretry "$payretry" --sim "$sim" \
  --keys "$here/../../keys" ${work_args[@]+"${work_args[@]}"}
