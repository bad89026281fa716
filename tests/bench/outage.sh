#!/usr/bin/env bash
# The retry budget under a full provider outage: payretry keeps N payments in flight against the
# simulator (100 ms latency) while the simulator answers every create 503 for 30 s, then heals.
# Sampled from the simulator once a second: first sends (creates with a key it had not seen),
# repeats (creates with a key it had seen: the clients' retries) and charges. Prints, per
# in-flight level, the repeats as a share of first sends during the outage (a retry storm would
# be 100 % or more), and how long after healing the charge rate is back to 90 % of its rate
# before the outage. Benchmarks print, never assert.
#
# usage: tests/bench/outage.sh [--inflight "100 1000"] [--before-s 10] [--outage-s 30]
#                              [--after-s 15] [--latency-ms 100] [--build-dir DIR] [--no-build]
#                              [--driver-args "..."] [--out DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/bench_lib.sh"
command_line="tests/bench/outage.sh${*:+ $*}"

inflight_levels="100 1000"
before_s=10
outage_s=30
after_s=15
latency_ms=100
build_dir=$root/build-bench
build=1
driver_args=""
out_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --inflight) inflight_levels=$2; shift ;;
    --before-s) before_s=$2; shift ;;
    --outage-s) outage_s=$2; shift ;;
    --after-s) after_s=$2; shift ;;
    --latency-ms) latency_ms=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --no-build) build=0 ;;
    --driver-args) driver_args=$2; shift ;;
    --out) out_dir=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "outage.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

note() { echo "[outage] $*" >&2; }
work=$(mktemp -d)
sim_pid=""
driver_pid=""
cleanup() {
  stop_processes "$driver_pid" "$sim_pid"
  if [ -n "$out_dir" ]; then mkdir -p "$out_dir" && cp -r "$work"/. "$out_dir"/; fi
  rm -rf "$work"
}
trap cleanup EXIT

[ "$build" = 1 ] && build_runners "$build_dir" payretry-sim payretry_driver
sim=$build_dir/sim/payretry-sim
driver=$build_dir/tests/bench/payretry_driver

start_sim "$sim" "$work/sim.out" --seed 42
faults() { admin POST config "{\"latency_ms\":$latency_ms,\"seed\":42,\"faults\":$1}" >/dev/null; }

for inflight in $inflight_levels; do
  admin POST reset >/dev/null
  faults '{}'
  # More payments than the run can finish: the driver is stopped when the run ends.
  # shellcheck disable=SC2086
  "$driver" --url "$url" --payments 100000000 --inflight "$inflight" --prefix "o$inflight-" --mode async \
    --ledger memory: $driver_args > "$work/driver-$inflight.out" 2> "$work/driver-$inflight.log" &
  driver_pid=$!
  note "$inflight in flight: ${before_s}s healthy, ${outage_s}s every create 503, ${after_s}s healed"
  python3 "$here/outage_timeline.py" run --url "$url" --latency-ms "$latency_ms" --before-s "$before_s" \
    --outage-s "$outage_s" --after-s "$after_s" > "$work/series-$inflight.jsonl"
  stop_processes "$driver_pid"
  driver_pid=""
done

machine=$(machine_line)
args=()
for inflight in $inflight_levels; do args+=(--series "$inflight=$work/series-$inflight.jsonl"); done
python3 "$here/outage_timeline.py" report --command "$command_line" --machine "$machine" --latency-ms "$latency_ms" "${args[@]}"
