#!/usr/bin/env bash
# Accepted-ingest throughput of 1, 2 and 3 `wopbridge serve` nodes on one PostgreSQL, and the
# database round trips per accepted event (from the nodes' wopbridge_store_round_trips_total).
#
#   bench/cluster/measure.sh            # builds build/ with -DWOPBRIDGE_BUILD_BENCH=ON first
#   REQUESTS=3000 BREAKDOWN=1000 CONCURRENCY=64 NODES="1 2 3" BUILD_DIR=build bench/cluster/measure.sh
#
# Per node count: a fresh database, the nodes on BASE_PORT+1.. (local runs, conformance-noop),
# a warm-up, then
#   1. round trips: the subscription paused (whenNotActive: hold), BREAKDOWN signed ingests ->
#      intake round trips per event; resumed -> delivery round trips per event (claim, attempt,
#      run start and completion; idle polls of the nodes included), and the delivery rate;
#   2. throughput: REQUESTS signed POSTs /v1/ingest/orders, round-robin over the nodes, CONCURRENCY
#      in flight (bench/cluster/ingest_load.cpp), deliveries running at the same time.
# The load generator runs on the same machine as the nodes and the database.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${BUILD_DIR:-$root/build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
requests="${REQUESTS:-3000}"
breakdown="${BREAKDOWN:-1000}"
concurrency="${CONCURRENCY:-64}"
node_counts="${NODES:-1 2 3}"
base="${BASE_PORT:-18080}"
pgbin="${PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"
[ -x "$pgbin/initdb" ] || { echo "PostgreSQL server binaries not found (apt-get install postgresql)"; exit 1; }

if [ -z "${SKIP_BUILD:-}" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DWOPBRIDGE_BUILD_BENCH=ON >/dev/null
  cmake --build "$build" --target wopbridge wopbridge_ingest_load >/dev/null
fi
bin="$build/bin/wopbridge"
load="$build/bin/wopbridge_ingest_load"
[ -x "$bin" ] && [ -x "$load" ] || { echo "missing $bin or $load"; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/wopbridge-bench-XXXXXX")"
as_pg=()
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$work" # initdb refuses root: the server runs as the postgres user
  as_pg=(runuser -u postgres --)
fi
pids=()
stop_nodes() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
cleanup() {
  stop_nodes
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pgport="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')"
"${as_pg[@]}" "$pgbin/initdb" -D "$work/data" -U postgres -A trust -E UTF8 --no-instructions >/dev/null
# Stock durability settings (fsync, synchronous_commit on): every intake batch is one WAL flush.
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/data" -l "$work/postgres.log" -w -t 60 \
  -o "-p $pgport -c listen_addresses=127.0.0.1 -c unix_socket_directories=$work -c max_connections=200" \
  start >/dev/null
psql() { "$pgbin/psql" -X -q -A -t -h 127.0.0.1 -p "$pgport" -U postgres "$@"; }

var="$work/var"
mkdir -p "$var"
chmod 700 "$var"
secret="whsec_$(openssl rand -base64 32)"
api_key="bench-key"

metric_sum() { # metric name, node count
  local total=0 v
  for i in $(seq 1 "$2"); do
    v="$(curl -fsS "http://127.0.0.1:$((base + i))/metrics" | awk -v m="$1" '$1 == m {print $2}')"
    total=$((total + ${v:-0}))
  done
  echo "$total"
}
wait_drained() { # database
  local limit=$((${DRAIN_TIMEOUT:-300} * 10))
  for _ in $(seq 1 "$limit"); do
    [ "$(psql -d "$1" -c "SELECT COUNT(*) FROM deliveries WHERE status <> 'delivered'")" = 0 ] && return 0
    sleep 0.1
  done
  echo "deliveries did not drain"; psql -d "$1" -c "SELECT status, COUNT(*) FROM deliveries GROUP BY 1"
  return 1
}
set_state() { # state
  curl -fsS -X PATCH -H "authorization: Bearer $api_key" -H 'content-type: application/json' \
    -d "{\"state\":\"$1\"}" "http://127.0.0.1:$((base + 1))/v1/trigger-subscriptions/orders" >/dev/null
}
ratio() { python3 -c "print(f'{$1 / $2:.2f}' if $2 else 'n/a')"; }

results=()
for n in $node_counts; do
  db="bench_$n"
  psql -d postgres -c "CREATE DATABASE $db"
  urls=()
  for i in $(seq 1 "$n"); do
    cat > "$var/node$i.yaml" <<YAML
server: {listen: "127.0.0.1:$((base + i))", rateLimits: {perSourceAddress: off}}
auth:
  apiKeys:
    - {key: $api_key, tenant: default, scopes: [runs:read, webhooks:manage]}
store: {postgres: {url: "postgresql://postgres@127.0.0.1:$pgport/$db"}}
hostKeyFile: $var/host.key
runs: {local: {workflows: [{id: conformance-noop}]}}
delivery: {maxPendingIntake: 100000}
logging: {level: warn}
subscriptions:
  - {id: orders, source: webhook, workflowId: conformance-noop, whenNotActive: hold,
     signingSecret: "$secret"}
YAML
    "$bin" serve --config "$var/node$i.yaml" > "$var/node$i.log" 2>&1 &
    pids+=($!)
    urls+=(--url "http://127.0.0.1:$((base + i))")
  done
  for i in $(seq 1 "$n"); do
    ok=
    for _ in $(seq 1 300); do
      curl -fsS "http://127.0.0.1:$((base + i))/readyz" >/dev/null 2>&1 && { ok=1; break; }
      sleep 0.1
    done
    [ -n "$ok" ] || { echo "node $i not ready:"; cat "$var/node$i.log"; exit 1; }
  done
  warm="$("$load" "${urls[@]}" --secret "$secret" --requests 300 --concurrency 16 \
    --prefix "warm$n")" || { echo "warm-up failed: $warm"; tail -n 20 "$var"/node*.log; exit 1; }
  wait_drained "$db"

  # 1. round trips: the subscription paused (whenNotActive: hold) -> intake alone; resumed ->
  #    delivery alone (the held events released, claimed and run).
  set_state paused
  b0="$(metric_sum wopbridge_store_round_trips_total "$n")"
  bb0="$(metric_sum wopbridge_store_intake_batches_total "$n")"
  bout="$("$load" "${urls[@]}" --secret "$secret" --requests "$breakdown" \
    --concurrency "$concurrency" --prefix "held$n")" || echo "  (some requests not acknowledged)"
  b1="$(metric_sum wopbridge_store_round_trips_total "$n")"
  bb1="$(metric_sum wopbridge_store_intake_batches_total "$n")"
  held="$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['acknowledged'])" "$bout")"
  d0="$(date +%s.%N)"
  set_state active
  wait_drained "$db"
  d1="$(date +%s.%N)"
  b2="$(metric_sum wopbridge_store_round_trips_total "$n")"
  intake_rt="$(ratio "$((b1 - b0))" "$held")"
  batch="$(ratio "$held" "$((bb1 - bb0))")"
  delivery_rt="$(ratio "$((b2 - b1))" "$held")"
  total_rt="$(ratio "$((b2 - b0))" "$held")"
  delivered_rate="$(python3 -c "print(f'{$held / ($d1 - $d0):.0f}')")"

  # 2. throughput: signed ingests as fast as they are acknowledged, deliveries running alongside.
  out="$("$load" "${urls[@]}" --secret "$secret" --requests "$requests" \
    --concurrency "$concurrency" --prefix "run$n")" || echo "  (some requests not acknowledged)"
  acked="$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['acknowledged'])" "$out")"
  rps="$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['accepted_per_second'])" "$out")"
  line="$n node(s): $rps accepted/s ($acked of $requests, $concurrency in flight); round trips per"
  line="$line event: $total_rt = intake $intake_rt (mean batch $batch) + delivery $delivery_rt;"
  line="$line held backlog delivered at $delivered_rate/s"
  echo "$line"
  echo "  load: $out"
  results+=("$line")
  stop_nodes
done
echo
echo "== $(nproc) CPU(s), $(date -u +%Y-%m-%dT%H:%MZ), PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}')"
printf '%s\n' "${results[@]}"
