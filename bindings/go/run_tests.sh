#!/bin/sh
# run_tests.sh BUILD_DIR: installs that build into a temporary prefix and runs
# `go vet` and `go test -race` of the Go binding against the installed
# library (not the build tree), with the simulator built there.
# PAYRETRY_REQUIRE_BINDINGS=1 is set: a missing piece fails instead of skipping.
set -eu
if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
go=${GO:-go}
command -v "$go" >/dev/null 2>&1 || go=/usr/local/go/bin/go

prefix_tag=go
. "$here/../installed_prefix.sh"
export GOTOOLCHAIN=local CGO_ENABLED=1
# Go's build cache does not hash pkg-config's answer, so a binding compiled
# against another prefix would be reused (with its -L to that prefix). Naming
# this run's prefix in CGO_CPPFLAGS (which the cache does hash) forces a
# rebuild of the cgo packages while the rest of the cache stays warm.
export CGO_CPPFLAGS="-I$prefix/include${CGO_CPPFLAGS:+ $CGO_CPPFLAGS}"

cd "$here"
"$go" vet ./...
"$go" test -race -count=1 ./...
