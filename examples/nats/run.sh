#!/usr/bin/env bash
# One command: a throwaway `nats-server -js`, the ORDERS stream, `wopbridge serve` with this
# folder's config, three published messages, and the runs they started. Stops everything at the
# end (or keeps it up with --keep). Needs nats-server (scripts/setup-debian.sh nats) and a build
# (cmake --build build --target wopbridge nats).
#   examples/nats/run.sh [--keep]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${WOPBRIDGE_BIN:-$root/build/bin/wopbridge}"
js="$here/jetstream.py"
[ -x "$bin" ] || { echo "run.sh: $bin not built (cmake --build build --target wopbridge nats)" >&2; exit 1; }
command -v nats-server >/dev/null || { echo "run.sh: nats-server not installed (scripts/setup-debian.sh nats)" >&2; exit 1; }
keep=0; [ "${1:-}" = "--keep" ] && keep=1

work="$(mktemp -d)"
# A fresh store beside the fresh broker: a new stream numbers its messages from 1 again, and the
# dedup key is stream + sequence, so an old database would answer them "duplicate".
sed "s#\.\./\.\./var/nats#$work#" "$here/wopbridge.yaml" >"$work/wopbridge.yaml"
export WOPBRIDGE_API_KEY="${WOPBRIDGE_API_KEY:-$(openssl rand -hex 16)}"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

nats-server -js -a 127.0.0.1 -p 4222 -sd "$work/store" -l "$work/nats.log" & pids+=($!)
for _ in $(seq 100); do "$js" stream-create ORDERS 'orders.>' 2>/dev/null && break; sleep 0.1; done

"$bin" serve --config "$work/wopbridge.yaml" >"$work/serve.log" 2>&1 & pids+=($!)
# startFrom: new: publish once the bridge made its durable consumer.
for _ in $(seq 100); do "$js" consumer ORDERS wopbridge >/dev/null 2>&1 && break; sleep 0.1; done
grep -h 'nats' "$work/serve.log" | tail -n 3 || true

"$js" publish orders.created '{"customer":"c-42","total":99.5}'
"$js" publish orders.created '{"customer":"c-43","total":12.0,"note":"gift wrap"}'
"$js" publish orders.cancelled '{"customer":"c-42"}'

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
echo "--- the durable consumer (num_ack_pending 0: every message acked after its commit):"
"$js" consumer ORDERS wopbridge
if [ "$keep" = 1 ]; then
  echo "--- running; publish more with: $js publish orders.created '{\"n\":1}'   (Ctrl-C stops)"
  wait
fi
