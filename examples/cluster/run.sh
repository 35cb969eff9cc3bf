#!/usr/bin/env bash
# A local three-node cluster: a throwaway PostgreSQL in a temp dir (127.0.0.1, free port, trust
# auth) and `wopbridge serve` on ports 8081-8083, all from wopbridge.yaml.in. Ctrl-C stops the
# nodes and the database and removes the temp dir.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${WOPBRIDGE_BIN:-$root/build/bin/wopbridge}"
base="${BASE_PORT:-8080}" # nodes listen on base+1 .. base+3
pgbin="${PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"
if [ ! -x "$pgbin/initdb" ]; then
  echo "PostgreSQL server binaries not found (apt-get install postgresql)"
  exit 1
fi
[ -x "$bin" ] || { echo "build wopbridge first: cmake --build build"; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/wopbridge-cluster-XXXXXX")"
as_pg=()
if [ "$(id -u)" = 0 ]; then
  # initdb refuses to run as root: run the server as the postgres system user.
  chown postgres: "$work"
  as_pg=(runuser -u postgres --)
fi
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')"
"${as_pg[@]}" "$pgbin/initdb" -D "$work/data" -U postgres -A trust -E UTF8 \
  --no-instructions >/dev/null
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/data" -l "$work/postgres.log" -w -t 60 \
  -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$work" start >/dev/null
"$pgbin/createdb" -h 127.0.0.1 -p "$port" -U postgres wopbridge
pg_url="postgresql://postgres@127.0.0.1:$port/wopbridge"
echo "PostgreSQL: $pg_url (data in $work)"

var="$work/var"
mkdir -p "$var"
export WOPBRIDGE_API_KEY="${WOPBRIDGE_API_KEY:-cluster-key}"
export PARTNER_WHSEC="${PARTNER_WHSEC:-whsec_$(openssl rand -base64 32)}"
# The nodes start together on purpose: the schema migrations run once, under an advisory lock, and
# the shared host key file is created once (linked into place; the others read it).
for n in 1 2 3; do
  cfg="$var/node$n.yaml"
  sed -e "s|@PORT@|$((base + n))|g" -e "s|@PG_URL@|$pg_url|g" -e "s|@VAR@|$var|g" \
    "$here/wopbridge.yaml.in" > "$cfg"
  "$bin" serve --config "$cfg" > "$var/node$n.log" 2>&1 &
  pids+=($!)
done
for n in 1 2 3; do
  ready=
  for _ in $(seq 1 150); do
    if curl -fsS "http://127.0.0.1:$((base + n))/readyz" >/dev/null 2>&1; then ready=1; break; fi
    sleep 0.1
  done
  [ -n "$ready" ] || { echo "node $n did not become ready; log:"; cat "$var/node$n.log"; exit 1; }
  echo "node $n ready on http://127.0.0.1:$((base + n)) (log: $var/node$n.log)"
done
cat <<TXT

Three nodes share one database. Try:
  curl -s -H 'authorization: Bearer $WOPBRIDGE_API_KEY' \\
    http://127.0.0.1:$((base + 1))/v1/trigger-subscriptions
  pause 'heartbeat' through node 1, read its state through node 3: it changes at once.
  psql '$pg_url' -c 'SELECT subscription_id, status, count(*) FROM deliveries GROUP BY 1, 2'
The heartbeat schedule fires once every 15 s across the three nodes. Ctrl-C stops everything.
TXT
wait -n "${pids[@]}" || true
echo "a node exited; stopping the cluster"
