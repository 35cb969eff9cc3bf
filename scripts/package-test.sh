#!/usr/bin/env bash
# The packages as a user gets them (docs/packaging.md): builds the .debs from a build folder
# (scripts/test.sh's, by default), checks them with lintian, installs them on this machine with apt
# (dpkg -i plus their Debian dependencies), checks the runtime package comes without the broker
# modules and that their own packages add them, verifies the systemd unit, serves the installed
# config with the installed binary as the service user, sends one signed webhook through it and
# reads its run back, builds the example connector against the installed SDK and runs the
# conformance kit on it, then purges every package. Needs root (it installs packages).
# Usage: ./scripts/package-test.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build="$(cd "${1:-build}" && pwd)"
[ "$(id -u)" = 0 ] || { echo "package-test: needs root (it installs the .debs)" >&2; exit 1; }

out="$build/packages"
rm -rf "$out"
cpack --config "$build/CPackConfig.cmake" -B "$out" >/dev/null
rm -rf "$out/_CPack_Packages"
runtime=$(ls "$out"/wopbridge_*.deb)
dev=$(ls "$out"/wopbridge-dev_*.deb)
mapfile -t connector_debs < <(ls "$out"/wopbridge-connector-*_*.deb)
[ "${#connector_debs[@]}" = 4 ] || { echo "package-test: expected 4 connector packages"; exit 1; }
echo "package-test: built $(cd "$out" && echo *.deb)"

# Debian's own checks: no lintian error or warning,
# and the binaries hardened as Debian builds them (lintian's hardening-* tags are informational,
# so they are failed on by name).
command -v lintian >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends lintian >/dev/null
lintian_out=$(lintian --allow-root --info --tag-display-limit 0 "$out"/*.deb 2>&1 || true)
if printf '%s\n' "$lintian_out" | grep -E '^(E|W): |^I: [^ ]+ hardening-'; then
    echo "package-test: lintian found the problems above"
    exit 1
fi
echo "package-test: lintian clean (no errors, warnings or hardening gaps)"

work=$(mktemp -d)
cleanup() {
    [ -n "${pid:-}" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    dpkg --purge wopbridge-connector-kafka wopbridge-connector-nats wopbridge-connector-queue \
        wopbridge-connector-rabbitmq wopbridge-dev wopbridge >/dev/null 2>&1 || true
    rm -rf /var/lib/wopbridge "$work"
}
trap cleanup EXIT
dpkg --purge wopbridge-connector-kafka wopbridge-connector-nats wopbridge-connector-queue \
    wopbridge-connector-rabbitmq wopbridge-dev wopbridge >/dev/null 2>&1 || true
rm -rf /var/lib/wopbridge
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$runtime" "$dev" \
    >/dev/null

systemd-analyze verify /lib/systemd/system/wopbridge.service
getent passwd wopbridge >/dev/null
[ "$(stat -c '%a %U:%G' /etc/wopbridge/wopbridge.env)" = "640 root:wopbridge" ]
[ "$(stat -c '%a %U' /var/lib/wopbridge)" = "700 wopbridge" ]
/usr/bin/wopbridge --version
/usr/bin/wopbridge connectors | tee "$work/connectors.txt"
grep -q '^slack ' "$work/connectors.txt"
# Webhook-only: no broker module and no broker client library came with the runtime package.
if grep -qE '^(kafka|nats|queue|rabbitmq) ' "$work/connectors.txt" ||
    dpkg-query -W -f='${Depends}' wopbridge | grep -qE 'rdkafka|libnats|rabbitmq|hiredis'; then
    echo "package-test: the runtime package carries a broker module or its library"
    exit 1
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${connector_debs[@]}" >/dev/null
/usr/bin/wopbridge connectors >"$work/connectors.txt"
for m in kafka nats queue rabbitmq; do grep -q "^$m " "$work/connectors.txt"; done
echo "package-test: the four broker modules install from their own packages"

# As the unit runs it (User=, EnvironmentFile=, the installed config), on a free loopback port.
set -a
# shellcheck disable=SC1091
. /etc/wopbridge/wopbridge.env
set +a
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# setpriv execs (no process in between), so the exit status below is serve's own.
as_service=(setpriv --reuid=wopbridge --regid=wopbridge --init-groups)
"${as_service[@]}" /usr/bin/wopbridge check-config /etc/wopbridge/wopbridge.yaml
WOPBRIDGE_LISTEN="127.0.0.1:$port" "${as_service[@]}" \
    /usr/bin/wopbridge serve --config /etc/wopbridge/wopbridge.yaml >"$work/serve.log" 2>&1 &
pid=$!
url="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
    curl -fsS "$url/readyz" >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/serve.log"; exit 1; }
    sleep 0.1
done
curl -fsS "$url/readyz" >/dev/null

# One Standard Webhooks post, signed as a provider signs it.
body='{"hello":"from the installed package"}'
msg_id="msg_package_$(date +%s%N)"
ts=$(date +%s)
key_hex=$(printf '%s' "${WOPBRIDGE_EXAMPLE_WHSEC#whsec_}" | base64 -d | od -An -vtx1 | tr -d ' \n')
sig=$(printf '%s' "$msg_id.$ts.$body" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key_hex" \
    -binary | base64)
status=$(curl -sS -o "$work/ingest.json" -w '%{http_code}' -X POST "$url/v1/ingest/example" \
    -H 'content-type: application/json' -H "webhook-id: $msg_id" -H "webhook-timestamp: $ts" \
    -H "webhook-signature: v1,$sig" --data-binary "$body")
[ "$status" = 202 ] || { echo "package-test: ingest answered $status: $(cat "$work/ingest.json")"; cat "$work/serve.log"; exit 1; }
run_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runId"])' "$work/ingest.json")
for _ in $(seq 1 100); do
    curl -fsS -H "authorization: Bearer $WOPBRIDGE_API_KEY" "$url/v1/runs/$run_id" \
        -o "$work/run.json" 2>/dev/null && grep -q '"status":"completed"' "$work/run.json" && break
    sleep 0.1
done
grep -q '"status":"completed"' "$work/run.json" || { cat "$work/run.json"; exit 1; }
[ -s /var/lib/wopbridge/host.key ] && [ "$(stat -c '%a %U' /var/lib/wopbridge/host.key)" = "600 wopbridge" ]
kill -TERM "$pid"
wait "$pid" || { echo "package-test: serve did not stop cleanly"; cat "$work/serve.log"; exit 1; }
pid=
echo "package-test: the installed service took a signed webhook (run $run_id completed)"

# The SDK package: the example connector builds out of tree and passes the conformance kit.
cmake -S examples/hello-connector -B "$work/hello" -G Ninja >/dev/null
cmake --build "$work/hello" >/dev/null
/usr/bin/wopbridge connector-check "$work/hello/lib/wopbridge/connectors/hello.so" >"$work/kit.txt"
tail -1 "$work/kit.txt"
echo "package-test: ok"
