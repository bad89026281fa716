#!/bin/sh
# Runs every scenario against /work/main/build/src/api/libpayretry.so (PAYRETRY_LIB overrides).
cd "$(dirname "$0")" && nice python3 s_crossorder.py && nice python3 s_receiver.py
