#!/bin/sh
# Every scenario of the group-commit attack, seeded (GCA_SEED or $1, default
# 1), against the library in PAYRETRY_BUILD (default /work/main/build-attack;
# build its `payretry` target first). Exits 1 while a scenario says BROKEN.
# s_fail's disk-full mode mounts a tmpfs and needs root; its lock mode does not.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SEED=${1:-${GCA_SEED:-1}}
BUILD=${PAYRETRY_BUILD:-/work/main/build-attack}
REPO=$(git -C "$HERE" rev-parse --show-toplevel)
BIN=$(mktemp -d /tmp/gca_bin.XXXXXX)
cc -O1 -g -Wall -Wextra -std=c99 -I "$REPO/include" -I "$BUILD/include" "$HERE/cancel.c" -o "$BIN/cancel" \
  -L "$BUILD/src/api" -lpayretry -Wl,-rpath,"$BUILD/src/api" -lpthread || exit 2
export PAYRETRY_BUILD="$BUILD" GCA_CANCEL_BIN="$BIN/cancel"
status=0
for s in "s_crash.py --measure-groups" "s_fail.py" "s_group.py" "s_cancel.py"; do
  echo "== $s (seed $SEED)"
  # shellcheck disable=SC2086
  nice -n 10 python3 "$HERE"/$s --seed "$SEED" || status=1
done
rm -rf "$BIN"
exit $status
