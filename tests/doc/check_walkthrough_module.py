#!/usr/bin/env python3
"""Runs `wopbridge connector-check` on the module built from the walk-through's excerpts in
docs/writing-a-connector.md, with a freshly signed OpenWOP v1 request, so the excerpts' verify,
submit and answer-after-commit path runs. Every check must PASS (the
unsigned-probe check http.respond-after-outcome may SKIP); the submit checks must not SKIP.

Usage: check_walkthrough_module.py WOPBRIDGE MODULE.so
"""
import hashlib
import hmac
import json
import os
import re
import subprocess
import sys
import tempfile
import time

SECRET = "doc-walkthrough-secret-0123456789"


def main():
    program, module = sys.argv[1:3]
    body = json.dumps({"ticket": 42, "text": "printer on fire"})
    ts = str(int(time.time()))
    sig = "sha256=" + hmac.new(SECRET.encode(), (ts + "." + body).encode(),
                               hashlib.sha256).hexdigest()
    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, "signed.http")
        with open(probe, "w") as f:
            f.write("POST /v1/ingest/my-sub\ncontent-type: application/json\n"
                    "x-hello-timestamp: %s\nx-hello-signature: %s\n\n%s" % (ts, sig, body))
        r = subprocess.run([program, "connector-check", module, "--subscription-settings",
                            json.dumps({"secret": SECRET}), "--probe-request", probe],
                           capture_output=True, text=True, timeout=120)
    print(r.stdout + r.stderr)
    lines = r.stdout.splitlines()
    # http.respond-after-outcome is about the unsigned probe, which this module refuses.
    bad = [l for l in lines if re.match(r"^(FAIL|SKIP)\b", l)
           and l.split()[1] != "http.respond-after-outcome"]
    for name in ("submit.after-commit", "submit.duplicate", "submit.refused-not-active",
                 "submit.refused-overloaded", "http.unsigned-copy-not-verified"):
        if not any(re.match(r"^PASS\s+%s\b" % re.escape(name), l) for l in lines):
            bad.append("%s did not PASS" % name)
    if r.returncode != 0 or bad:
        print("FAIL: exit %d; %s" % (r.returncode, "; ".join(bad) or "see above"))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
