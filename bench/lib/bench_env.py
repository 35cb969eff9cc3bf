"""What bench/run's parts share: the paths and throwaway keys, one log line format, and the
processes it starts (each in its own session, stopped in reverse order at the end). Imported by
path (bench/ is not a package): bench/run puts this folder on sys.path first.
"""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BUILD = os.path.join(ROOT, "build-bench")

BIN = os.path.join(BUILD, "bin")

RESULTS = os.path.join(ROOT, "bench", "results")

PEER_DIR = os.path.join(ROOT, "bench", "peers", "node-bullmq")

WRK_LUA = os.path.join(ROOT, "bench", "wrk", "signed.lua")

WRK_LUA_REL = "bench/wrk/signed.lua"

WHSEC = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # a throwaway key for loopback only

SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"

API_KEY = "bench-key"


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


children = []  # every process we started, stopped in reverse order at exit



def start(cmd, *, env=None, log_path=None, read_port=True, cwd=None, deadline_s=30):
    """Starts cmd; when read_port, waits for a first stdout line {"port":N} and returns (proc, N)."""
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})}, cwd=cwd,
                            stdout=subprocess.PIPE if read_port else out, stderr=out,
                            start_new_session=True)
    children.append(proc)
    if not read_port:
        return proc, None
    end = time.time() + deadline_s
    line = b""
    while time.time() < end:
        r, _, _ = select.select([proc.stdout], [], [], 0.2)
        if r:
            line = proc.stdout.readline()
            break
        if proc.poll() is not None:
            break
    try:
        port = json.loads(line)["port"]
    except (ValueError, KeyError):
        raise RuntimeError(f"{cmd[0]} did not report its port (see {log_path})")
    return proc, port



def stop(proc, deadline_s=15):
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(deadline_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()



def stop_all():
    while children:
        stop(children.pop())



def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return None



def http_json(url, timeout=10):
    req = urllib.request.Request(url, headers={"authorization": f"Bearer {API_KEY}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())



def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]



def wait_port(port, proc, deadline_s=10):
    end = time.time() + deadline_s
    while time.time() < end and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")
