#!/bin/sh
# Runs every PayPal void scenario (or those named) against PAYRETRY_LIB
# (default: this checkout's build/src/api/libpayretry.so). Exit 1 while any scenario reads
# BROKEN or ERROR.
cd "$(dirname "$0")" && PAYRETRY_LIB="${PAYRETRY_LIB:-$PWD/../../../build/src/api/libpayretry.so}" exec python3 scenarios.py "$@"
