"""bench/run's load: the measurement profile (quick or full), bench-loadgen's search / fixed /
max modes, wrk with pre-signed requests, and the generator check that proves bench-loadgen is not
the bottleneck (it must reach 85 % of wrk on the same no-op servers: nginx and bench-ceiling).
"""
import json
import os
import shutil
import subprocess
import sys
import time

from bench_env import BIN, ROOT, WHSEC, WRK_LUA, WRK_LUA_REL, free_port, log, start, wait_port

class Profile:
    def __init__(self, quick, p99_bound_ms=None):
        self.quick = quick
        self.step_s = 1.5 if quick else 5
        self.half_s = 2 if quick else 10
        self.max_steps = 5 if quick else 10
        self.precision = 1.5 if quick else 1.2
        self.start_rate = 1000
        self.settle_s = 0.5 if quick else 1
        self.settle_max_s = 5 if quick else 15
        self.fixed_s = 3 if quick else 10
        self.preload = 30_000 if quick else 1_000_000
        self.drain_s = 15 if quick else 60
        # A closed-loop probe before each search: the search starts at 0.9x its throughput.
        self.probe_s = 1 if quick else 2
        # Generator check: wrk and bench-loadgen (closed loop, 32 connections, one thread each)
        # against nginx and bench-ceiling, best of `gen_rounds` alternating runs of `gen_s`.
        self.gen_s = 2 if quick else 5
        self.gen_rounds = 1 if quick else 2
        self.gen_requests = 200_000  # distinct pre-signed requests (the no-op servers may see repeats)
        self.wrk_ingest_s = 2 if quick else 5
        # Sustained end to end (local ledger): fixed rate for sustained_s, every acked event must
        # have its run started by the end of the load + 1 s; the rates are tried in order.
        self.sustained_s = 5 if quick else 60
        self.sustained_rates = [1000] if quick else [2000, 3000, 4000, 5000, 7500, 10000, 15000,
                                                      20000]
        # The smoke must finish on a busy machine too, where scheduling alone costs tens of ms.
        self.p99_bound_ms = p99_bound_ms or (250 if quick else 50)



def loadgen(args, label):
    cmd = [os.path.join(BIN, "bench-loadgen")] + [str(a) for a in args]
    log(f"{label}: {' '.join(cmd[1:3])} ...")
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
    try:
        return json.loads(r.stdout)
    except ValueError:
        raise RuntimeError(f"bench-loadgen ({label}) printed no result")



def idle_args(p, procs):
    """Between steps the generator waits until these processes are idle (bounded)."""
    return ["--settle-seconds", p.settle_s, "--settle-max-seconds", p.settle_max_s,
            "--idle-pids", ",".join(str(x.pid) for x in procs)]



def search(url, p, procs, extra=()):
    return loadgen(["search", "--url", url, "--p99-bound-ms", p.p99_bound_ms,
                    "--step-seconds", p.step_s, "--half-seconds", p.half_s,
                    "--max-steps", p.max_steps, "--precision", p.precision,
                    "--start-rate", p.start_rate, "--probe-seconds", p.probe_s,
                    *idle_args(p, procs), *extra], url)



def fixed(url, p, procs, rate, seconds, extra=()):
    return loadgen(["fixed", "--url", url, "--rate", rate, "--seconds", seconds,
                    *idle_args(p, procs), *extra], url)



def cpu_ticks(procs):
    total = 0
    for proc in procs:
        try:
            with open(f"/proc/{proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total



def settle(p, procs):
    """What bench-loadgen does before a step: >= settle_s, then until procs use < 5 % of a core."""
    time.sleep(p.settle_s)
    hz = os.sysconf("SC_CLK_TCK")
    end = time.time() + p.settle_max_s
    before = cpu_ticks(procs)
    while time.time() < end:
        time.sleep(0.3)
        after = cpu_ticks(procs)
        if (after - before) / hz < 0.3 * 0.05:
            return
        before = after



def dump_requests(url, count, path, secret=WHSEC):
    """count pre-signed requests for wrk (bench/wrk/signed.lua), unique webhook-ids."""
    out = subprocess.run([os.path.join(BIN, "bench-loadgen"), "dump", "--url", url,
                          "--secret", secret, "--count", str(int(count)), "--out", path,
                          "--id-prefix", "msg_wrk_"],
                         stdout=subprocess.PIPE, stderr=sys.stderr, text=True, check=True).stdout
    return json.loads(out)



def wrk(url, requests_file, seconds, threads=1, connections=32):
    """wrk with the pre-signed requests; ok_rps counts 2xx/3xx answers only."""
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s",
           "-s", WRK_LUA, url, "--", requests_file, str(threads)]
    log(f"wrk -t{threads} -c{connections} -d{seconds}s {url}")
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = next((x for x in r.stdout.splitlines() if x.startswith("WRKJSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result: {r.stderr.strip()[:400]}")
    d = json.loads(line[len("WRKJSON "):])
    secs = d["duration_us"] / 1e6
    d["ok_rps"] = round((d["requests"] - d["status_errors"]) / secs, 1) if secs > 0 else 0
    d["command"] = " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd)
    return d



def loadgen_max(url, seconds, connections=32, threads=1, rps_guess=60000):
    return loadgen(["max", "--url", url, "--secret", WHSEC, "--seconds", seconds,
                    "--connections", connections, "--threads", threads, "--rps-guess", rps_guess,
                    "--settle-seconds", 0], url)



CEILING_BODY = ('{"outcome":"delivered","runId":"run_00000000000000000000000000",'
                '"deliveryId":"dlv_00000000000000000000000000"}')

# One worker: measured against `auto` (2 here) with wrk -t1 -c32 and bench-loadgen max on the
# 2-core VM, the two were within noise of each other (the generator has the other core);
# one worker keeps the figure "one core of HTTP server", like bench-ceiling's share.
NGINX_WORKERS = 1



def start_nginx(work):
    """nginx-light answering 202 with bench-ceiling's body to anything, in the foreground."""
    d = os.path.join(work, "nginx")
    os.makedirs(d)
    port = free_port()
    user = "user root;\n" if os.geteuid() == 0 else ""  # else the workers would run as nobody
    temp = "\n".join(f"  {m}_temp_path {d}/{m};" for m in
                     ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    conf = f"""# generated by bench/run
daemon off;
master_process on;
worker_processes {NGINX_WORKERS};
{user}pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
{temp}
  keepalive_requests 1000000000;
  keepalive_timeout 300s;
  default_type application/json;
  server {{
    listen 127.0.0.1:{port};
    location / {{ return 202 '{CEILING_BODY}'; }}
  }}
}}
"""
    cfg = os.path.join(d, "nginx.conf")
    with open(cfg, "w") as f:
        f.write(conf)
    nginx = shutil.which("nginx", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    if not nginx:
        raise RuntimeError("nginx not found (scripts/setup-debian.sh bench installs nginx-light)")
    proc, _ = start([nginx, "-e", f"{d}/error.log", "-p", d, "-c", cfg],
                    log_path=f"{d}/stderr.log", read_port=False)
    wait_port(port, proc)
    return proc, port



def generator_check(p, work, servers):
    """wrk and our generator at max rate against the same no-op servers: is ours the bottleneck?"""
    out = {}
    for name, (url, procs) in servers.items():
        requests_file = os.path.join(work, f"wrk-{name}.req")
        dump_requests(url, p.gen_requests, requests_file)
        runs_wrk, runs_ours = [], []
        for _ in range(p.gen_rounds):
            settle(p, procs)
            runs_wrk.append(wrk(url, requests_file, p.gen_s))
            settle(p, procs)
            runs_ours.append(loadgen_max(url, p.gen_s, rps_guess=p.gen_requests / p.gen_s))
        os.unlink(requests_file)
        w = max(r["ok_rps"] for r in runs_wrk)
        o = max(r["achieved_rps"] for r in runs_ours)
        out[name] = {"wrk_rps": w, "ours_rps": o, "ratio": round(o / w, 3) if w else None,
                     "wrk": runs_wrk, "ours": runs_ours}
        log(f"generator check {name}: wrk {w:,.0f}/s, bench-loadgen {o:,.0f}/s")
    ratio = out.get("ceiling", {}).get("ratio")
    out["ok"] = bool(ratio is not None and ratio >= 0.85)
    out["method"] = (f"closed loop, 32 connections, one thread, best of {p.gen_rounds} x {p.gen_s} s "
                     f"each: wrk {WRK_LUA_REL} vs bench-loadgen max; ok = ours >= 0.85 x wrk "
                     "on bench-ceiling")
    return out



def percentile(values, q):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(q * len(v) + 0.5)) - 1))]
