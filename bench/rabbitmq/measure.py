#!/usr/bin/env python3
"""RabbitMQ -> run.started throughput of the rabbitmq connector: messages per second from the
broker to committed run starts.

A throwaway RabbitMQ node (its own temp dir, node name, epmd and ports), a durable queue with N
persistent messages published (each with a message_id, confirmed by the broker) before the bridge
starts, then the real `wopbridge serve` with the local run ledger and the rabbitmq connector
consuming that backlog. The clock starts when the bridge reports its port and stops when
`wopbridge_delivery_attempts_total{outcome="delivered"}` (a committed run.started) reaches N; the
queue must then hold nothing (every message acked). One JSON object on stdout. bench/run calls it
as scenario (9); by hand:

    bench/rabbitmq/measure.py --bin build/bin --count 20000
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import measure_common as common  # noqa: E402 (imported by path: bench/ is not a package)

AMQP = os.path.join(HERE, "..", "..", "examples", "rabbitmq", "amqp.py")
SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"  # the plain script (/usr/sbin's switches user)


def amqp(url, *args):
    return subprocess.run([sys.executable, AMQP, "--url", url, *args], check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="folder with wopbridge (and ../lib/wopbridge/connectors/rabbitmq.so)")
    ap.add_argument("--work", help="temp dir to use (default: a new one, removed at the end)")
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--prefetch", type=int, default=256)
    ap.add_argument("--deadline-s", type=float, default=300)
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="wopbridge-rabbitmq-bench-")
    os.makedirs(work, exist_ok=True)
    procs = []
    try:
        port, dist_port, epmd_port = common.free_port(), common.free_port(), common.free_port()
        url = f"amqp://guest:guest@127.0.0.1:{port}/"
        with open(os.path.join(work, "rabbitmq.conf"), "w") as f:
            f.write(f"listeners.tcp.default = 127.0.0.1:{port}\n")
        with open(os.path.join(work, "enabled_plugins"), "w") as f:
            f.write("[].\n")
        open(os.path.join(work, "env.conf"), "w").close()
        procs.append(subprocess.Popen(["epmd", "-port", str(epmd_port)], start_new_session=True))
        env = dict(os.environ, HOME=work, RUNNING_UNDER_SYSTEMD="true",
                   RABBITMQ_NODENAME=f"wbbench{os.getpid()}@localhost",
                   RABBITMQ_NODE_PORT=str(port), RABBITMQ_DIST_PORT=str(dist_port),
                   ERL_EPMD_PORT=str(epmd_port), RABBITMQ_MNESIA_BASE=os.path.join(work, "mnesia"),
                   RABBITMQ_LOG_BASE=os.path.join(work, "log"),
                   RABBITMQ_CONFIG_FILE=os.path.join(work, "rabbitmq.conf"),
                   RABBITMQ_ENABLED_PLUGINS_FILE=os.path.join(work, "enabled_plugins"),
                   RABBITMQ_CONF_ENV_FILE=os.path.join(work, "env.conf"))
        with open(os.path.join(work, "rabbitmq.out"), "ab") as out:
            procs.append(subprocess.Popen([SERVER], env=env, stdout=out, stderr=out,
                                          start_new_session=True))
        end = time.time() + 90
        while True:
            try:
                amqp(url, "declare", "bench")
                break
            except subprocess.CalledProcessError:
                if time.time() > end:
                    raise RuntimeError("rabbitmq-server did not come up")
                time.sleep(0.1)
        t = time.time()
        amqp(url, "publish", "bench", '{"customer":"c-1","total":9.5}', "--id", "bench",
             "--count", str(a.count))
        publish_s = time.time() - t

        cfg = common.write_bridge_config(work, "bench/rabbitmq/measure.py", f"""\
  - name: rabbitmq
    module: rabbitmq
    settings: {{url: "{url}", prefetch: {a.prefetch}}}
""", f"""\
  - id: bench-rabbitmq
    source: queue
    connector: rabbitmq
    workflowId: bench
    settings: {{queue: bench}}
""")
        bridge, _, bport = common.start_bridge(a.bin, cfg, work, procs)
        t0 = time.time()
        base = f"http://127.0.0.1:{bport}"
        n, samples, elapsed = common.poll_delivered(base, a.count, a.deadline_s, t0)
        left = json.loads(amqp(url, "depth", "bench"))
        end = time.time() + 10
        while left["ready"] > 0 and time.time() < end:
            time.sleep(0.1)
            left = json.loads(amqp(url, "depth", "bench"))
        # Unacked messages are not "ready": stop the bridge, then whatever it left unacked is.
        os.killpg(bridge.pid, signal.SIGTERM)
        bridge.wait(30)
        left = json.loads(amqp(url, "depth", "bench"))
        out = {
            **common.rate_fields(a.count, n, elapsed, publish_s),
            "prefetch": a.prefetch,
            "queue_after": left,
            "ok": n >= a.count and left["ready"] == 0,
            "samples": common.thin(samples),
        }
        print(json.dumps(out))
    finally:
        common.stop_all(procs, work, keep_work=bool(a.work), wait_after_kill=True)


if __name__ == "__main__":
    main()
