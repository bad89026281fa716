#!/bin/sh
# Runs every operations scenario (or those named) against PAYRETRY_LIB
# (default: this checkout's build/src/api/libpayretry.so). Exit 1 while
# any scenario reads BROKEN or ERROR.
cd "$(dirname "$0")" && PAYRETRY_LIB="${PAYRETRY_LIB:-$(cd ../../.. && pwd)/build/src/api/libpayretry.so}" exec python3 scenarios.py "$@"
