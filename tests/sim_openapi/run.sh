#!/usr/bin/env bash
# CTest's entry to run_sim_openapi.py: finds or makes the validator's venv
# (requirements.txt + constraints.txt, keyed by their hash, under the build dir,
# by the same script as the SDK conformance venv), then runs it with the
# documents cached under the build dir.
#
#   run.sh BUILD_DIR PAYRETRY_SIM [--plant]
#
# No python venv or no package index: skipped (77), or a failure with
# PAYRETRY_REQUIRE_MOCKS=1 (CI), as for the providers' other tools.
set -uo pipefail
build=$1 sim=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/skip_or_fail.sh"
missing() { skip_or_fail PAYRETRY_REQUIRE_MOCKS "$@"; }
. "$here/../conformance/sdk/sdk_venv.sh"
exec "$venv/bin/python" "$here/run_sim_openapi.py" --sim "$sim" --cache "$build/sim-openapi-specs" "$@"
