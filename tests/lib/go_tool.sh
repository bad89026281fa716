# Shared by the tests that run a Go program no one here wrote (toxiproxy,
# stripe-mock): installs it once under the build dir with `go install`,
# picks a free loopback port, and waits for the program to listen.
# Sourced. The caller defines missing() (skip_or_fail.sh: exit 77 to skip, or fail when the
# tool is required).

# go_tool BIN_DIR MODULE@VERSION BINARY: installs the tool unless BIN_DIR
# already holds BINARY; sets TOOL to its path. One install at a time when
# tests run in parallel.
go_tool() {
  local bin_dir=$1 module=$2 binary=$3
  TOOL="$bin_dir/$binary"
  [ -x "$TOOL" ] && return 0
  local go=${GO:-$(command -v go || true)}
  [ -n "$go" ] && [ -x "$go" ] || missing "go is not installed: $module cannot be built"
  mkdir -p "$bin_dir"
  (
    flock 9
    [ -x "$TOOL" ] || GOBIN="$bin_dir" "$go" install "$module"
  ) 9>"$bin_dir.lock" || missing "go install $module failed"
  [ -x "$TOOL" ] || missing "go install left no $binary in $bin_dir"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_listening PORT PID LOG NAME: until 127.0.0.1:PORT accepts; fails with
# the program's log if it exits first.
wait_listening() {
  local port=$1 pid=$2 log=$3 name=$4
  for _ in $(seq 1 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "FAIL: $name did not start" >&2; exit 1; }
    sleep 0.05
  done
  cat "$log" >&2
  echo "FAIL: $name is not listening on $port" >&2
  exit 1
}
