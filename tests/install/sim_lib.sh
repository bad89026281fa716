# Sourced by the install tests (bash): start a payretry-sim on a free port.
# The caller stops it (kill "$sim_pid") in its own EXIT trap.

# start_sim WORK_DIR SIM [SIM_ARGS...]: runs SIM --port 0 SIM_ARGS, waits for
# its "listening on 127.0.0.1:PORT" line, sets sim_pid and sim_url.
start_sim() {
  local work=$1 sim=$2 port
  shift 2
  "$sim" --port 0 "$@" > "$work/sim.out" 2>&1 &
  sim_pid=$!
  for _ in $(seq 400); do grep -q listening "$work/sim.out" 2>/dev/null && break; sleep 0.05; done
  port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/sim.out" | head -n1)
  if [ -z "$port" ]; then
    echo "simulator $sim did not start:" >&2
    cat "$work/sim.out" >&2
    return 1
  fi
  sim_url="http://127.0.0.1:$port"
}
