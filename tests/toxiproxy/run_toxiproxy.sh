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

. "$(dirname "$0")/../lib/skip_or_fail.sh"
missing() { skip_or_fail PAYRETRY_REQUIRE_PG "$@"; }
. "$(dirname "$0")/../lib/go_tool.sh"

[ -n "${PAYRETRY_TEST_PG_URL:-}" ] || missing "PAYRETRY_TEST_PG_URL is not set (tests/ledger/pg_cluster.sh starts a server)"
go_tool "$build/toxiproxy-$version" "github.com/Shopify/toxiproxy/v2/cmd/server@$version" server

port=$(free_port)
log=$(mktemp)
"$TOOL" -host 127.0.0.1 -port "$port" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$log"' EXIT
wait_listening "$port" "$pid" "$log" toxiproxy
export TOXIPROXY_URL="http://127.0.0.1:$port"
"$binary" --gtest_filter="$filter"
