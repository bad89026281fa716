#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time from its seed corpus.
# New inputs go to a scratch corpus in the build tree, never into the
# repository; a crash leaves its input there too, to be kept as a regression.
#   run_fuzz.sh BINARY SEED_DIR WORK_DIR SECONDS
set -euo pipefail
bin=$1 seeds=$2 work=$3 secs=$4
mkdir -p "$work/corpus" "$work/artifacts"
exec "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds"
