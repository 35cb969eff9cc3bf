#!/usr/bin/env bash
# Installs everything wopbridge needs on Debian 12 (bookworm). Idempotent: packages already present are skipped.
# Boost.JSON/URL/Beast must come from the versioned 1.81 packages; the unversioned ones are 1.74 (no JSON, no URL).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache git
  libboost1.81-dev libboost-json1.81-dev libboost-system1.81-dev libboost-url1.81-dev
  libyaml-cpp-dev libcurl4-openssl-dev libsqlite3-dev libssl-dev libnats-dev libhiredis-dev
  librdkafka-dev librabbitmq-dev libcctz-dev libpcre2-dev
  libgtest-dev libgmock-dev json-schema-test-suite
  python3 curl openssl sqlite3 procps
)
# libnats-dev (nats.c 3.4.1) builds the nats connector; the broker is the `nats` group.
# libhiredis-dev (hiredis 0.14.1) builds the queue connector; Redis itself is the `redis` group.
# librdkafka-dev (2.0.2) builds the kafka connector; its tests and example use librdkafka's own mock
# cluster (Debian ships no Kafka broker), so there is no kafka group. libcctz-dev reads time zones.
# libpcre2-dev (10.42) runs JSON Schema `pattern`s.
# librabbitmq-dev (rabbitmq-c 0.11) builds the rabbitmq connector; the broker is the `rabbitmq` group.
# Extra groups, requested by name: postgres, redis, nats, rabbitmq, browser, providers, fuzz, bench.
for group in "$@"; do
  case "$group" in
    postgres) packages+=(libpq-dev postgresql) ;;
    redis) packages+=(redis-server redis-tools) ;;
    # The nats connector's tests start their own `nats-server -js` (2.9.10); the package also
    # installs a systemd unit, which the tests never use.
    nats) packages+=(nats-server) ;;
    # The rabbitmq connector's tests start their own node (3.10.8, in a temp dir, with its own
    # epmd); the package also installs a systemd unit, which the tests never use.
    rabbitmq) packages+=(rabbitmq-server) ;;
    browser)
      packages+=(chromium)
      # Node.js may come from elsewhere (its npm is then bundled and Debian's npm conflicts with it).
      command -v node >/dev/null || packages+=(nodejs)
      command -v npm >/dev/null || packages+=(npm)
      ;;
    # The provider catalogue's tests sign with the providers' own SDKs (npm, pinned by
    # tests/providers/package-lock.json).
    providers)
      command -v node >/dev/null || packages+=(nodejs)
      command -v npm >/dev/null || packages+=(npm)
      ;;
    # The reverse-proxy tests put Debian's nginx-light in front of serve (TLS by openssl's certificate).
    proxy) packages+=(nginx-light openssl) ;;
    fuzz) packages+=(clang libclang-rt-14-dev) ;;
    bench)
      # bench/run: gnuplot for the chart, Redis for the BullMQ peer, Node.js for the peer itself,
      # wrk and nginx-light for the generator check (wrk also measures peak ingest), nats-server
      # for the JetStream scenario, rabbitmq-server for the RabbitMQ one.
      packages+=(gnuplot-nox redis-server redis-tools wrk nginx-light nats-server rabbitmq-server)
      command -v node >/dev/null || packages+=(nodejs)
      command -v npm >/dev/null || packages+=(npm)
      ;;
    *) echo "setup-debian.sh: unknown group '$group'" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The browser tests drive Debian's chromium with playwright-core, pinned by tests/browser/package-lock.json.
if [[ " $* " == *" browser "* ]] && [ ! -d "$(dirname "$0")/../tests/browser/node_modules/playwright-core" ]; then
  (cd "$(dirname "$0")/../tests/browser" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
if [[ " $* " == *" providers "* ]] && [ ! -d "$(dirname "$0")/../tests/providers/node_modules/stripe" ]; then
  (cd "$(dirname "$0")/../tests/providers" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
