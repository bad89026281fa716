#!/usr/bin/env bash
# Runs the Stripe conformance tests against Stripe's own mock server
# (stripe-mock, built from Stripe's OpenAPI document): installs it once with
# `go install` (cached under the build dir), starts it on a free loopback
# port, runs the given tests of the GoogleTest binary, and stops it.
#
#   run_stripe_mock.sh BUILD_DIR TEST_BINARY GTEST_FILTER
#
# Needs Go (GO, or `go` on PATH) and the Go module proxy. Without them the
# tests are skipped (exit 77), unless PAYRETRY_REQUIRE_MOCKS=1 (CI): then
# that is a failure.
set -uo pipefail

build=$1 binary=$2 filter=$3
version=v0.203.0
bin_dir="$build/stripe-mock-$version"
server="$bin_dir/stripe-mock"

missing() {
  if [ "${PAYRETRY_REQUIRE_MOCKS:-}" = 1 ]; then
    echo "FAIL: PAYRETRY_REQUIRE_MOCKS=1 but $*" >&2
    exit 1
  fi
  echo "skipped: $*"
  exit 77
}

if [ ! -x "$server" ]; then
  go=${GO:-$(command -v go || true)}
  [ -n "$go" ] && [ -x "$go" ] || missing "go is not installed: stripe-mock cannot be built"
  mkdir -p "$bin_dir"
  # One install at a time when tests run in parallel.
  (
    flock 9
    [ -x "$server" ] || GOBIN="$bin_dir" "$go" install "github.com/stripe/stripe-mock@$version"
  ) 9>"$bin_dir.lock" || missing "go install github.com/stripe/stripe-mock@$version failed"
  [ -x "$server" ] || missing "go install left no stripe-mock in $bin_dir"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
log=$(mktemp)
# -https-port 0 would be a random port too; stripe-mock wants one of each.
"$server" -http-port "$port" -https-port "$(free_port)" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 200); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "FAIL: stripe-mock did not start" >&2; exit 1; }
  sleep 0.05
done
export STRIPE_MOCK_URL="http://127.0.0.1:$port"
"$binary" --gtest_filter="$filter"
