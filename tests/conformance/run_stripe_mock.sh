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

. "$(dirname "$0")/../lib/skip_or_fail.sh"
missing() { skip_or_fail PAYRETRY_REQUIRE_MOCKS "$@"; }
. "$(dirname "$0")/../lib/go_tool.sh"

go_tool "$build/stripe-mock-$version" "github.com/stripe/stripe-mock@$version" stripe-mock

port=$(free_port)
log=$(mktemp)
# It serves HTTPS on a second port, which the tests do not use.
"$TOOL" -http-port "$port" -https-port "$(free_port)" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$log"' EXIT
wait_listening "$port" "$pid" "$log" stripe-mock
export STRIPE_MOCK_URL="http://127.0.0.1:$port"
"$binary" --gtest_filter="$filter"
