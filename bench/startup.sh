#!/bin/sh
# Start-up of the compiled binary (`npm run build`): from exec to the first successful GET /healthz on the
# gateway port, then the process is killed. Time the whole script from outside (e.g. /usr/bin/time, or a
# harness that pairs two binaries run in turn); the kill and the polling client add the same to every run.
#   bench/startup.sh BINARY DATA_DIR restart   # DATA_DIR is kept: a restart on existing data (run once first)
#   bench/startup.sh BINARY DATA_DIR first     # DATA_DIR is removed first: a first start (bootstrap, CA, key)
set -eu
bin=$1 dir=$2 kind=${3:-restart}
api=${STARTUP_API_PORT:-19254} gw=${STARTUP_GATEWAY_PORT:-19255}
[ "$kind" = first ] && rm -rf "$dir"
"$bin" serve --data-dir "$dir" --host 127.0.0.1 --port "$api" --gateway-port "$gw" >/dev/null 2>&1 &
pid=$!
until curl -sf "http://127.0.0.1:$gw/healthz" >/dev/null 2>&1; do :; done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
