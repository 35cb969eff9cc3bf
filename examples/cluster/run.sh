#!/usr/bin/env bash
# A local three-node cluster: a throwaway PostgreSQL in a temp dir (127.0.0.1, free port, trust
# auth) and `wopbridge serve` on ports BASE_PORT+1 .. BASE_PORT+3 (default 8081-8083), all from
# wopbridge.yaml.in. A node that exits (kill -9 one to try) is reported and the others keep
# serving. Ctrl-C stops the nodes and the database and removes the temp dir; the nodes' logs, pid
# files and the cluster's settings (cluster.env) stay in var/cluster/.
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

var="$root/var/cluster"
mkdir -p "$var"
rm -f "$var"/node*.pid "$var/cluster.env"
work="$(mktemp -d "${TMPDIR:-/tmp}/wopbridge-cluster-XXXXXX")"
as_pg=()
if [ "$(id -u)" = 0 ]; then
  # initdb refuses to run as root: run the server as the postgres system user.
  chmod 755 "$work"
  chown postgres: "$work"
  as_pg=(runuser -u postgres --)
fi
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$work"
  rm -f "$var"/node*.pid "$var/pg_ctl"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')"
"${as_pg[@]}" "$pgbin/initdb" -D "$work/data" -U postgres -A trust -E UTF8 \
  --no-instructions >/dev/null
# In the data directory's config, so a plain `pg_ctl start` (var/cluster/pg_ctl) starts it again.
printf "port = %s\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\n" \
  "$port" "$work" | "${as_pg[@]}" tee -a "$work/data/postgresql.conf" >/dev/null
# pg_ctl for this cluster (as the postgres user when root): var/cluster/pg_ctl stop | start.
cat > "$var/pg_ctl" <<SH
#!/bin/sh
exec ${as_pg[*]} "$pgbin/pg_ctl" -D "$work/data" -l "$work/postgres.log" "\$@"
SH
chmod +x "$var/pg_ctl"
"$var/pg_ctl" -w -t 60 start >/dev/null
"$pgbin/createdb" -h 127.0.0.1 -p "$port" -U postgres wopbridge
pg_url="postgresql://postgres@127.0.0.1:$port/wopbridge"
echo "PostgreSQL: $pg_url (data in $work/data)"

export WOPBRIDGE_API_KEY="${WOPBRIDGE_API_KEY:-cluster-key}"
export PARTNER_WHSEC="${PARTNER_WHSEC:-whsec_$(openssl rand -base64 32)}"
# The nodes start together on purpose: the schema migrations run once, under an advisory lock, and
# the shared host key file is created once (linked into place; the others read it).
for n in 1 2 3; do
  cfg="$var/node$n.yaml"
  sed -e "s|@PORT@|$((base + n))|g" -e "s|@PG_URL@|$pg_url|g" -e "s|@VAR@|$var|g" \
    "$here/wopbridge.yaml.in" > "$cfg"
  # --listen: a WOPBRIDGE_LISTEN in the environment must not put the three nodes on one port.
  "$bin" serve --config "$cfg" --listen "127.0.0.1:$((base + n))" > "$var/node$n.log" 2>&1 &
  pids+=($!)
  echo $! > "$var/node$n.pid"
done
for n in 1 2 3; do
  ready=
  for _ in $(seq 1 150); do
    if curl -fsS "http://127.0.0.1:$((base + n))/readyz" >/dev/null 2>&1; then ready=1; break; fi
    sleep 0.1
  done
  [ -n "$ready" ] || { echo "node $n did not become ready; log:"; cat "$var/node$n.log"; exit 1; }
  echo "node $n ready on http://127.0.0.1:$((base + n)) (pid ${pids[n-1]}, log: $var/node$n.log)"
done
cat > "$var/cluster.env" <<ENV
export NODE1_URL=http://127.0.0.1:$((base + 1)) NODE2_URL=http://127.0.0.1:$((base + 2)) NODE3_URL=http://127.0.0.1:$((base + 3))
export WOPBRIDGE_URL=http://127.0.0.1:$((base + 1))
export WOPBRIDGE_API_KEY='$WOPBRIDGE_API_KEY'
export PARTNER_WHSEC='$PARTNER_WHSEC'
export PG_URL='$pg_url'
ENV
cat <<TXT

Three nodes share one database. In another terminal (from $root):
  . var/cluster/cluster.env     # NODE1_URL..NODE3_URL, WOPBRIDGE_URL, WOPBRIDGE_API_KEY, PARTNER_WHSEC, PG_URL
  build/bin/wopbridge subscriptions list --url "\$NODE3_URL"
  examples/quickstart/send-webhook.sh
  psql "\$PG_URL" -c 'SELECT subscription_id, status, count(*) FROM deliveries GROUP BY 1, 2'
  kill -9 \$(cat var/cluster/node2.pid)         # the other nodes keep serving
  var/cluster/pg_ctl -m fast stop; var/cluster/pg_ctl start     # PostgreSQL down and up again
The heartbeat schedule fires once every 15 s across the three nodes. Ctrl-C stops everything.
TXT
# Until Ctrl-C: a node that exits is reported, the others serve on.
alive=("${pids[@]}")
while [ "${#alive[@]}" -gt 0 ]; do
  status=0
  wait -n "${alive[@]}" || status=$?
  left=()
  for i in 0 1 2; do
    pid=${pids[i]}
    if [[ " ${alive[*]} " == *" $pid "* ]]; then
      if kill -0 "$pid" 2>/dev/null; then
        left+=("$pid")
      else
        echo "node $((i + 1)) (pid $pid) exited with status $status; the other nodes keep serving" \
          "(restart it: $bin serve --config $var/node$((i + 1)).yaml --listen 127.0.0.1:$((base + i + 1)))"
        rm -f "$var/node$((i + 1)).pid"
      fi
    fi
  done
  alive=("${left[@]}")
done
echo "every node exited; stopping the cluster"
