#!/bin/sh
# Shows that the checks can fail: builds the library with mutants.patch (the
# bugs the group commit must not have, each switched on by GCA_MUTANT) in a
# copy of HEAD outside the repo, then runs the scenario that must catch each:
#   early   the group is answered before its COMMIT (committed when the next
#           group begins): s_crash must find events answered 2xx missing;
#   failok  a group whose commit broke is answered as if it had committed:
#           s_fail (disk full) must find events answered 2xx missing;
#   nodup   a second copy of an event is not seen as a duplicate:
#           s_group must find an event applied twice.
# Each line ends "caught" or "MISSED". usage: mutants.sh [SEED]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(git -C "$HERE" rev-parse --show-toplevel)
SEED=${1:-1}
TREE=${GCA_MUTANT_TREE:-/tmp/gca_mutant_tree}
if [ ! -f "$TREE/build/src/api/libpayretry.so" ]; then
  rm -rf "$TREE" && mkdir -p "$TREE"
  git -C "$REPO" archive HEAD | tar -x -C "$TREE"
  (cd "$TREE" && patch -p1 < "$HERE/mutants.patch") || exit 2
  nice -n 10 cmake -S "$TREE" -B "$TREE/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 2
  nice -n 10 cmake --build "$TREE/build" --target payretry -j2 >/dev/null || exit 2
fi
export PAYRETRY_LIB="$TREE/build/src/api/libpayretry.so"
verdict() { if grep -q '^\[BROKEN\]' "$1"; then echo caught; else echo MISSED; fi; }
missed=0
run() {
  name=$1; shift
  out=$(mktemp)
  GCA_MUTANT=$name nice -n 10 python3 "$@" > "$out" 2>&1
  v=$(verdict "$out")
  echo "mutant $name: $v ($(grep -c '^PROBLEM' "$out") problem lines; $(grep '^\[' "$out" | tail -1))"
  grep -m2 '^PROBLEM' "$out" | cut -c1-240
  [ "$v" = caught ] || missed=1
  rm -f "$out"
}
run early "$HERE/s_crash.py" --seed "$SEED" --epochs 1 --kills 15
if [ "$(id -u)" = 0 ]; then
  run failok "$HERE/s_fail.py" --seed "$SEED" --mode full --rounds 30
else
  echo "mutant failok: not run (s_fail's disk-full mode needs root)"
fi
run nodup "$HERE/s_group.py" --seed "$SEED" --rounds 12
exit $missed
