#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster on 127.0.0.1 for tests and benchmarks.
#
#   eval "$(bash packages/manager/scripts/start-postgres.sh)"   # exports SBOX_TEST_POSTGRES_URL/_DIR
#   bash packages/manager/scripts/stop-postgres.sh "$SBOX_TEST_POSTGRES_DIR"
#
#   start-postgres.sh [--owner-pid PID] [DIR]
#     --owner-pid: also stop the cluster (and delete DIR) as soon as process PID is gone, so a test run
#     that is killed cannot leave a server behind.
#
# Installs Debian's postgresql when initdb is missing. Only `export` lines go to stdout (also written to
# $DIR/env); progress goes to stderr. Durability is switched off: the cluster holds test data only.
set -euo pipefail

log() { printf 'start-postgres: %s\n' "$*" >&2; }

find_bin() {
  local name=$1 candidate
  for candidate in /usr/lib/postgresql/*/bin/"$name"; do
    if [ -x "$candidate" ]; then printf '%s\n' "$candidate"; return 0; fi
  done
  command -v "$name" 2>/dev/null || return 1
}

if ! find_bin initdb >/dev/null; then
  log "initdb not found: installing postgresql"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends postgresql >&2
fi
INITDB=$(find_bin initdb)
PG_CTL=$(find_bin pg_ctl)

OWNER_PID=
if [ "${1:-}" = "--owner-pid" ]; then
  OWNER_PID=${2:?--owner-pid needs a pid}
  shift 2
fi
DIR=${1:-$(mktemp -d /tmp/sbox-pg-XXXXXX)}
mkdir -p "$DIR"

# initdb refuses to run as root: run the server as the postgres user the package created.
as_owner() { "$@"; }
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/sh postgres
  chown postgres: "$DIR"
  as_owner() { runuser -u postgres -- "$@"; }
fi
chmod 700 "$DIR"

PORT=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')

start=$(date +%s%N)
as_owner "$INITDB" -A trust -U postgres --no-sync -E UTF8 --locale=C -D "$DIR/data" >"$DIR/initdb.log" 2>&1 || {
  cat "$DIR/initdb.log" >&2
  exit 1
}
as_owner "$PG_CTL" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
  -o "-p $PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
  start >&2 || {
  cat "$DIR/server.log" >&2
  exit 1
}
log "cluster in $DIR on port $PORT ready in $(( ($(date +%s%N) - start) / 1000000 )) ms"

if [ -n "$OWNER_PID" ]; then
  # Detached from this script's stdout so that $(...) around it returns at once.
  setsid nohup bash -c 'while kill -0 "$1" 2>/dev/null && [ -d "$2" ]; do sleep 1; done; [ -d "$2" ] && bash "$3" "$2"' \
    watchdog "$OWNER_PID" "$DIR" "$(dirname "$0")/stop-postgres.sh" >/dev/null 2>&1 </dev/null &
fi

URL="postgresql://postgres@127.0.0.1:$PORT/postgres"
{
  printf "export SBOX_TEST_POSTGRES_URL='%s'\n" "$URL"
  printf "export SBOX_TEST_POSTGRES_DIR='%s'\n" "$DIR"
} | tee "$DIR/env"
