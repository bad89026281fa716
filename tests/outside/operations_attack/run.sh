#!/bin/sh
# Runs every operations scenario (or those named) against PAYRETRY_LIB
# (default /work/wt-ops/build/src/api/libpayretry.so). Exit 1 while any
# scenario reads BROKEN or ERROR.
cd "$(dirname "$0")" && PAYRETRY_LIB="${PAYRETRY_LIB:-/work/wt-ops/build/src/api/libpayretry.so}" exec python3 scenarios.py "$@"
