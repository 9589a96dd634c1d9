#!/usr/bin/env bash
# Stops a cluster made by start-postgres.sh and deletes its directory.
#   bash packages/manager/scripts/stop-postgres.sh "$SBOX_TEST_POSTGRES_DIR"
set -euo pipefail

DIR=${1:-${SBOX_TEST_POSTGRES_DIR:-}}
if [ -z "$DIR" ] || [ ! -d "$DIR" ]; then
  echo "stop-postgres: no cluster directory given (argument or SBOX_TEST_POSTGRES_DIR)" >&2
  exit 1
fi
PG_CTL=
for candidate in /usr/lib/postgresql/*/bin/pg_ctl; do [ -x "$candidate" ] && PG_CTL=$candidate; done
[ -n "$PG_CTL" ] || PG_CTL=$(command -v pg_ctl)

if [ -f "$DIR/data/postmaster.pid" ]; then
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$PG_CTL" -D "$DIR/data" -m immediate -w stop >&2 || true
  else
    "$PG_CTL" -D "$DIR/data" -m immediate -w stop >&2 || true
  fi
fi
rm -rf "$DIR"
