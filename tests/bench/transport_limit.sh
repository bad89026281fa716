#!/usr/bin/env bash
# The engine's own cost at the transport limit: a throwaway nginx with one worker on
# loopback answers every POST 200 at once, so no provider latency hides what payretry spends per
# payment. Rows, at each in-flight level, in interleaved rounds (every row once per round, so a
# burst of load from elsewhere on the machine hits all rows alike):
#   wrk              the box's HTTP limit (one wrk thread, tests/bench/sim_post.lua)
#   curl             raw libcurl multi (tests/bench/curl_multi_baseline): the transport limit
#   memory           payretry_driver --mode async (the concurrent engine), memory ledger
#   memory+log       the same with the attempt log written to a file
#   sqlite           the same with a SQLite ledger in a file on disk (synchronous=FULL)
#   sqlite+log       SQLite and the attempt log
#   memory-threads   payretry_driver --mode thread: the blocking pay_submit, one thread per payment
#                    in flight, memory ledger (the create in the shape operations have)
#   memory-threads+keys  the same, the caller giving no key, so that payretry makes each one
#                    (--keys payretry), as it does for every operation
#   memory-refund    payretry_driver --mode refund: the blocking pay_submit_operation, a partial
#                    refund of a payment made before the run (the ledger's guard included), as many
#                    threads; memory ledger
#                    (both memory rows keep up to 1,000,000 settled rows, memory:?max_settled=1000000:
#                    the default 100,000 would drop the payments made for the refunds)
#   sqlite-threads, sqlite-threads+keys, sqlite-refund   the same three with the SQLite ledger
#                    (the threads and refund rows are not in the default --rows: name them)
# Each runner keeps starting payments for --warmup + --seconds and counts only those that
# completed in the --seconds after the warm-up (bench_common.hpp, --seconds). Prints, per row,
# medians with min-max across rounds of payments/s and CPU per payment, the ratios to raw curl
# multi, every payment's outcome summed over the rounds (all must be SUCCEEDED), nginx's CPU
# per request, and /proc/loadavg before and after each run. Benchmarks print, never assert.
#
# usage: tests/bench/transport_limit.sh [options]
#   --rounds N          interleaved rounds (default 3)
#   --seconds T         timed window per run (default 10)
#   --warmup W          seconds before the window, not counted (default 2)
#   --inflight "LIST"   in-flight levels (default "50 256"; up to 10000: nginx takes 16,384
#                       connections, and each client needs one descriptor per payment in flight)
#   --rows "LIST"       of: wrk curl memory memory+log sqlite sqlite+log (default: these), and
#                       memory-threads memory-threads+keys memory-refund sqlite-threads
#                       sqlite-threads+keys sqlite-refund
#   --refund-pool N     payments made before each memory-refund run, one refund each (default
#                       150000); a run that uses them all up reports "pool_exhausted" in its reasons
#   --refund-pool-sqlite N   the same before each sqlite-refund run (default 20000: the blocking
#                       path with SQLite refunds ~20x slower, each refund waiting for its fsyncs)
#   --build-dir DIR     (default build-bench, Release); --no-build: use what is built there
#   --db-dir DIR        where the SQLite ledger and the attempt log go (default: a temp dir
#                       under /var/tmp, on disk; not /tmp, which may be tmpfs)
#   --out DIR           keep results.jsonl, nginx's config and the logs there
#   --answer-bytes N    pad nginx's JSON answer to N bytes of body (default: no padding, 74
#                       bytes); a Stripe PaymentIntent is 2-4 KB, so 3000 is closer to a real
#                       provider's answer
#   --tls               nginx answers over https (TLS 1.3, a throwaway self-signed certificate that
#                       the clients are given as their CA), as every real provider does
#   --compare-lib DIR   an A/B of two builds of libpayretry: every payretry row also runs as
#                       ROW@other with LD_LIBRARY_PATH=DIR (e.g. a copy of an older
#                       build-bench/src/api/libpayretry.so*), right before or after ROW in each
#                       round (the order alternates), and the table adds, per row, the median of
#                       the per-round ratios of this build to the other
#   --compare-env VAR=VALUE  the same A/B with ROW@other run under this environment setting
#                       instead (or as well, with --compare-lib): e.g.
#                       LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 for another malloc
# Needs nginx (installed with apt-get if missing: nginx-light, else nginx; sudo if not root)
# and wrk (the wrk row is skipped without it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/bench_lib.sh"
command_line="tests/bench/transport_limit.sh${*:+ $*}"

rounds=3
seconds=10
warmup=2
inflight_levels="50 256"
rows="wrk curl memory memory+log sqlite sqlite+log"
build=1
build_dir=$root/build-bench
db_parent=/var/tmp
out_dir=""
compare_lib=""
compare_env=""
answer_bytes=0
tls=0
refund_pool=150000
refund_pool_sqlite=20000
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --inflight) inflight_levels=$2; shift ;;
    --rows) rows=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --no-build) build=0 ;;
    --db-dir) db_parent=$2; shift ;;
    --out) out_dir=$2; shift ;;
    --answer-bytes) answer_bytes=$2; shift ;;
    --tls) tls=1 ;;
    --refund-pool) refund_pool=$2; shift ;;
    --refund-pool-sqlite) refund_pool_sqlite=$2; shift ;;
    --compare-lib) compare_lib=$(cd "$2" && pwd); shift ;;
    --compare-env)
      case "$2" in [A-Za-z_]*=*) compare_env=$2 ;;
        *) echo "transport_limit.sh: --compare-env takes VAR=VALUE, not $2" >&2; exit 2 ;; esac
      shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "transport_limit.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

note() { echo "[transport] $*" >&2; }

# ---- tools -------------------------------------------------------------------------------------
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
nginx_bin=$(command -v nginx || true)
[ -n "$nginx_bin" ] || { [ -x /usr/sbin/nginx ] && nginx_bin=/usr/sbin/nginx; } || true
if [ -z "$nginx_bin" ]; then
  note "installing nginx"
  as_root apt-get install -y nginx-light >&2 || as_root apt-get install -y nginx >&2 ||
    { as_root apt-get update >&2 && as_root apt-get install -y nginx-light >&2; } ||
    { echo "BENCH-ERROR: nginx is not installed and could not be" >&2; exit 1; }
  nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
fi
wrk_bin=$(command -v wrk || true)
if [ -z "$wrk_bin" ] && [[ " $rows " == *" wrk "* ]]; then
  as_root apt-get install -y wrk >&2 || true
  wrk_bin=$(command -v wrk || true)
  [ -n "$wrk_bin" ] || note "no wrk: the wrk row is skipped"
fi

[ "$build" = 1 ] && build_runners "$build_dir" curl_multi_baseline payretry_driver
curl_bin=$build_dir/tests/bench/curl_multi_baseline
driver=$build_dir/tests/bench/payretry_driver
require_built "$curl_bin" "$driver"

# ---- a throwaway nginx: one worker, keep-alive without limit, 200 at once -----------------------
work=$(mktemp -d)
db_dir=$(mktemp -d "$db_parent/payretry-transport.XXXXXX")
results=$work/results.jsonl
: > "$results"
nginx_pid=""
cleanup() {
  stop_processes "$nginx_pid"
  if [ -n "$out_dir" ]; then mkdir -p "$out_dir" && cp -r "$work"/. "$out_dir"/; fi
  rm -rf "$work" "$db_dir"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/nginx/logs"
# The drivers POST to /v1/payments (payretry_driver sets create_path so; curl_multi_baseline and
# sim_post.lua use the same path). The answer is what the stripe profile reads as a PaymentIntent
# that succeeded: 2xx with a JSON body ("malformed_2xx" would be retried), id at $.id and status
# at $.status. --answer-bytes pads it with a field no one reads.
answer='{"id":"pi_transport_limit","object":"payment_intent","status":"succeeded"}'
pad=$((answer_bytes - ${#answer} - 13))
if [ "$pad" -gt 0 ]; then answer="${answer%\}},\"padding\":\"$(head -c "$pad" /dev/zero | tr '\0' x)\"}"; fi
scheme=http listen_tls="" curl_ca=() client_ca=()
if [ "$tls" = 1 ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$work/nginx/key.pem" -out "$work/nginx/cert.pem" 2> /dev/null ||
    { echo "BENCH-ERROR: openssl could not make a certificate" >&2; exit 1; }
  scheme=https
  listen_tls=" ssl; ssl_certificate $work/nginx/cert.pem; ssl_certificate_key $work/nginx/key.pem"
  curl_ca=(--cacert "$work/nginx/cert.pem")
  client_ca=(--ca-file "$work/nginx/cert.pem")
fi
cat > "$work/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
master_process on;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
worker_rlimit_nofile 20000;
events { worker_connections 16384; }
http {
  access_log off;
  keepalive_timeout 65;
  keepalive_requests 100000000;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  client_body_buffer_size 16k;
  server {
    listen 127.0.0.1:$port$listen_tls;
    location /v1/payments {
      default_type application/json;
      return 200 '$answer';
    }
    # A refund answered as Stripe's succeeded one reads (its status map: succeeded).
    location /v1/refunds {
      default_type application/json;
      return 200 '{"id":"re_transport_limit","object":"refund","status":"succeeded"}';
    }
  }
}
EOF
"$nginx_bin" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/logs/error.log" > "$work/nginx/out" 2>&1 &
nginx_pid=$!
url=$scheme://127.0.0.1:$port
for _ in $(seq 100); do
  curl -sf "${curl_ca[@]}" -o /dev/null -X POST -d '{}' "$url/v1/payments" && break
  sleep 0.05
done
reply=$(curl -sf "${curl_ca[@]}" -X POST -d '{}' "$url/v1/payments") ||
  { echo "BENCH-ERROR: nginx did not start: $(cat "$work/nginx/out" "$work/nginx/logs/error.log")" >&2; exit 1; }
note "nginx on $url answers ${#reply} bytes: ${reply:0:100}"
worker_pid=$(pgrep -P "$nginx_pid" | head -n1 || true)

run_no=0
run_one() {  # round row inflight
  local round=$1 row=$2 inflight=$3 rc=0 line
  run_no=$((run_no + 1))
  local log=$work/run-$run_no.log prefix="t$run_no-" cmd=() env_cmd=()
  # ROW@other: the same row over the --compare-lib build of libpayretry and/or under --compare-env.
  case "$row" in
    *@other) env_cmd=(env ${compare_lib:+"LD_LIBRARY_PATH=$compare_lib"} ${compare_env:+"$compare_env"}) ;;
  esac
  local base=(--url "$url" --seconds "$seconds" --warmup "$warmup" --inflight "$inflight" --prefix "$prefix"
              "${client_ca[@]}")
  rm -f "$db_dir"/ledger.db* "$db_dir"/attempts.log
  case "${row%@other}" in
    wrk)
      [ -n "$wrk_bin" ] || return 0
      cmd=(python3 "$here/report.py" wrk --wrk "$wrk_bin" --connections "$inflight" --seconds "$seconds"
           --script "$here/sim_post.lua" --url "$url/v1/payments") ;;
    curl) cmd=("$curl_bin" "${base[@]}") ;;
    memory) cmd=("$driver" "${base[@]}" --mode async --ledger memory:) ;;
    memory+log) cmd=("$driver" "${base[@]}" --mode async --ledger memory: --log "$db_dir/attempts.log") ;;
    sqlite) cmd=("$driver" "${base[@]}" --mode async --ledger "sqlite://$db_dir/ledger.db") ;;
    sqlite+log) cmd=("$driver" "${base[@]}" --mode async --ledger "sqlite://$db_dir/ledger.db"
                     --log "$db_dir/attempts.log") ;;
    memory-threads) cmd=("$driver" "${base[@]}" --mode thread --ledger "memory:?max_settled=1000000") ;;
    memory-threads+keys) cmd=("$driver" "${base[@]}" --mode thread --keys payretry
                              --ledger "memory:?max_settled=1000000") ;;
    memory-refund) cmd=("$driver" "${base[@]}" --mode refund --payments "$refund_pool"
                   --ledger "memory:?max_settled=1000000") ;;
    sqlite-threads) cmd=("$driver" "${base[@]}" --mode thread --ledger "sqlite://$db_dir/ledger.db") ;;
    sqlite-threads+keys) cmd=("$driver" "${base[@]}" --mode thread --keys payretry
                              --ledger "sqlite://$db_dir/ledger.db") ;;
    sqlite-refund) cmd=("$driver" "${base[@]}" --mode refund --payments "$refund_pool_sqlite"
                        --ledger "sqlite://$db_dir/ledger.db") ;;
    *) echo "BENCH-ERROR: unknown row $row" >&2; return 0 ;;
  esac
  note "round $round: $row, $inflight in flight"
  local load0 load1 ncpu0 ncpu1 log_lines=""
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  ncpu0=$(cpu_seconds "$worker_pid")
  line=$(timeout $((seconds * 4 + warmup + 60)) "${env_cmd[@]}" "${cmd[@]}" 2> "$log" | tail -n1) || rc=$?
  ncpu1=$(cpu_seconds "$worker_pid")
  load1=$(cut -d' ' -f1-3 /proc/loadavg)
  [ -f "$db_dir/attempts.log" ] && log_lines=$(wc -l < "$db_dir/attempts.log")
  python3 "$here/report.py" transport-annotate --line "$line" --rc "$rc" --log "$log" --row "$row" \
    --round "$round" --inflight "$inflight" --load-before "$load0" --load-after "$load1" \
    --server-cpu "$(awk -v a="$ncpu0" -v b="$ncpu1" 'BEGIN { print b - a }')" \
    --attempt-log-lines "${log_lines:-0}" >> "$results"
  rm -f "$db_dir"/ledger.db* "$db_dir"/attempts.log
}

# A payretry row with --compare-lib or --compare-env runs beside ROW@other, the order alternating
# by round.
run_row() {  # round row inflight
  local round=$1 row=$2 inflight=$3 pair=("$2") r
  case "$row" in memory*|sqlite*) [ -n "$compare_lib$compare_env" ] && pair=("$row" "$row@other") ;; esac
  [ $((round % 2)) = 0 ] && [ ${#pair[@]} = 2 ] && pair=("${pair[1]}" "${pair[0]}")
  for r in "${pair[@]}"; do run_one "$round" "$r" "$inflight"; done
}

for round in $(seq "$rounds"); do
  for inflight in $inflight_levels; do
    for row in $rows; do run_row "$round" "$row" "$inflight"; done
  done
done

machine=$(machine_line)
python3 "$here/report.py" transport-table --results "$results" --command "$command_line" --machine "$machine" \
  --date "$(date -u '+%Y-%m-%d %H:%M UTC')" --nginx "$("$nginx_bin" -v 2>&1 | sed 's/^nginx version: //')" \
  --wrk "${wrk_bin:+$("$wrk_bin" -v 2>&1 | head -n1 | cut -d' ' -f1-2)}" --db-dir "$db_parent" \
  --compare-lib "$compare_lib" --compare-env "$compare_env"
