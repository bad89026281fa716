#!/usr/bin/env bash
# A fleet on one PostgreSQL: N payretry processes, each with K payments in flight on its
# concurrent engine, share one PostgreSQL ledger and one simulator (fixed latency), as N hosts
# of a service would. Beside them, in the same run, N raw libcurl multi processes with the same
# in-flight level (the transport limit of this box) and a single payretry process with the
# memory ledger. Prints the aggregate payments/s of each, the ratios, per-process latency, the
# simulator's duplicate charges (its own truth), and the CPU each row cost a payment in the
# clients, the simulator and the throwaway server (where a CPU-bound row's time goes: with
# 1,000 in flight the latency is 1,000 / payments/s). Benchmarks print, never assert.
#
# usage: tests/bench/pg_fleet.sh [--processes 4] [--inflight 1000] [--payments 20000]
#                                [--latency-ms 100] [--rounds 3] [--build-dir DIR] [--no-build]
#   PAYRETRY_BENCH_PG_URL set: that server; otherwise a throwaway one (tests/ledger/pg_cluster.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/bench_lib.sh"
command_line="tests/bench/pg_fleet.sh${*:+ $*}"

processes=4
inflight=1000
payments=20000
latency_ms=100
rounds=3
build_dir=$root/build-bench
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --processes) processes=$2; shift ;;
    --inflight) inflight=$2; shift ;;
    --payments) payments=$2; shift ;;
    --latency-ms) latency_ms=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --no-build) build=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "pg_fleet.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

note() { echo "[fleet] $*" >&2; }
work=$(mktemp -d)
sim_pid=""
pg_dir=""
cleanup() {
  stop_processes "$sim_pid"
  destroy_throwaway_pg
  rm -rf "$work"
}
trap cleanup EXIT

[ "$build" = 1 ] && build_runners "$build_dir" payretry-sim curl_multi_baseline payretry_driver
sim=$build_dir/sim/payretry-sim
curl_bin=$build_dir/tests/bench/curl_multi_baseline
driver=$build_dir/tests/bench/payretry_driver

pg_url=${PAYRETRY_BENCH_PG_URL:-}
[ -n "$pg_url" ] || start_throwaway_pg payretry-fleet-pg
# The throwaway server's postmaster, for its CPU per payment (none for a server given by URL).
pg_pid=""
[ -n "$pg_dir" ] && pg_pid=$(head -n1 "$pg_dir/data/data/postmaster.pid" 2>/dev/null || true)

start_sim "$sim" "$work/sim.out" --seed 42 --threads 2
admin POST config "{\"latency_ms\":$latency_ms,\"seed\":42,\"faults\":{}}" >/dev/null

# One row: N processes of a kind at once; prints one JSON line with the wall time and every
# process's own line.
run_row() {  # kind count round
  local kind=$1 count=$2 round=$3 pids=() i start end
  admin POST reset >/dev/null
  sleep 0.5  # the last row's server backends are gone and counted
  local sim0 pg0 sim1 pg1
  sim0=$(cpu_seconds "$sim_pid")
  pg0=$(cpu_seconds "$pg_pid")
  start=$(date +%s.%N)
  for i in $(seq "$count"); do
    local prefix="f$round-$kind-$i-$RANDOM-"
    case "$kind" in
      curl) "$curl_bin" --url "$url" --payments "$payments" --inflight "$inflight" --prefix "$prefix" ;;
      pg) "$driver" --url "$url" --payments "$payments" --inflight "$inflight" --prefix "$prefix" --mode async \
            --ledger "$pg_url" ;;
      memory) "$driver" --url "$url" --payments "$payments" --inflight "$inflight" --prefix "$prefix" --mode async \
            --ledger memory: ;;
    esac > "$work/$kind-$round-$i.out" 2> "$work/$kind-$round-$i.log" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || note "a $kind process exited $?"; done
  end=$(date +%s.%N)
  sleep 0.5
  sim1=$(cpu_seconds "$sim_pid")
  pg1=$(cpu_seconds "$pg_pid")
  admin GET truth > "$work/truth.json"
  python3 - "$kind" "$count" "$start" "$end" "$work/truth.json" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "$sim0" "$sim1" "${pg_pid:+$pg0}" "${pg_pid:+$pg1}" \
    "$work"/"$kind-$round"-*.out <<'EOF'
import json, sys
kind, count, start, end, truth, load = sys.argv[1:7]
sim0, sim1, pg0, pg1 = sys.argv[7:11]  # CPU seconds before and after; pg empty: a server given by URL
lines = []
for path in sys.argv[11:]:
    with open(path) as f:
        rows = [l for l in f.read().splitlines() if l.startswith("{")]
    lines.append(json.loads(rows[-1]) if rows else {})
t = json.load(open(truth))
done = sum(sum(l.get("outcomes", {}).values()) for l in lines)
ok = sum(l.get("outcomes", {}).get("succeeded", 0) for l in lines)
us = lambda a, b: (float(b) - float(a)) * 1e6 / done if done and a else None  # CPU us a payment
client_us = sum(l.get("cpu_s", 0) for l in lines) * 1e6 / done if done else None
print(json.dumps({"kind": kind, "processes": int(count), "wall_s": float(end) - float(start), "payments": done,
                  "client_us": client_us, "sim_us": us(sim0, sim1),
                  "server_us": us(pg0, pg1) if kind == "pg" else None,
                  "succeeded": ok, "duplicates": t.get("duplicates", -1), "load": load,
                  "p50_ms": sorted(l.get("p50_ms", 0) for l in lines)[len(lines) // 2]}))
EOF
}

results=$work/rows.jsonl
: > "$results"
for round in $(seq "$rounds"); do
  note "round $round: $processes x raw curl multi, $processes x payretry on PostgreSQL, 1 x payretry memory"
  run_row curl "$processes" "$round" >> "$results"
  run_row pg "$processes" "$round" >> "$results"
  run_row memory 1 "$round" >> "$results"
done

machine=$(machine_line)
python3 - "$results" "$command_line" "$machine" "$processes" "$inflight" "$payments" "$latency_ms" <<'EOF'
import json, statistics, sys, time
path, command, machine, n, inflight, payments, latency = sys.argv[1:8]
rows = [json.loads(l) for l in open(path)]
print(f"payretry fleet on one PostgreSQL: {n} processes x {inflight} in flight x {payments} payments, "
      f"simulator latency {latency} ms")
print(f"machine: {machine}")
print(f"date:    {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
print(f"command: {command}")
print("aggregate = all payments of the row / wall time of the row (first start to last exit); medians over rounds (min-max)")
print("CPU us a payment: of the row's clients (getrusage), of the simulator, and of the throwaway PostgreSQL (all its")
print("processes); medians over rounds. The row is CPU-bound when these, times payments/s, come near the cores.")
print()
rounds = {}
for r in rows:
    rounds.setdefault(r["kind"], []).append(r)
curl = [r["payments"] / r["wall_s"] for r in rounds.get("curl", [])]
print(f"{'row':<34} {'aggregate payments/s':>22} {'x curl':>18} {'p50 ms':>8} {'succeeded':>16} {'dup':>4}"
      f"  {'CPU us: client':>14} {'sim':>4} {'server':>6}  load (1/5/15 min)")
def cpu(rs, key):
    xs = [r[key] for r in rs if r.get(key) is not None]
    return f"{statistics.median(xs):.0f}" if xs else "-"
labels = {"curl": f"{n} x raw libcurl multi", "pg": f"{n} x payretry, PostgreSQL", "memory": "1 x payretry, memory ledger"}
for kind in ("curl", "pg", "memory"):
    rs = rounds.get(kind, [])
    if not rs:
        continue
    agg = [r["payments"] / r["wall_s"] for r in rs]
    ratios = [a / c for a, c in zip(agg, curl)] if curl else []
    fmt = lambda xs: f"{statistics.median(xs):.0f} ({min(xs):.0f}-{max(xs):.0f})"
    fmtr = lambda xs: f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})" if xs else "-"
    print(f"{labels[kind]:<34} {fmt(agg):>22} {fmtr(ratios):>18} {statistics.median(r['p50_ms'] for r in rs):>8.0f} "
          f"{sum(r['succeeded'] for r in rs):>7}/{sum(r['payments'] for r in rs):<8} {sum(r['duplicates'] for r in rs):>4}  "
          f"{cpu(rs, 'client_us'):>14} {cpu(rs, 'sim_us'):>4} {cpu(rs, 'server_us'):>6}  "
          f"{rs[0]['load']} .. {rs[-1]['load']}")
EOF
