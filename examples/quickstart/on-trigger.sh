#!/usr/bin/env bash
# The quickstart workflow: receives the TriggerEvent JSON on stdin and prints a one-line summary.
# Exit 0 = run.completed; anything else = run.failed.
set -euo pipefail
event=$(cat)
python3 - "$event" <<'PY'
import json, sys
e = json.loads(sys.argv[1])
src = e.get("source", "?")
extra = ""
if "webhook" in e:
    extra = " body=" + json.dumps(e["webhook"].get("body"))[:120]
print(f"[workflow support-triage] {src} trigger on {e.get('subscriptionId')} "
      f"delivery={e.get('deliveryId')} verified={e.get('verified')}{extra}", flush=True)
PY
