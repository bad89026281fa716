#!/usr/bin/env bash
# payretry against raw libcurl multi and the peers people would otherwise pick, on the bundled
# simulator with a fixed provider latency, with no faults and with the chaos mix of .ci/demo,
# at 1, 10, 100 and 1,000 payments in flight. Prints one table (absolute figures and ratios to
# payretry with the memory ledger in the same scenario and in-flight level), the duplicate
# charges per client from the simulator's own truth, and a scaling section (CPU per payment at
# 10 vs 1,000 in flight; RSS across 100,000 payments). Benchmarks print, never assert.
#
# usage: tests/bench/run_bench.sh [options]
#   --quick             about 3 minutes: in flight 1, 10, 100; fewer payments; RSS over 20,000
#   --smoke             seconds: C++ runners only, in flight 1 and 10, 20 payments (CTest)
#   --latency-ms N      the simulator's fixed latency per request (default 100)
#   --inflight "LIST"   in-flight levels (default "1 10 100 1000")
#   --scenarios "LIST"  none and/or chaos (default "none chaos")
#   --clients "LIST"    of: curl payretry-memory payretry-sqlite payretry-pg payretry-threads
#                       stripe-python requests go-retryablehttp stripe-go (default: all that can run)
#                       payretry-{memory,sqlite,pg} run on the concurrent engine (pay_submit_async,
#                       default engine_threads: one per core, at least one per 1,000 connections);
#                       payretry-threads is the blocking pay_submit with one
#                       thread per payment in flight (memory ledger), for comparison
#   --max-payments N    payments per run = max(100, K x in-flight), capped at N (default 10000)
#   --per-slot K        payments per in-flight slot (default 20); at 1,000 in flight, 100 makes a
#                       row of about 10 s without faults (raise --max-payments with it)
#   --rss-payments N    payments of the RSS curve (default 100000; 0: no scaling section)
#   --pg                start a throwaway PostgreSQL (tests/ledger/pg_cluster.sh) for the
#                       payretry-pg rows; PAYRETRY_BENCH_PG_URL set does the same with yours
#   --no-peers          skip the Python and Go peers (no PyPI / Go proxy needed)
#   --build-dir DIR     (default build-bench); --no-build: use what is built there
#   --cache-dir DIR     venv and Go binary (default ${XDG_CACHE_HOME:-~/.cache}/payretry-bench)
#   --out DIR           keep results.jsonl and logs there (default: a temp dir, removed)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/bench_lib.sh"
command_line="tests/bench/run_bench.sh${*:+ $*}"

latency_ms=100
inflight_levels="1 10 100 1000"
scenarios="none chaos"
clients=""
max_payments=10000
min_payments=100
per_slot=20
rss_payments=100000
pg=0
peers=1
build=1
smoke=0
build_dir=$root/build-bench
cache_dir=${PAYRETRY_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/payretry-bench}
out_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) inflight_levels="1 10 100"; max_payments=1000; min_payments=20; rss_payments=20000 ;;
    --smoke) smoke=1; build=0; peers=0; inflight_levels="1 10"; max_payments=20; min_payments=20
             rss_payments=0; latency_ms=10; clients="curl payretry-memory payretry-sqlite" ;;
    --latency-ms) latency_ms=$2; shift ;;
    --inflight) inflight_levels=$2; shift ;;
    --scenarios) scenarios=$2; shift ;;
    --clients) clients=$2; shift ;;
    --max-payments) max_payments=$2; shift ;;
    --per-slot) per_slot=$2; shift ;;
    --rss-payments) rss_payments=$2; shift ;;
    --pg) pg=1 ;;
    --no-peers) peers=0 ;;
    --build-dir) build_dir=$2; shift ;;
    --no-build) build=0 ;;
    --cache-dir) cache_dir=$2; shift ;;
    --out) out_dir=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_bench.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

work=$(mktemp -d)
results=$work/results.jsonl
: > "$results"
sim_pid=""
pg_dir=""
cleanup() {
  stop_processes "$sim_pid"
  destroy_throwaway_pg
  if [ -n "$out_dir" ]; then mkdir -p "$out_dir" && cp -r "$work"/. "$out_dir"/; fi
  rm -rf "$work"
}
trap cleanup EXIT
note() { echo "[bench] $*" >&2; }

# ---- build ------------------------------------------------------------------------------------
[ "$build" = 1 ] && build_runners "$build_dir" payretry-sim curl_multi_baseline payretry_driver
sim=$build_dir/sim/payretry-sim
curl_bin=$build_dir/tests/bench/curl_multi_baseline
driver=$build_dir/tests/bench/payretry_driver
require_built "$sim" "$curl_bin" "$driver"

# ---- peers: a venv from PyPI and a Go binary through the module proxy, in the cache dir -------
skipped=""
venv_py=""
gopeer=""
if [ "$peers" = 1 ]; then
  mkdir -p "$cache_dir"
  req=$here/peers/requirements.txt
  stamp=$(sha256sum "$req" | cut -c1-16)
  if [ ! -f "$cache_dir/venv/.stamp-$stamp" ]; then
    note "installing the Python peers into $cache_dir/venv"
    rm -rf "$cache_dir/venv"
    if python3 -m venv "$cache_dir/venv" >&2 && "$cache_dir/venv/bin/pip" install -q -r "$req" >&2; then
      touch "$cache_dir/venv/.stamp-$stamp"
    fi
  fi
  if [ -f "$cache_dir/venv/.stamp-$stamp" ]; then venv_py=$cache_dir/venv/bin/python
  else skipped="$skipped stripe-python requests"; fi
  if command -v go >/dev/null; then
    note "building the Go peers into $cache_dir/gopeer"
    if (cd "$here/peers/go" && go build -buildvcs=false -o "$cache_dir/gopeer" . >&2); then gopeer=$cache_dir/gopeer; fi
  fi
  [ -n "$gopeer" ] || skipped="$skipped go-retryablehttp stripe-go"
fi

pg_url=${PAYRETRY_BENCH_PG_URL:-}
if [ "$pg" = 1 ] && [ -z "$pg_url" ]; then
  start_throwaway_pg payretry-bench-pg ||
    { pg_url=""; skipped="$skipped payretry-pg"; note "PostgreSQL did not start"; }
fi

if [ -z "$clients" ]; then
  clients="curl payretry-memory payretry-sqlite"
  [ -n "$pg_url" ] && clients="$clients payretry-pg"
  clients="$clients payretry-threads"
  [ -n "$venv_py" ] && clients="$clients stripe-python requests"
  [ -n "$gopeer" ] && clients="$clients go-retryablehttp stripe-go"
fi

fsync_rates=$(python3 "$here/report.py" fsync --dir "$work")

# ---- the simulator ------------------------------------------------------------------------------
start_sim "$sim" "$work/sim.out" --seed 42

chaos_faults='{"lost_response":0.05,"reset_before":0.03,"slow":0.02,"429":0.03,"503":0.05,"500":0.03,"malformed":0.02,"decline":0.03}'
configure() {  # scenario latency
  local faults='{}'
  [ "$1" = chaos ] && faults=$chaos_faults
  admin POST config "{\"latency_ms\":$2,\"slow_ms\":1500,\"seed\":42,\"faults\":$faults}" >/dev/null
}

run_no=0
run_one() {  # client scenario inflight payments
  local client=$1 scenario=$2 inflight=$3 payments=$4
  run_no=$((run_no + 1))
  local prefix="r$run_no-" line rc=0
  admin POST reset >/dev/null
  local base=(--url "$url" --payments "$payments" --inflight "$inflight" --prefix "$prefix")
  local log=$work/run-$run_no.log
  case "$client" in
    curl) cmd=("$curl_bin" "${base[@]}") ;;
    payretry-memory) cmd=("$driver" "${base[@]}" --mode async --ledger memory:) ;;
    payretry-sqlite) rm -f "$work/ledger.db"*; cmd=("$driver" "${base[@]}" --mode async --ledger "sqlite://$work/ledger.db") ;;
    payretry-pg) cmd=("$driver" "${base[@]}" --mode async --ledger "$pg_url") ;;
    payretry-threads) cmd=("$driver" "${base[@]}" --mode thread --ledger memory:) ;;
    stripe-python) cmd=("$venv_py" "$here/peers/stripe_python.py" "${base[@]}") ;;
    requests) cmd=("$venv_py" "$here/peers/requests_retry.py" "${base[@]}") ;;
    go-retryablehttp) cmd=("$gopeer" -client retryablehttp -url "$url" -payments "$payments" -inflight "$inflight" -prefix "$prefix") ;;
    stripe-go) cmd=("$gopeer" -client stripe-go -url "$url" -payments "$payments" -inflight "$inflight" -prefix "$prefix") ;;
    *) echo "BENCH-ERROR: unknown client $client" >&2; return ;;
  esac
  note "$client $scenario inflight=$inflight payments=$payments"
  line=$(timeout 600 "${cmd[@]}" 2> "$log" | tail -n1) || rc=$?
  # A fresh database per SQLite run; PostgreSQL keeps its rows (keys are unique per run).
  [ "$client" = payretry-sqlite ] && rm -f "$work/ledger.db"*
  admin GET truth > "$work/truth.json" || echo '{}' > "$work/truth.json"
  admin GET stats > "$work/stats.json" || echo '{}' > "$work/stats.json"
  python3 "$here/report.py" annotate --line "$line" --rc "$rc" --client "$client" --scenario "$scenario" \
    --inflight "$inflight" --payments "$payments" --latency-ms "$current_latency" \
    --truth "$work/truth.json" --stats "$work/stats.json" --log "$log" >> "$results"
}

payments_for() {
  local n=$((per_slot * $1))
  [ "$n" -lt "$min_payments" ] && n=$min_payments
  [ "$n" -gt "$max_payments" ] && n=$max_payments
  echo "$n"
}

current_latency=$latency_ms
for scenario in $scenarios; do
  configure "$scenario" "$latency_ms"
  for inflight in $inflight_levels; do
    payments=$(payments_for "$inflight")
    for client in $clients; do run_one "$client" "$scenario" "$inflight" "$payments"; done
  done
done

# ---- scaling: CPU per payment at 10 vs 1,000 in flight comes from the table; RSS curves here --
# Three curves: the memory ledger as configured by default (it keeps up to 100,000 settled
# rows, about 1 KB each, so it grows until that cap and is flat after it: a run of more than
# 100,000 payments shows both), the memory ledger capped at a tenth of the run (flat once that
# many are settled), and SQLite on /dev/shm (the engine alone: the ledger's data is in the
# file, and tmpfs keeps fdatasync out of a memory measurement).
rss_args=()
if [ "$rss_payments" -gt 0 ]; then
  configure none 0
  current_latency=0
  every=$((rss_payments / 10))
  shm=/dev/shm
  [ -d "$shm" ] && [ -w "$shm" ] || shm=$work
  for ledger in memory memory-capped sqlite; do
    admin POST reset >/dev/null
    rss_file=$work/rss-$ledger.jsonl
    url_l=memory:
    label=memory
    if [ "$ledger" = memory-capped ]; then
      url_l="memory:?max_settled=$every"
      label=$url_l
    elif [ "$ledger" = sqlite ]; then
      db=$(mktemp -u "$shm/payretry-bench-XXXXXX.db")
      url_l=sqlite://$db
      label=sqlite
    fi
    note "payretry-$ledger RSS across $rss_payments payments (100 in flight, latency 0, no faults)"
    timeout 900 "$driver" --url "$url" --payments "$rss_payments" --inflight 100 --prefix "rss-$ledger-" --mode async \
      --ledger "$url_l" --rss-every "$every" > "$rss_file" 2> "$work/rss-$ledger.log" ||
      note "RSS run failed: $(tail -n2 "$work/rss-$ledger.log")"
    [ "$ledger" = sqlite ] && rm -f "$db"*
    rss_args+=(--rss "$label=$rss_file")
  done
  admin POST reset >/dev/null
fi

fsync_rates="$fsync_rates $(python3 "$here/report.py" fsync --dir "$work")"
machine=$(machine_line)
python3 "$here/report.py" table --results "$results" "${rss_args[@]}" --command "$command_line" \
  --machine "$machine" --latency-ms "$latency_ms" --skipped "$skipped" --fsync-rate "$fsync_rates"
