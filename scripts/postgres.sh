#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests, CI and benchmarks: its own data directory, listening
# on loopback only, trust authentication (nothing but this machine reaches it).
#   scripts/postgres.sh start [DIR]   initialise DIR (default $CLOAKPIPE_PG_DIR or
#                                     /tmp/cloakpipe-pg) if needed, start it, print its URL
#   scripts/postgres.sh stop [DIR]    stop it (fast shutdown)
#   scripts/postgres.sh url [DIR]     print the URL of a started cluster
# PostgreSQL refuses to run as root: as root, the cluster runs as the `postgres` user.
set -euo pipefail

cmd=${1:-}
dir=${2:-${CLOAKPIPE_PG_DIR:-/tmp/cloakpipe-pg}}
bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
if [ -z "$bin" ] || [ ! -x "$bin/pg_ctl" ]; then
  echo "postgres.sh: no PostgreSQL found (apt-get install postgresql, or set PG_BIN)" >&2
  exit 3
fi

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

url() { echo "postgres://postgres@127.0.0.1:$(cat "$dir/port")/postgres"; }

case "$cmd" in
  start)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    chmod 700 "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    [ -f "$dir/port" ] || free_port >"$dir/port"
    port=$(cat "$dir/port")
    if ! as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200 -c synchronous_commit=on" start >/dev/null \
        || { tail -20 "$dir/postgres.log" >&2; exit 1; }
    fi
    url
    ;;
  stop)
    if [ -f "$dir/data/PG_VERSION" ]; then as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true; fi
    ;;
  url)
    url
    ;;
  *)
    echo "usage: scripts/postgres.sh start|stop|url [DIR]" >&2
    exit 2
    ;;
esac
