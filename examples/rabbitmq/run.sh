#!/usr/bin/env bash
# One command: a throwaway RabbitMQ node, the `orders` queue, `wopbridge serve` with this
# folder's config, three published messages, and the runs they started. Stops everything at the
# end (or keeps it up with --keep). Needs rabbitmq-server (scripts/setup-debian.sh rabbitmq) and
# a build (cmake --build build --target wopbridge rabbitmq).
#   examples/rabbitmq/run.sh [--keep]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${WOPBRIDGE_BIN:-$root/build/bin/wopbridge}"
amqp="$here/amqp.py"
server=/usr/lib/rabbitmq/bin/rabbitmq-server # the plain script (/usr/sbin's switches user)
[ -x "$bin" ] || { echo "run.sh: $bin not built (cmake --build build --target wopbridge rabbitmq)" >&2; exit 1; }
[ -x "$server" ] || { echo "run.sh: rabbitmq-server not installed (scripts/setup-debian.sh rabbitmq)" >&2; exit 1; }
keep=0; [ "${1:-}" = "--keep" ] && keep=1

work="$(mktemp -d)"
# The node's AMQP port: 5672 unless RABBITMQ_PORT says otherwise (e.g. a system node runs there).
port="${RABBITMQ_PORT:-5672}"
export AMQP_URL="amqp://guest:guest@127.0.0.1:$port/"
# A fresh store beside the fresh broker.
sed -e "s#\.\./\.\./var/rabbitmq#$work#" -e "s#127.0.0.1:5672#127.0.0.1:$port#" \
  "$here/wopbridge.yaml" >"$work/wopbridge.yaml"
export WOPBRIDGE_API_KEY="${WOPBRIDGE_API_KEY:-$(openssl rand -hex 16)}"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# The node in its own folder, under its own name, with its own epmd (free ports for both).
read -r epmd_port dist_port < <(python3 -c 'import socket
def free():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
print(free(), free())')
echo "[]." >"$work/enabled_plugins"; : >"$work/env.conf"
echo "listeners.tcp.default = 127.0.0.1:$port" >"$work/rabbitmq.conf"
epmd -port "$epmd_port" & pids+=($!)
env HOME="$work" RUNNING_UNDER_SYSTEMD=true RABBITMQ_NODENAME="wbexample$$@localhost" \
  RABBITMQ_NODE_PORT="$port" RABBITMQ_DIST_PORT="$dist_port" ERL_EPMD_PORT="$epmd_port" \
  RABBITMQ_MNESIA_BASE="$work/mnesia" RABBITMQ_LOG_BASE="$work/log" \
  RABBITMQ_CONFIG_FILE="$work/rabbitmq.conf" RABBITMQ_ENABLED_PLUGINS_FILE="$work/enabled_plugins" \
  RABBITMQ_CONF_ENV_FILE="$work/env.conf" "$server" >"$work/rabbitmq.out" 2>&1 & pids+=($!)
# Boot takes seconds: ready once a declare succeeds.
for _ in $(seq 600); do "$amqp" declare orders 2>/dev/null && break; sleep 0.1; done
"$amqp" declare orders

"$bin" serve --config "$work/wopbridge.yaml" >"$work/serve.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do grep -q 'consuming' "$work/serve.log" && break; sleep 0.1; done
grep -h 'rabbitmq' "$work/serve.log" | tail -n 3 || true

"$amqp" publish orders '{"customer":"c-42","total":99.5}' --id order-1
"$amqp" publish orders '{"customer":"c-43","total":12.0,"note":"gift wrap"}' --id order-2
"$amqp" publish orders '{"customer":"c-42","cancelled":true}' --id order-3

# The bridge listens on $WOPBRIDGE_LISTEN when set (serve honours it), else the config's 8080.
url="${WOPBRIDGE_URL:-http://127.0.0.1:8080}"
api() { curl -fsS -H "authorization: Bearer $WOPBRIDGE_API_KEY" "$url$1"; }
for _ in $(seq 100); do
  n=$(api /v1/trigger-subscriptions/orders/deliveries | grep -o '"status":"delivered"' | wc -l)
  [ "$n" -ge 3 ] && break; sleep 0.1
done
echo "--- deliveries of subscription orders (each started one run):"
api /v1/trigger-subscriptions/orders/deliveries | python3 -c 'import json,sys
for d in json.load(sys.stdin)["deliveries"]: print(d["status"], d.get("runId"))'
echo "--- the queue (ready 0: every message acked after its commit):"
for _ in $(seq 50); do "$amqp" depth orders | grep -q '"ready": 0' && break; sleep 0.1; done
"$amqp" depth orders
if [ "$keep" = 1 ]; then
  echo "--- running; publish more with: $amqp publish orders '{\"n\":1}' --id order-4   (Ctrl-C stops)"
  wait
fi
