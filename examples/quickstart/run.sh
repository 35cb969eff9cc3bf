#!/usr/bin/env bash
# Starts the quickstart bridge, sends one signed webhook, shows its run with causationId, and keeps
# running (the heartbeat schedule starts a run every 15 s). Ctrl-C stops it cleanly.
# The bridge listens on $WOPBRIDGE_LISTEN (default the config's 127.0.0.1:8080; port 0 takes any
# free port) and prints its URL.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${WOPBRIDGE_BIN:-$root/build/bin/wopbridge}"
var="$root/var/quickstart"
mkdir -p "$var"
secret_file="$var/partner.whsec"
[ -f "$secret_file" ] || echo "whsec_$(openssl rand -base64 32)" > "$secret_file"
export PARTNER_WHSEC="${PARTNER_WHSEC:-$(cat "$secret_file")}"
export WOPBRIDGE_API_KEY="${WOPBRIDGE_API_KEY:-quickstart-key}"
export WOPBRIDGE_LISTEN="${WOPBRIDGE_LISTEN:-127.0.0.1:8080}"
"$bin" check-config "$here/wopbridge.yaml"
# The log goes to the terminal and to serve.log, where the started line names the bound port.
log="$var/serve.log"
: > "$log"
"$bin" serve --config "$here/wopbridge.yaml" 2> >(tee "$log" >&2) &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid' INT TERM
port=
for _ in $(seq 1 100); do
  port=$(sed -n 's/.*"event":"wopbridge.started".*"port":\([0-9]*\).*/\1/p' "$log")
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { echo "wopbridge exited"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "wopbridge did not start"; exit 1; }
export WOPBRIDGE_URL="http://${WOPBRIDGE_LISTEN%:*}:$port"
for _ in $(seq 1 100); do
  curl -fsS "$WOPBRIDGE_URL/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
"$here/send-webhook.sh"
cat <<TXT

The bridge runs on $WOPBRIDGE_URL: the 'heartbeat' schedule starts a run every 15 s. Ctrl-C to stop.
In another terminal (from $root):
  export WOPBRIDGE_URL=$WOPBRIDGE_URL WOPBRIDGE_API_KEY=$WOPBRIDGE_API_KEY
  export PARTNER_WHSEC=\$(cat var/quickstart/partner.whsec)
  examples/quickstart/send-webhook.sh '{"ticket":43}'
  build/bin/wopbridge subscriptions list
TXT
wait $pid
