#!/usr/bin/env python3
"""Kafka -> run.started throughput of the kafka connector: records per second from the broker to
committed run starts.

librdkafka's mock cluster (build/bin/kafka-mock: Debian ships no Kafka broker; the real protocol on
loopback TCP, in memory), a topic of --partitions partitions with N records produced (and acked)
before the bridge starts, then the real `wopbridge serve` with the local run ledger and the kafka
connector reading that backlog from the beginning. The clock starts when the bridge reports its
port and the member
has its partitions (joining the group is reported apart, join_s) and stops when `wopbridge_delivery_attempts_total{outcome=
"delivered"}` (a committed run.started) reaches N; the group's committed offsets must then be at
the end of every partition. One JSON object on stdout. bench/run calls it as scenario (9); by hand:

    bench/kafka/measure.py --bin build/bin --count 20000
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



def mock(bin_dir, *args):
    return subprocess.run([os.path.join(bin_dir, "kafka-mock"), *args], check=True,
                          stdout=subprocess.PIPE, text=True).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True,
                    help="folder with wopbridge and kafka-mock (and ../lib/wopbridge/connectors/kafka.so)")
    ap.add_argument("--work", help="temp dir to use (default: a new one, removed at the end)")
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--max-in-flight", type=int, default=512)
    ap.add_argument("--deadline-s", type=float, default=300)
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="wopbridge-kafka-bench-")
    os.makedirs(work, exist_ok=True)
    procs = []
    try:
        cluster = subprocess.Popen([os.path.join(a.bin, "kafka-mock"), "cluster", "--topic",
                                    f"BENCH:{a.partitions}"], stdout=subprocess.PIPE,
                                   stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        procs.append(cluster)
        line = cluster.stdout.readline().split()
        if len(line) != 2 or line[0] != "bootstrap":
            raise RuntimeError("kafka-mock did not start")
        bootstrap = line[1]
        t = time.time()
        mock(a.bin, "produce", "--bootstrap", bootstrap, "--topic", "BENCH", "--count",
             str(a.count), "--quiet", '{"n":{n},"customer":"c-1","total":9.5}')
        publish_s = time.time() - t

        cfg = common.write_bridge_config(work, "bench/kafka/measure.py", f"""\
  - name: kafka
    module: kafka
    settings: {{bootstrapServers: "{bootstrap}", maxInFlight: {a.max_in_flight},
                sessionTimeoutMs: 10000}}
""", f"""\
  - id: bench-kafka
    source: queue
    connector: kafka
    workflowId: bench
    settings: {{topics: [BENCH], groupId: bench, startFrom: beginning}}
""")
        _, log_path, bport = common.start_bridge(a.bin, cfg, work, procs)
        # The clock starts once the member has its partitions: joining the group (the mock's
        # initial rebalance delay, a few seconds) is reported apart as join_s.
        t_port = time.time()
        while time.time() - t_port < 60:
            with open(log_path, errors="replace") as f:
                if "consuming: assigned" in f.read():
                    break
            time.sleep(0.02)
        t0 = time.time()
        join_s = t0 - t_port
        base = f"http://127.0.0.1:{bport}"
        n, samples, elapsed = common.poll_delivered(base, a.count, a.deadline_s, t0)
        offsets = {}
        end = time.time() + 10
        while time.time() < end:  # the last commits
            offsets = json.loads(mock(a.bin, "offsets", "--bootstrap", bootstrap, "--group",
                                      "bench", "--topic", "BENCH"))
            if offsets.get("lag") == 0:
                break
            time.sleep(0.1)
        out = {
            **common.rate_fields(a.count, n, elapsed, publish_s),
            "join_s": round(join_s, 3),
            "partitions": a.partitions,
            "max_in_flight": a.max_in_flight,
            "group_after": offsets,
            "ok": n >= a.count and offsets.get("lag") == 0,
            "samples": common.thin(samples),
        }
        print(json.dumps(out))
    finally:
        common.stop_all(procs, work, keep_work=bool(a.work))


if __name__ == "__main__":
    main()
