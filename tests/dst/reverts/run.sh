#!/bin/bash
# Takes one rule (a webhook's, an operation's) back out and finds the first failing seed per
# profile and driver, as docs/reliability.md's revert tables were made: in a
# private worktree of HEAD (never this tree), the patch applied, payretry_dst
# rebuilt, CI's command run (40,000 schedules per driver) until its first
# failure, the patch reversed.
#
#   tests/dst/reverts/run.sh WORKTREE PATCH [PROFILE...]
#   tests/dst/reverts/run.sh /tmp/rev tests/dst/reverts/c_kept_event_applies_always.patch stripe adyen
#
# WORKTREE is made with `git worktree add WORKTREE HEAD` when it does not
# exist, and built in WORKTREE/build (RelWithDebInfo, nice, -j2).
set -euo pipefail
wt=$1; patch=$(realpath "$2"); shift 2
profiles=${*:-stripe adyen square checkout_com mollie wechatpay_v3 alipay}
count=${DST_COUNT:-40000}
src=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
[ -d "$wt" ] || git -C "$src" worktree add -q "$wt" HEAD
cp "$src"/tests/dst/*.cpp "$src"/tests/dst/*.hpp "$src"/tests/dst/CMakeLists.txt "$wt"/tests/dst/
git -C "$wt" apply "$patch"
trap 'git -C "$wt" apply -R "$patch"' EXIT
[ -f "$wt/build/build.ninja" ] || cmake -S "$wt" -B "$wt/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
nice cmake --build "$wt/build" -j2 --target payretry_dst >/dev/null
for p in $profiles; do
  for d in blocking concurrent; do
    line=$(nice "$wt/build/tests/dst/payretry_dst" --seed 0 --count "$count" --profile "$p" --driver "$d" \
             --max-failures 1 | grep -m1 'DST FAIL' || true)
    echo "$(basename "$patch") $p $d: ${line:-none in $count}"
  done
done
