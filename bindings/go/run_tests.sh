#!/bin/sh
# run_tests.sh BUILD_DIR: installs that build into a temporary prefix and runs
# `go vet` and `go test -race` of the Go binding against the installed
# library (not the build tree), with the simulator built there; then builds
# and runs testdata/signing_consumer, a program in a module of its own copied
# out of the repository, which reaches the binding through a replace
# directive as a user's program would, and signs every request of its
# payments and lookups in its request hook (payretry-sim --hmac-secret).
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

consumer=$(mktemp -d "${TMPDIR:-/tmp}/payretry-go-consumer.XXXXXX")
trap 'rm -rf "$prefix" "$consumer"' EXIT INT TERM
cp -R "$here/testdata/signing_consumer/." "$consumer/"
cd "$consumer"
"$go" mod edit -replace "github.com/payretry/payretry/bindings/go=$here"
"$go" vet ./...
"$go" run -race .
