#!/bin/sh
# Runs the judge's self-test, then every operation-webhook scenario (or those
# whose name contains one of the arguments) against PAYRETRY_LIB (default:
# this checkout's build/src/api/libpayretry.so). Exit 1 while any scenario
# reads BROKEN or ERROR, or the judge's self-test fails.
cd "$(dirname "$0")" || exit 2
PAYRETRY_LIB="${PAYRETRY_LIB:-$(cd ../../.. && pwd)/build/src/api/libpayretry.so}"
export PAYRETRY_LIB
python3 scenarios.py --selftest >/dev/null || { echo "judge self-test failed"; exit 1; }
exec python3 scenarios.py "$@"
