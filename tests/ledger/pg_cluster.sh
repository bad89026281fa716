#!/usr/bin/env bash
# A throwaway PostgreSQL server for the ledger tests.
#
#   pg_cluster.sh start DIR    initdb a cluster in DIR (once), start it on
#                              127.0.0.1 on a free port, create the database
#                              payretry_test, print its URL
#   pg_cluster.sh stop DIR     stop it (fast shutdown); no-op if not running
#   pg_cluster.sh url DIR      print the URL of the cluster in DIR
#   pg_cluster.sh status DIR   exit 0 when it is running
#   pg_cluster.sh destroy DIR  stop it and delete DIR
#
# Trust authentication, for 127.0.0.1 and DIR's unix socket only: never point
# this at anything but a scratch directory. Durability settings stay at
# PostgreSQL's defaults (fsync, synchronous_commit on), so the ledger's
# commits in the tests cost what they cost in production.
#
# initdb refuses to run as root: as root, the server runs as the `postgres`
# system user (created if missing) and DIR is handed to it. Every command is
# idempotent; a failed start leaves nothing running.
#
# Environment: PG_BINDIR (where initdb and pg_ctl are; default: the newest
# /usr/lib/postgresql/*/bin), PAYRETRY_PG_MAX_CONNECTIONS (default 400).
set -euo pipefail

die() { echo "pg_cluster.sh: $*" >&2; exit 1; }

[ $# -eq 2 ] || die "usage: pg_cluster.sh start|stop|url|status|destroy DIR"
cmd=$1
dir=$2
case "$dir" in /*) ;; *) dir="$(pwd)/$dir" ;; esac
data="$dir/data"
sock="$dir/sock"
db=payretry_test

find_bindir() {
  if [ -n "${PG_BINDIR:-}" ]; then
    [ -x "$PG_BINDIR/initdb" ] || die "PG_BINDIR=$PG_BINDIR has no initdb"
    echo "$PG_BINDIR"; return
  fi
  # The glob sorts 10 before 9: pick the highest major version explicitly.
  local best
  best=$(for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && echo "$d"; done |
         sort -t/ -k5,5n | tail -n1)
  [ -n "$best" ] || die "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)"
  echo "$best"
}

# The server's OS user: ourselves, or `postgres` when we are root.
if [ "$(id -u)" -eq 0 ]; then
  pg_user=postgres
else
  pg_user=$(id -un)
fi

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$pg_user" -- "$@"
  else
    "$@"
  fi
}

ensure_user() {
  [ "$(id -u)" -eq 0 ] || return 0
  command -v runuser >/dev/null || die "runuser (util-linux) is needed to run the server as $pg_user"
  id -u "$pg_user" >/dev/null 2>&1 && return 0
  useradd -r -M -d /var/lib/postgresql -s /bin/bash "$pg_user" ||
    id -u "$pg_user" >/dev/null 2>&1 || die "cannot create the $pg_user user"
}

running() {
  [ -f "$data/postmaster.pid" ] || return 1
  as_pg "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1
}

url_of() { echo "postgresql://$pg_user@127.0.0.1:$1/$db"; }

port_free() {
  # Something answers on 127.0.0.1:$1 -> taken.
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

pick_port() {
  local p
  if command -v python3 >/dev/null; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    return
  fi
  for _ in $(seq 1 50); do
    p=$(( 20000 + RANDOM % 40000 ))
    port_free "$p" && { echo "$p"; return; }
  done
  die "no free port found"
}

do_stop() {
  [ -d "$data" ] || return 0
  if running; then
    as_pg "$bindir/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null ||
      as_pg "$bindir/pg_ctl" -D "$data" -m immediate -w -t 30 stop >/dev/null || true
  fi
  running && die "the server in $data did not stop"
  return 0
}

create_db() {
  local have
  have=$(as_pg "$bindir/psql" -h "$sock" -p "$1" -U "$pg_user" -d postgres -tAXq \
           -c "SELECT 1 FROM pg_database WHERE datname = '$db'") || return 1
  [ "$have" = 1 ] || as_pg "$bindir/createdb" -h "$sock" -p "$1" -U "$pg_user" "$db"
}

do_start() {
  ensure_user
  mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then
    chown "$pg_user" "$dir"
    chmod 700 "$dir"
    # The server user must reach DIR through its parents.
    as_pg test -x "$dir" || die "$pg_user cannot enter $dir (a parent directory is closed to it)"
  fi
  if running; then
    url_of "$(cat "$dir/port")"
    return 0
  fi

  if [ ! -f "$data/PG_VERSION" ]; then
    rm -rf "$data"
    as_pg mkdir -p "$data" "$sock"
    as_pg "$bindir/initdb" -D "$data" -U "$pg_user" --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync \
      >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    as_pg sh -c "cat > '$data/pg_hba.conf'" <<'EOF'
# payretry tests: trust, on the unix socket and 127.0.0.1 only.
local all all              trust
host  all all 127.0.0.1/32 trust
EOF
    as_pg sh -c "echo \"include_if_exists = 'payretry.conf'\" >> '$data/postgresql.conf'"
  fi
  as_pg mkdir -p "$sock"

  # Keep the port across restarts when it is still free, so that a URL
  # handed out before a stop works again after the next start.
  local port="" tries
  [ -f "$dir/port" ] && port=$(cat "$dir/port")
  for tries in 1 2 3 4 5; do
    if [ -z "$port" ] || ! port_free "$port"; then port=$(pick_port); fi
    as_pg sh -c "cat > '$data/payretry.conf'" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$sock'
max_connections = ${PAYRETRY_PG_MAX_CONNECTIONS:-400}
logging_collector = off
EOF
    echo "$port" > "$dir/port"
    local seen=0
    [ -f "$dir/server.log" ] && seen=$(wc -l < "$dir/server.log")
    if as_pg "$bindir/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start >/dev/null 2>&1; then
      break
    fi
    # Lost the race for the port, or something worse: show the log, retry.
    do_stop || true
    tail -n +"$((seen + 1))" "$dir/server.log" 2>/dev/null | tail -n 5 >&2 || true
    port=""
    [ "$tries" -lt 5 ] || die "the server did not start (log: $dir/server.log)"
  done
  # From here on a failure must not leave the server behind.
  if ! create_db "$port"; then
    do_stop || true
    die "could not create the database $db (log: $dir/server.log)"
  fi
  url_of "$port" > "$dir/url"
  cat "$dir/url"
}

bindir=$(find_bindir)
case "$cmd" in
  start) do_start ;;
  stop) do_stop ;;
  url) [ -f "$dir/port" ] || die "no cluster in $dir"; url_of "$(cat "$dir/port")" ;;
  status) running ;;
  destroy) do_stop; rm -rf "$dir" ;;
  *) die "unknown command $cmd (start|stop|url|status|destroy)" ;;
esac
