#!/usr/bin/env bash
# Throughput of payretry-sim on the plain-success POST path, measured with wrk.
# usage: tests/bench/sim_wrk.sh [build_dir]
#   env: SIM_THREADS (default 1), WRK_THREADS (1), CONNECTIONS (64), DURATION (5s)
# Prints wrk's report, then "requests/s: N".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
sim=$build/sim/payretry-sim
[ -x "$sim" ] || { echo "no simulator at $sim (build it first)" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk not installed (apt-get install wrk)" >&2; exit 1; }

out=$(mktemp)
sim_pid=
cleanup() {
  if [ -n "$sim_pid" ]; then kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; fi
  rm -f "$out"
}
trap cleanup EXIT

"$sim" --port 0 --threads "${SIM_THREADS:-1}" > "$out" &
sim_pid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { echo "simulator did not start" >&2; exit 1; }

wrk -t"${WRK_THREADS:-1}" -c"${CONNECTIONS:-64}" -d"${DURATION:-5s}" \
    -s "$here/sim_post.lua" "http://127.0.0.1:$port/v1/payments" | tee "$out.wrk"
rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\)/\1/p' "$out.wrk")
rm -f "$out.wrk"
echo "requests/s: ${rps%.*}"
