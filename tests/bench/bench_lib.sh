# Shell helpers the benchmark scripts share (sourced, not run): building the runners, starting
# the simulator, describing the machine. Each script keeps its own options and report.

# build_runners BUILD_DIR TARGET...: a Release build of the runners, configured on first use.
build_runners() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ] && [ ! -f "$dir/Makefile" ]; then
    cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build "$dir" -j2 --target "$@" >&2
}

# require_built FILE...: stops the benchmark when a runner is missing.
require_built() {
  local b
  for b in "$@"; do
    [ -x "$b" ] || { echo "BENCH-ERROR: $b is not built" >&2; exit 1; }
  done
}

# start_sim SIM OUT_FILE [ARG...]: starts the simulator on a free loopback port; sets sim_pid
# and url (the caller's cleanup kills sim_pid), and defines admin METHOD NAME [BODY].
start_sim() {
  local bin=$1 out=$2 port=""
  shift 2
  "$bin" --port 0 "$@" > "$out" 2>&1 &
  sim_pid=$!
  for _ in $(seq 100); do
    port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out")
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || { echo "BENCH-ERROR: the simulator did not start" >&2; exit 1; }
  url=http://127.0.0.1:$port
}
admin() { curl -sf -X "$1" "$url/__admin/$2" ${3:+-d "$3"}; }

# stop_processes PID...: kills and reaps each; empty ones are skipped.
stop_processes() {
  local p
  for p in "$@"; do
    [ -n "$p" ] || continue
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
}

# start_throwaway_pg NAME: a PostgreSQL of the benchmark's own (tests/ledger/pg_cluster.sh) in
# /tmp/NAME.XXXXXX, not under a 0700 work dir: the server runs as the postgres user when we are
# root. Sets pg_dir and pg_url; fails when the server did not start.
start_throwaway_pg() {
  pg_dir=$(mktemp -d "/tmp/$1.XXXXXX")
  chmod 755 "$pg_dir"
  pg_url=$(bash "$root/tests/ledger/pg_cluster.sh" start "$pg_dir/data" | tail -n1)
}

# destroy_throwaway_pg: stops and removes what start_throwaway_pg made, if anything.
destroy_throwaway_pg() {
  [ -n "${pg_dir:-}" ] || return 0
  bash "$root/tests/ledger/pg_cluster.sh" destroy "$pg_dir/data" >/dev/null 2>&1 || true
  rm -rf "$pg_dir"
}

# cpu_seconds PID...: CPU seconds (user + system) so far of each PID, of its children alive now,
# and of the children it has reaped, summed (0 for none; empty PIDs are skipped). Counting the
# reaped ones keeps a server whose workers come and go whole: PostgreSQL's postmaster reaps
# its backends. A process that is gone counts nothing.
cpu_seconds() {
  local p
  for p in "$@"; do
    [ -n "$p" ] || continue
    echo "$p"
    pgrep -P "$p" || true
  done | while read -r p; do cat "/proc/$p/stat" 2>/dev/null || true; done |
    # After "PID (name) ", fields 12-15 are utime stime cutime cstime, in clock ticks.
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); t += $12 + $13 + $14 + $15 } END { printf "%.2f\n", t / hz }'
}

# machine_line: cores, CPU model and kernel, for a report's header.
machine_line() {
  echo "$(nproc) cores, $(sed -n 's/^model name\s*:\s*//p' /proc/cpuinfo | head -n1), $(uname -sr)"
}
