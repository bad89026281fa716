#!/bin/sh
# Runs every money-state scenario against build-attack's library (override with
# PAYRETRY_LIB=/path/to/libpayretry.so). Exit 1 while any scenario reads BROKEN.
cd "$(dirname "$0")" && exec python3 scenarios.py "$@"
