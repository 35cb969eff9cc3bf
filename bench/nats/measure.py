#!/usr/bin/env python3
"""JetStream -> run.started throughput of the nats connector: messages per second from the broker
to committed run starts.

A throwaway `nats-server -js` (file store in the work dir), a stream with N messages published
(and acknowledged by JetStream) before the bridge starts, then the real `wopbridge serve` with the
local run ledger and the nats connector reading that backlog from the beginning. The clock starts
when the bridge reports its port and stops when `wopbridge_delivery_attempts_total{outcome=
"delivered"}` (a committed run.started) reaches N; the durable must then have nothing pending or
unacked. One JSON object on stdout. bench/run calls it as scenario (8); by hand:

    bench/nats/measure.py --bin build/bin --count 20000
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import measure_common as common  # noqa: E402 (imported by path: bench/ is not a package)

JS = os.path.join(HERE, "..", "..", "examples", "nats", "jetstream.py")


def js(url, *args):
    return subprocess.run([sys.executable, JS, "--server", url, *args], check=True,
                          stdout=subprocess.PIPE, text=True).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="folder with wopbridge (and ../lib/wopbridge/connectors/nats.so)")
    ap.add_argument("--work", help="temp dir to use (default: a new one, removed at the end)")
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-in-flight", type=int, default=512)
    ap.add_argument("--deadline-s", type=float, default=300)
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="wopbridge-nats-bench-")
    os.makedirs(work, exist_ok=True)
    procs = []
    try:
        port = common.free_port()
        url = f"nats://127.0.0.1:{port}"
        procs.append(subprocess.Popen(["nats-server", "-js", "-a", "127.0.0.1", "-p", str(port),
                                       "-sd", os.path.join(work, "nats-store"),
                                       "-l", os.path.join(work, "nats.log")],
                                      start_new_session=True))
        end = time.time() + 15
        while True:
            try:
                js(url, "stream-create", "BENCH", "bench.>")
                break
            except subprocess.CalledProcessError:
                if time.time() > end:
                    raise RuntimeError("nats-server did not come up")
                time.sleep(0.1)
        t = time.time()
        js(url, "publish", "bench.order", '{"n":{n},"customer":"c-1","total":9.5}',
           "--count", str(a.count), "--quiet")
        publish_s = time.time() - t

        cfg = common.write_bridge_config(work, "bench/nats/measure.py", f"""\
  - name: nats
    module: nats
    settings: {{url: "{url}", batchSize: {a.batch_size}, maxInFlight: {a.max_in_flight}}}
""", f"""\
  - id: bench-nats
    source: queue
    connector: nats
    workflowId: bench
    settings: {{stream: BENCH, durable: bench, startFrom: beginning}}
""")
        _, _, bport = common.start_bridge(a.bin, cfg, work, procs)
        t0 = time.time()
        base = f"http://127.0.0.1:{bport}"
        n, samples, elapsed = common.poll_delivered(base, a.count, a.deadline_s, t0)
        time.sleep(0.5)  # the last acks
        consumer = json.loads(js(url, "consumer", "BENCH", "bench"))
        out = {
            **common.rate_fields(a.count, n, elapsed, publish_s),
            "batch_size": a.batch_size,
            "max_in_flight": a.max_in_flight,
            "consumer_after": {k: consumer.get(k) for k in ("num_pending", "num_ack_pending",
                                                            "num_redelivered")},
            "ok": n >= a.count and consumer.get("num_pending") == 0
                  and consumer.get("num_ack_pending") == 0,
            "samples": common.thin(samples),
        }
        print(json.dumps(out))
    finally:
        common.stop_all(procs, work, keep_work=bool(a.work))


if __name__ == "__main__":
    main()
