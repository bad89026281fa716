#!/usr/bin/env bash
# Runs toxiproxy tests: installs toxiproxy (once, cached under the build
# dir), starts it on loopback, runs the given tests of the GoogleTest
# binary against it, and stops it.
#
#   run_toxiproxy.sh BUILD_DIR TEST_BINARY GTEST_FILTER
#
# Needs Go (GO, or `go` on PATH) and the test PostgreSQL
# (PAYRETRY_TEST_PG_URL). Without either the tests are skipped (exit 77),
# unless PAYRETRY_REQUIRE_PG=1: then that is a failure.
set -uo pipefail

build=$1 binary=$2 filter=$3
version=v2.5.0
bin_dir="$build/toxiproxy-$version"
server="$bin_dir/server"

missing() {
  if [ "${PAYRETRY_REQUIRE_PG:-}" = 1 ]; then
    echo "FAIL: PAYRETRY_REQUIRE_PG=1 but $*" >&2
    exit 1
  fi
  echo "skipped: $*"
  exit 77
}

[ -n "${PAYRETRY_TEST_PG_URL:-}" ] || missing "PAYRETRY_TEST_PG_URL is not set (tests/ledger/pg_cluster.sh starts a server)"

if [ ! -x "$server" ]; then
  go=${GO:-$(command -v go || true)}
  [ -n "$go" ] && [ -x "$go" ] || missing "go is not installed: toxiproxy cannot be built"
  mkdir -p "$bin_dir"
  # One install at a time when tests run in parallel.
  (
    flock 9
    [ -x "$server" ] || GOBIN="$bin_dir" "$go" install "github.com/Shopify/toxiproxy/v2/cmd/server@$version"
  ) 9>"$bin_dir.lock" || missing "go install github.com/Shopify/toxiproxy/v2/cmd/server@$version failed"
  [ -x "$server" ] || missing "go install left no toxiproxy server in $bin_dir"
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
"$server" -host 127.0.0.1 -port "$port" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "FAIL: toxiproxy did not start" >&2; exit 1; }
  sleep 0.05
done
export TOXIPROXY_URL="http://127.0.0.1:$port"
"$binary" --gtest_filter="$filter"
