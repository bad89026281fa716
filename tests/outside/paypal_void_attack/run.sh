#!/bin/sh
# Runs every PayPal void scenario (or those named) against PAYRETRY_LIB
# (default: the prebuilt a1fe60f copy). Exit 1 while any scenario reads
# BROKEN or ERROR.
cd "$(dirname "$0")" && PAYRETRY_LIB="${PAYRETRY_LIB:-/tmp/lib-a1fe60f/libpayretry.so}" exec python3 scenarios.py "$@"
