#!/bin/sh
# run_tests.sh BUILD_DIR: installs that build into a temporary prefix and runs
# `go vet` and `go test -race` of the Go binding against the installed
# library (not the build tree), with the simulator built there; then builds
# and runs testdata/signing_consumer, a program in a module of its own copied
# out of the repository, which reaches the binding through a replace
# directive as a user's program would, and signs every request of its
# payments and lookups in its request hook (payretry-sim --hmac-secret).
# Nothing runs with LD_LIBRARY_PATH: every program (the test binaries, the
# consumer) records the prefix's lib folder as its rpath through CGO_LDFLAGS,
# as the binding's package comment tells a user to.
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
unset LD_LIBRARY_PATH
export CGO_LDFLAGS="-Wl,-rpath,$(pkg-config --variable=libdir payretry)${CGO_LDFLAGS:+ $CGO_LDFLAGS}"

cd "$here"
"$go" vet ./...
"$go" test -race -count=1 ./...

consumer=$(mktemp -d "${TMPDIR:-/tmp}/payretry-go-consumer.XXXXXX")
trap 'rm -rf "$prefix" "$consumer"' EXIT INT TERM
cp -R "$here/testdata/signing_consumer/." "$consumer/"
cd "$consumer"
"$go" mod edit -replace "github.com/payretry/payretry/bindings/go=$here"
"$go" vet ./...
"$go" build -race -o signing_consumer .
# This prefix's library, not some other install's.
line=$(ldd ./signing_consumer | grep 'libpayretry\.so' || true)
loaded=$(echo "$line" | awk '{print $3}')
if [ ! -f "$loaded" ] || [ "$(readlink -f "$loaded")" != "$(readlink -f "$libdir/libpayretry.so.0")" ]; then
  echo "run_tests.sh: the consumer should load libpayretry from $libdir (its rpath), not:$line" >&2
  exit 1
fi
./signing_consumer
