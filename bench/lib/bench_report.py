"""bench/run's report: bench/results/latest.md (the tables) and latest.png (gnuplot bars) from one
run's result dict. Imported by path (bench/ is not a package): bench/run puts this folder on
sys.path first.
"""
import os
import shutil
import subprocess
import tempfile

import bench_cost
from bench_env import log


def fmt(v, unit=""):
    if v is None:
        return "—"
    if isinstance(v, float):
        v = f"{v:,.1f}" if abs(v) >= 10 else f"{v:.2f}"
    elif isinstance(v, int):
        v = f"{v:,}"
    return f"{v}{unit}"


def write_markdown(res, path, nginx_workers):
    m = res["machine"]
    rows = [
        ("HTTP ceiling (no-op 202, same Beast server)", res["ceiling_rps"], res["ceiling_p50_ms"],
         res["ceiling_p99_ms"]),
        ("(1) signed webhook ingest, durable 202", res["ingest_rps"], res["ingest_p50_ms"],
         res["ingest_p99_ms"]),
        ("(2) the same, 50 % duplicates", res["dup_ingest_rps"], None, res["dup_ingest_p99_ms"]),
        ("(3) Slack events through the slack connector", res["slack_rps"], None,
         res["slack_p99_ms"]),
        ("peer: Express + standardwebhooks + BullMQ (Redis appendfsync always)", res["peer_rps"],
         res["peer_p50_ms"], res["peer_p99_ms"]),
    ]
    lines = [
        f"# Benchmark results ({res['date']}{', quick smoke' if res['quick'] else ''})",
        "",
        f"Machine: {m['cores']} cores, {m['model']}; load average at start {m['loadavg_1m_at_start']}"
        f"{'' if res['quiet_machine'] else ' (**not a quiet machine**: figures are noisy)'}.",
        f"Disk: {fmt(res['fsync_per_s'])} fsync/s (write 4 KiB + fdatasync, one writer).",
        "",
    ]
    gc = res.get("generator_check") or {}
    lines += [
        "Generator check (closed loop, 32 connections, one thread each; "
        "`bench-loadgen max` vs `wrk` with the same pre-signed requests):",
        "",
        "| No-op server | wrk req/s | bench-loadgen req/s | bench-loadgen / wrk |",
        "|---|---:|---:|---:|",
    ]
    for key, name in (("nginx", f"nginx-light, `return 202`, {nginx_workers} worker"),
                      ("ceiling", "bench-ceiling (the bridge's Beast server)")):
        g = gc.get(key) or {}
        lines.append(f"| {name} | {fmt(g.get('wrk_rps'))} | {fmt(g.get('ours_rps'))} | "
                     f"{fmt(g.get('ratio'))} |")
    lines += ["", "The generator keeps up (within 15 % of wrk on bench-ceiling)." if gc.get("ok") else
              "**These figures are generator-bound**: bench-loadgen reached less than 85 % of "
              "wrk's rate on bench-ceiling, so the rates below measure the load generator, not the "
              "servers.", ""]
    lines += [
        f"| Scenario | max sustainable req/s (p99 ≤ {res['p99_bound_ms']:g} ms) | p50 ms at half "
        "| p99 ms at half |",
        "|---|---:|---:|---:|",
    ]
    for name, rps, p50, p99 in rows:
        lines.append(f"| {name} | {fmt(rps)} | {fmt(p50)} | {fmt(p99)} |")
    lines += [""] + bench_cost.markdown(
        res.get("cost_sqlite"),
        f"SQLite, local ledger, at {fmt(res.get('cost_sqlite_rate_rps'))} req/s (scenario 4)")
    lines += [
        "",
        "| Figure | Value |",
        "|---|---:|",
        f"| (4) ingest → `run.started`, local ledger, at {fmt(res['run_start_rate_rps'])} req/s: "
        f"p50 / p99 | {fmt(res['run_start_p50_ms'])} / {fmt(res['run_start_p99_ms'])} ms |",
        f"| (4) the same at 20 req/s (no backlog): p50 / p99 | "
        f"{fmt(res['run_start_floor_p50_ms'])} / {fmt(res['run_start_floor_p99_ms'])} ms |",
        f"| (1) peak durable ingest by wrk (closed loop, 32 connections, unique signed ids) | "
        f"{fmt(res['ingest_wrk_rps'], ' req/s')} ({fmt(res['ingest_wrk_non2xx'])} non-2xx; "
        f"{fmt(res['ratio_ingest_wrk_to_ceiling_wrk'])} of the ceiling by wrk) |",
        f"| (7) sustained end to end, local ledger: highest rate where every acked event had "
        f"`run.started` by the end of the load + 1 s ({fmt(res['sustained_seconds'])} s steps) | "
        f"{fmt(res['sustained_e2e_rps'], ' req/s')}"
        f"{'' if res['sustained_failed_at_rps'] is None else ' (failed at ' + fmt(res['sustained_failed_at_rps']) + ' req/s)'} |",
        f"| (7) at {fmt(res['sustained_rate_rps'])} req/s: acked / started by end + 1 s / all "
        f"started after / ingest p99 | {fmt(res['sustained_acked'])} / "
        f"{fmt(res['sustained_started_by_end_plus_1s'])} / {fmt(res['sustained_drain_s'], ' s')} / "
        f"{fmt(res['sustained_ingest_p99_ms'], ' ms')} |",
        *([f"| (7) the failing step at {fmt(res['sustained_failed_at_rps'])} req/s: intake achieved / "
           f"ingest p99 / all acked runs started after | "
           f"{fmt(res['sustained_failed_achieved_rps'], ' req/s')} / "
           f"{fmt(res['sustained_failed_ingest_p99_ms'], ' ms')} / "
           f"{fmt(res['sustained_failed_drain_s'], ' s')} |"]
          if res.get('sustained_failed_at_rps') else []),
        f"| (8) NATS JetStream → `run.started` through the nats connector, local ledger "
        f"({fmt(res.get('nats_messages'))} messages backlogged, consumed from the beginning) | "
        f"{fmt(res.get('nats_msgs_per_s'), ' msg/s')}{'' if res.get('nats_ok') else ' (**not all started/acked**)'} |",
        f"| (9) Kafka → `run.started` through the kafka connector (librdkafka mock cluster), local "
        f"ledger ({fmt(res.get('kafka_messages'))} records backlogged, read from the beginning) | "
        f"{fmt(res.get('kafka_msgs_per_s'), ' msg/s')}{'' if res.get('kafka_ok') else ' (**not all started/committed**)'} |",
        f"| (10) RabbitMQ → `run.started` through the rabbitmq connector, local ledger "
        f"({fmt(res.get('rabbitmq_messages'))} messages backlogged, prefetch 256) | "
        f"{fmt(res.get('rabbitmq_msgs_per_s'), ' msg/s')}{'' if res.get('rabbitmq_ok') else ' (**not all started/acked**)'} |",
        f"| (5) retry storm (half the starts fail): ingest p99 / errors | "
        f"{fmt(res['storm_ingest_p99_ms'])} ms / {fmt(res['storm_ingest_errors'])} |",
        f"| (5) runs started / run-host requests / drained after | {fmt(res['storm_runs_started'])}"
        f" / {fmt(res['storm_run_host_requests'])} / {fmt(res['storm_drain_s'], ' s')} |",
        f"| (6) RSS with {fmt(res['stored_deliveries'])} stored deliveries | "
        f"{fmt(res['rss_mb_1m_deliveries'], ' MB')} (database {fmt(res['db_mb_1m_deliveries'], ' MB')}) |",
        f"| (6) dedup lookup against them at {fmt(res['dedup_lookup_rate_rps'])} req/s: p50 / p99 | "
        f"{fmt(res['dedup_lookup_p50_ms'])} / {fmt(res['dedup_lookup_p99_ms'])} ms |",
        f"| ingest / HTTP ceiling | {fmt(res['ratio_ingest_to_ceiling'])} |",
        f"| ingest / peer | {fmt(res['ratio_ingest_to_peer'])} |",
        f"| ingest / fsync rate (requests per fsync) | {fmt(res['ratio_ingest_to_fsync'])} |",
        "",
        "Targets: " + ", ".join(f"{k} {'met' if v else 'NOT met'}"
                                for k, v in res["targets"].items()) + ".",
        "",
        "![throughput and p99](latest.png)",
        "",
    ]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def write_chart(res, path):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        log("gnuplot not found: no chart")
        return False
    gc = res.get("generator_check") or {}
    extra = [("HTTP ceiling (wrk)", (gc.get("ceiling") or {}).get("wrk_rps")),
             ("ingest (wrk)", res.get("ingest_wrk_rps")),
             ("sustained e2e", res.get("sustained_e2e_rps"))]
    data2 = tempfile.NamedTemporaryFile("w", suffix=".dat", delete=False)
    for name, rps in extra:
        data2.write(f"\"{name}\" {rps or 0}\n")
    data2.close()
    data = tempfile.NamedTemporaryFile("w", suffix=".dat", delete=False)
    bars = [("HTTP ceiling", res["ceiling_rps"], res["ceiling_p99_ms"]),
            ("wopbridge ingest", res["ingest_rps"], res["ingest_p99_ms"]),
            ("wopbridge 50% dup", res["dup_ingest_rps"], res["dup_ingest_p99_ms"]),
            ("wopbridge Slack", res["slack_rps"], res["slack_p99_ms"]),
            ("Node+BullMQ peer", res["peer_rps"], res["peer_p99_ms"])]
    for name, rps, p99 in bars:
        data.write(f"\"{name}\" {rps or 0} {p99 or 0}\n")
    data.close()
    title = "quick smoke, " if res["quick"] else ""
    if not (res.get("generator_check") or {}).get("ok"):
        title += "GENERATOR-BOUND, "
    if not res["quiet_machine"]:
        title += "busy machine, "
    script = f"""
set terminal pngcairo size 1500,460 font "sans,10"
set output "{path}"
set multiplot layout 1,3 title "wopbridge benchmarks ({title}{res['machine']['cores']} cores, {res['date'][:10]})"
set style data histograms
set style histogram clustered gap 0.5
set style fill solid 0.8 border -1
set boxwidth 0.7
set grid ytics
set xtics rotate by -25 scale 0
unset key
set title "max sustainable throughput (req/s, p99 <= {res['p99_bound_ms']:g} ms)"
set yrange [0:*]
plot "{data.name}" using 2:xtic(1) linecolor rgb "#3b6ea5"
set title "p99 latency at half the max rate (ms)"
plot "{data.name}" using 3:xtic(1) linecolor rgb "#c0504d"
set title "peak by wrk (closed loop) and sustained end to end (req/s)"
plot "{data2.name}" using 2:xtic(1) linecolor rgb "#6a9a4f"
unset multiplot
"""
    r = subprocess.run([gnuplot], input=script, text=True, stderr=subprocess.PIPE)
    if r.returncode != 0 and "pngcairo" in r.stderr:
        r = subprocess.run([gnuplot], input=script.replace("pngcairo", "png"), text=True)
    os.unlink(data.name)
    os.unlink(data2.name)
    return r.returncode == 0
