#!/usr/bin/env bash
# Starts the quickstart bridge, sends one signed webhook, shows its run with causationId, and keeps
# running (the heartbeat schedule starts a run every 15 s). Ctrl-C stops it cleanly.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${WOPBRIDGE_BIN:-$root/build/bin/wopbridge}"
mkdir -p "$root/var/quickstart"
secret_file="$root/var/quickstart/partner.whsec"
[ -f "$secret_file" ] || echo "whsec_$(openssl rand -base64 32)" > "$secret_file"
export PARTNER_WHSEC="${PARTNER_WHSEC:-$(cat "$secret_file")}"
export WOPBRIDGE_API_KEY="${WOPBRIDGE_API_KEY:-quickstart-key}"
"$bin" check-config "$here/wopbridge.yaml"
"$bin" serve --config "$here/wopbridge.yaml" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid' INT TERM
for _ in $(seq 1 100); do
  curl -fsS http://127.0.0.1:8080/readyz >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || { echo "wopbridge exited"; exit 1; }
  sleep 0.1
done
"$here/send-webhook.sh"
echo
echo "The bridge keeps running: the 'heartbeat' schedule starts a run every 15 s. Ctrl-C to stop."
echo "Try: curl -s -H 'authorization: Bearer $WOPBRIDGE_API_KEY' http://127.0.0.1:8080/v1/trigger-subscriptions"
wait $pid
