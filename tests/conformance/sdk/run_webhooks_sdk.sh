#!/usr/bin/env bash
# Runs sdk_webhooks_verify: webhooks_sdk.py holds payretry's webhook verifiers
# (through webhook_verify_probe) against the providers' official SDKs.
#
#   run_webhooks_sdk.sh BUILD_DIR PROBE_BIN
#
# The venv is run_sdk_conformance.sh's (sdk_venv.sh), so both tests share one
# install. Skipped (77) without Python's venv or the package
# index, unless PAYRETRY_REQUIRE_MOCKS=1.
set -uo pipefail

build=$1 probe=$2
here=$(cd "$(dirname "$0")" && pwd)

. "$(dirname "$0")/../../lib/skip_or_fail.sh"
missing() { skip_or_fail PAYRETRY_REQUIRE_MOCKS "$@"; }

. "$here/sdk_venv.sh"

exec "$venv/bin/python" "$here/webhooks_sdk.py" --probe "$probe" --keys "$here/../../keys"
