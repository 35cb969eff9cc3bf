#!/usr/bin/env bash
# Signs a JSON body the Standard Webhooks way with openssl, posts it to the partner-hooks ingest URL
# with curl, then prints the run's event log (note run.started.causationId).
# Usage: send-webhook.sh [json-body]   (needs PARTNER_WHSEC and WOPBRIDGE_API_KEY in the environment;
# WOPBRIDGE_URL picks the bridge, WEBHOOK_ID a webhook-id to send again)
set -euo pipefail
base="${WOPBRIDGE_URL:-http://127.0.0.1:8080}"
body="${1:-{\"ticket\":42,\"text\":\"printer on fire\"\}}"
id="${WEBHOOK_ID:-msg_$(openssl rand -hex 12)}"
ts="$(date +%s)"
key_hex=$(printf '%s' "${PARTNER_WHSEC#whsec_}" | base64 -d | od -An -tx1 | tr -d ' \n')
sig=$(printf '%s' "$id.$ts.$body" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key_hex" -binary | base64)
echo "POST $base/v1/ingest/partner-hooks  webhook-id=$id"
reply=$(curl -sS -X POST "$base/v1/ingest/partner-hooks" \
  -H "content-type: application/json" -H "webhook-id: $id" -H "webhook-timestamp: $ts" \
  -H "webhook-signature: v1,$sig" --data-binary "$body")
echo "  -> $reply"
run=$(printf '%s' "$reply" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("runId",""))')
[ -n "$run" ] || exit 1
echo "GET $base/v1/runs/$run/events/poll"
curl -sS "$base/v1/runs/$run/events/poll?timeout=5" -H "authorization: Bearer $WOPBRIDGE_API_KEY" |
  python3 -c '
import json, sys
for e in json.load(sys.stdin)["events"]:
    cause = ("  causationId=" + e["causationId"]) if "causationId" in e else ""
    print("  #%d %-36s eventId=%s%s" % (e["sequence"], e["type"], e["eventId"], cause))'
echo "Replaying the same webhook-id answers duplicate with the same run:"
curl -sS -X POST "$base/v1/ingest/partner-hooks" \
  -H "content-type: application/json" -H "webhook-id: $id" -H "webhook-timestamp: $ts" \
  -H "webhook-signature: v1,$sig" --data-binary "$body"; echo
