#!/usr/bin/env bash
# Memory per payment in flight: peak RSS of raw libcurl multi and of the concurrent engine (memory
# and SQLite ledgers) with K payments in flight at once, at two or more levels of K. The
# simulator holds every request for --latency-ms (default 1,000 ms), so all K are in flight
# together. Every run, at every level, makes the same number of payments (--payments, default
# 3 x the highest level), so that what a ledger keeps of settled payments (the memory ledger
# holds up to its max_settled rows; SQLite's file grows) is the same at each level and drops out
# of the slope. The slope between the lowest and the highest level,
# (RSS(high) - RSS(low)) / (high - low), is what one more payment in flight costs, with the
# process's fixed memory (libraries, the ledger's cache, its settled rows) taken out; printed
# per row and as a ratio to raw multi's, per round, then the median. Benchmarks print, never
# assert. --payments-per-level 3 measures as runs before 2026-12-04 did: 3 x K payments at
# level K, so that the memory ledger's slope also holds the rows of the extra settled payments.
#
# usage: tests/bench/inflight_memory.sh [--levels "1000 5000"] [--rounds 2] [--latency-ms 1000]
#                                       [--payments N | --payments-per-level M]
#                                       [--build-dir DIR] [--no-build]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/bench_lib.sh"
command_line="tests/bench/inflight_memory.sh${*:+ $*}"

levels="1000 5000"
rounds=2
latency_ms=1000
payments=""
per_level=""
build_dir=$root/build-bench
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --levels) levels=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --latency-ms) latency_ms=$2; shift ;;
    --payments) payments=$2; shift ;;
    --payments-per-level) per_level=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --no-build) build=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "inflight_memory.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

if [ -n "$payments" ] && [ -n "$per_level" ]; then
  echo "inflight_memory.sh: give --payments or --payments-per-level, not both" >&2; exit 2
fi
highest=$(printf '%s\n' $levels | sort -n | tail -n1)
[ -n "$payments" ] || payments=$((3 * highest))
[ "$build" = 1 ] && build_runners "$build_dir" curl_multi_baseline payretry_driver payretry-sim
curl_bin=$build_dir/tests/bench/curl_multi_baseline
driver=$build_dir/tests/bench/payretry_driver
require_built "$curl_bin" "$driver" "$build_dir/sim/payretry-sim"

work=$(mktemp -d)
sim_pid=""
cleanup() { stop_processes "$sim_pid"; rm -rf "$work"; }
trap cleanup EXIT
start_sim "$build_dir/sim/payretry-sim" "$work/sim.out" --seed 42 --threads 2
admin POST config "{\"latency_ms\":$latency_ms,\"seed\":42,\"faults\":{}}" > /dev/null

results=$work/results.txt
: > "$results"
for round in $(seq "$rounds"); do
  for k in $levels; do
    for row in curl memory sqlite; do
      admin POST reset > /dev/null
      rm -f "$work"/ledger.db*
      prefix="r$round-$row-$k-"
      case "$row" in
        curl) cmd=("$curl_bin") ;;
        memory) cmd=("$driver" --mode async --ledger memory:) ;;
        sqlite) cmd=("$driver" --mode async --ledger "sqlite://$work/ledger.db") ;;
      esac
      echo "[memory] round $round: $row, $k in flight" >&2
      n=$payments
      [ -z "$per_level" ] || n=$((k * per_level))
      line=$("${cmd[@]}" --url "$url" --payments "$n" --inflight "$k" --prefix "$prefix" 2> "$work/run.log" | tail -n1)
      echo "$round $row $k $line" >> "$results"
    done
  done
done

made="$payments payments a run at every level"
[ -z "$per_level" ] || made="$per_level x K payments a run at K in flight"
python3 - "$results" "$command_line" "$(machine_line)" "$latency_ms" "$made" <<'PY'
import json, statistics, sys
path, command, machine, latency, made = sys.argv[1:6]
rss, outcomes = {}, {}
for line in open(path):
    round_, row, k, js = line.split(" ", 3)
    d = json.loads(js)
    rss[(int(round_), row, int(k))] = d["peak_rss_mb"]
    for name, n in d["outcomes"].items():
        outcomes[(row, name)] = outcomes.get((row, name), 0) + n
rounds = sorted({r for r, _, _ in rss})
levels = sorted({k for _, _, k in rss})
low, high = levels[0], levels[-1]
print(f"payretry memory per payment in flight (simulator latency {latency} ms: all in flight at once)")
print(f"  {machine}\n  command: {command}\n  {made}")
print(f"  peak RSS (MB) per level, medians over {len(rounds)} rounds (min-max); per payment = slope from {low} to {high} in flight")
print(f"\n  {'row':<8}" + "".join(f"{str(k) + ' in flight':>24}" for k in levels) + f"{'KB per payment':>22}{'x curl':>18}  outcomes")
def fmt(xs, f="{:.1f}"):
    return f"{f.format(statistics.median(xs))} ({f.format(min(xs))}-{f.format(max(xs))})"
for row in ("curl", "memory", "sqlite"):
    per = [(rss[(r, row, high)] - rss[(r, row, low)]) * 1024 / (high - low) for r in rounds]
    base = [(rss[(r, "curl", high)] - rss[(r, "curl", low)]) * 1024 / (high - low) for r in rounds]
    ratio = [p / b for p, b in zip(per, base)]
    cells = "".join(f"{fmt([rss[(r, row, k)] for r in rounds]):>24}" for k in levels)
    outs = ", ".join(f"{n} {name}" for (rw, name), n in sorted(outcomes.items()) if rw == row)
    print(f"  {row:<8}{cells}{fmt(per):>22}{fmt(ratio, '{:.2f}'):>18}  {outs}")
PY
