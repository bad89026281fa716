#!/usr/bin/env bash
# The second outside attack on webhook settlement (issue 46): every scenario,
# on the memory and SQLite ledgers, and on PostgreSQL when tests/ledger/
# pg_cluster.sh can start one (ATTACK_PG=0 skips it). Exit status 1 when a
# scenario reports BROKEN.
#
#   PAYRETRY_BUILD  the build whose src/api/libpayretry.so is driven
#                   (default /work/main/build-attack)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
export PAYRETRY_BUILD="${PAYRETRY_BUILD:-$repo/build-attack}"
scratch="$(mktemp -d /tmp/wa2_run.XXXXXX)"
chmod 0755 "$scratch"  # as root, pg_cluster.sh runs the server as user postgres, which must enter it
export ATTACK_SKEW_SO="$scratch/skew.so"
cc -shared -fPIC -O2 -o "$ATTACK_SKEW_SO" "$here/skew.c" -ldl || exit 2

pg_dir=""
if [ "${ATTACK_PG:-1}" != 0 ] && url="$("$repo/tests/ledger/pg_cluster.sh" start "$scratch/pg" 2>"$scratch/pg.log")"; then
  pg_dir="$scratch/pg"
  export ATTACK_PG_URL="$url"
  echo "PostgreSQL ledger: $url"
else
  echo "PostgreSQL ledger: not started (see $scratch/pg.log)"
fi
trap '[ -n "$pg_dir" ] && "$repo/tests/ledger/pg_cluster.sh" destroy "$pg_dir" >/dev/null 2>&1; rm -rf "$scratch"' EXIT

status=0
cd "$here"
for s in s_key_rule.py s_connect.py s_skew.py; do
  echo "==== $s"
  python3 "$s" || status=1
done
exit $status
