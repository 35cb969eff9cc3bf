#!/usr/bin/env bash
# One command: librdkafka's mock cluster (build/bin/kafka-mock: Debian ships no Kafka broker) with
# an `orders` topic of 3 partitions, `wopbridge serve` with this folder's config pointed at it,
# three produced records, the runs they started and the group's committed offsets. Stops
# everything at the end (or keeps it up with --keep). Needs a build
# (cmake --build build --target wopbridge kafka).
#   examples/kafka/run.sh [--keep]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${WOPBRIDGE_BIN:-$root/build/bin/wopbridge}"
mock="$(dirname "$bin")/kafka-mock"
[ -x "$bin" ] || { echo "run.sh: $bin not built (cmake --build build --target wopbridge kafka)" >&2; exit 1; }
[ -x "$mock" ] || { echo "run.sh: $mock not built (cmake --build build --target kafka-mock)" >&2; exit 1; }
keep=0; [ "${1:-}" = "--keep" ] && keep=1

work="$(mktemp -d)"
export WOPBRIDGE_API_KEY="${WOPBRIDGE_API_KEY:-$(openssl rand -hex 16)}"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

"$mock" cluster --topic orders:3 >"$work/mock.txt" 2>&1 </dev/null & pids+=($!)
for _ in $(seq 100); do grep -qs '^bootstrap ' "$work/mock.txt" && break; sleep 0.1; done
bootstrap="$(awk '/^bootstrap /{print $2}' "$work/mock.txt")"
echo "--- mock cluster at $bootstrap"
# A fresh store beside the fresh cluster: a new topic numbers its offsets from 0 again, and the
# dedup key is topic/partition/offset, so an old database would answer them "duplicate".
sed -e "s#\.\./\.\./var/kafka#$work#" -e "s#127\.0\.0\.1:9092#$bootstrap#" \
  "$here/wopbridge.yaml" >"$work/wopbridge.yaml"

"$bin" serve --config "$work/wopbridge.yaml" >"$work/serve.log" 2>&1 & pids+=($!)
# The group is formed once the bridge logs its assignment (startFrom: beginning: records produced
# before that are read too).
for _ in $(seq 300); do grep -q 'consuming: assigned' "$work/serve.log" && break; sleep 0.1; done
grep -ho 'kafka\[[^"]*' "$work/serve.log" | tail -n 3 || true

"$mock" produce --bootstrap "$bootstrap" --topic orders --key c-42 '{"customer":"c-42","total":99.5}'
"$mock" produce --bootstrap "$bootstrap" --topic orders --key c-43 '{"customer":"c-43","total":12.0,"note":"gift wrap"}'
"$mock" produce --bootstrap "$bootstrap" --topic orders --key c-42 '{"customer":"c-42","cancelled":true}'

# The bridge listens on $WOPBRIDGE_LISTEN when set (serve honours it), else the config's 8080.
url="${WOPBRIDGE_URL:-http://127.0.0.1:8080}"
api() { curl -fsS -H "authorization: Bearer $WOPBRIDGE_API_KEY" "$url$1"; }
for _ in $(seq 200); do
  n=$(api /v1/trigger-subscriptions/orders/deliveries | grep -o '"status":"delivered"' | wc -l || true)
  [ "$n" -ge 3 ] && break; sleep 0.1
done
echo "--- deliveries of subscription orders (each started one run):"
api /v1/trigger-subscriptions/orders/deliveries | python3 -c 'import json,sys
for d in json.load(sys.stdin)["deliveries"]: print(d["status"], d.get("runId"))'
echo "--- the group's committed offsets (lag 0: every record committed after the bridge's commit):"
for _ in $(seq 50); do
  "$mock" offsets --bootstrap "$bootstrap" --group wopbridge --topic orders | grep -q '"lag":0' && break; sleep 0.1
done
"$mock" offsets --bootstrap "$bootstrap" --group wopbridge --topic orders
if [ "$keep" = 1 ]; then
  echo "--- running; produce more with: $mock produce --bootstrap $bootstrap --topic orders '{\"n\":1}'   (Ctrl-C stops)"
  wait
fi
