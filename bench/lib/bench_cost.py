"""Cost per acknowledged event, the benchmark's first figures: CPU by thread role (the bridge names
its threads wb-*: /proc/PID/task/TID/comm), bytes the process wrote to disk (/proc/PID/io
write_bytes: what reached the block layer, page-cache write-back included), write system calls,
store commits (/metrics wopbridge_store_commits_total; each intake group commit is one fsync) and
rows added per table (the SQLite file, read-only). A snapshot before and one after a load that was
drained (every acknowledged event's run started), divided by the events acknowledged.
"""
import os
import re
import sqlite3
import urllib.request

HZ = os.sysconf("SC_CLK_TCK")

# Threads by role, as docs/architecture.md names them; anything else is "other".
ROLES = {
    "wb-http-io": "HTTP I/O",
    "wb-http-work": "HTTP handler pool",
    "wb-sqlite-write": "SQLite writer",
    "wb-sqlite-ckpt": "SQLite checkpointer",
    "wb-pg-writer": "PostgreSQL writer",
    "wb-pg-listen": "PostgreSQL listener",
    "wb-delivery": "delivery engine",
    "wb-recorder": "attempt recorder",
    "wb-run-reaper": "local run starter (reaper)",
    "wb-upstream": "upstream run starter",
    "wb-scheduler": "scheduler",
    "wb-housekeep": "housekeeping",
}


def _threads(pid):
    """CPU ticks and bytes written (the pages each thread dirtied) by thread name."""
    ticks, written = {}, {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            io = _io(f"{pid}/task/{tid}")
        except OSError:
            continue  # the thread ended meanwhile
        ticks[name] = ticks.get(name, 0) + int(fields[11]) + int(fields[12])
        written[name] = written.get(name, 0) + io.get("write_bytes", 0)
    return ticks, written


def _io(pid):
    out = {}
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            k, v = line.split(":", 1)
            out[k.strip()] = int(v)
    return out


def _commits(base):
    try:
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return None
    m = re.search(r"^wopbridge_store_commits_total\s+(\S+)", text, re.M)
    return int(float(m.group(1))) if m else None


def _rows(db_path):
    if not db_path or not os.path.exists(db_path):
        return {}
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
    try:
        names = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        return {n: con.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}
    finally:
        con.close()


def snapshot(pid, base, db_path=None):
    io = _io(pid)
    ticks, written = _threads(pid)
    return {"ticks": ticks, "thread_write_bytes": written, "write_bytes": io.get("write_bytes", 0),
            "syscw": io.get("syscw", 0), "commits": _commits(base), "rows": _rows(db_path),
            "db_bytes": os.path.getsize(db_path) if db_path and os.path.exists(db_path) else None}


def per_event(before, after, events):
    if not events:
        return None
    cpu = {}
    for name, ticks in after["ticks"].items():
        role = ROLES.get(name, "other")
        cpu[role] = cpu.get(role, 0) + ticks - before["ticks"].get(name, 0)
    cpu_us = {role: round(t / HZ * 1e6 / events, 1) for role, t in sorted(cpu.items())}
    # A thread that ended between the snapshots took its bytes along: "other" may be short.
    written = {}
    for name, b in after.get("thread_write_bytes", {}).items():
        role = ROLES.get(name, "other")
        written[role] = written.get(role, 0) + b - before.get("thread_write_bytes", {}).get(name, 0)
    written = {role: round(b / events) for role, b in sorted(written.items()) if b}
    rows = {t: round((n - before["rows"].get(t, 0)) / events, 2)
            for t, n in after["rows"].items() if n != before["rows"].get(t, 0)}
    commits = (None if after["commits"] is None or before["commits"] is None
               else round((after["commits"] - before["commits"]) / events, 3))
    db_bytes = (None if after["db_bytes"] is None or before["db_bytes"] is None
                else round((after["db_bytes"] - before["db_bytes"]) / events))
    return {"events": events,
            "cpu_us_by_role": cpu_us,
            "cpu_us_total": round(sum(cpu.values()) / HZ * 1e6 / events, 1),
            "disk_bytes_written": round((after["write_bytes"] - before["write_bytes"]) / events),
            "disk_bytes_written_by_role": written,
            "write_syscalls": round((after["syscw"] - before["syscw"]) / events, 2),
            "commits": commits,
            "rows_added": rows,
            "rows_added_total": round(sum(rows.values()), 2),
            "database_growth_bytes": db_bytes}


def markdown(cost, title):
    """The per-event cost table, for bench/results/latest.md."""
    if not cost:
        return []
    lines = [f"Cost per acknowledged event — {title} ({cost['events']:,} events, drained):", "",
             "| Per event | Value |", "|---|---:|"]
    for role, us in sorted(cost["cpu_us_by_role"].items(), key=lambda kv: -kv[1]):
        lines.append(f"| CPU, {role} | {us:,.1f} µs |")
    lines += [f"| CPU, whole process | {cost['cpu_us_total']:,.1f} µs |",
              f"| bytes written to disk (`/proc/PID/io` write_bytes) | {cost['disk_bytes_written']:,} |",
              *[f"| bytes written, {role} | {b:,} |" for role, b in
                sorted(cost.get("disk_bytes_written_by_role", {}).items(), key=lambda kv: -kv[1])],
              f"| write system calls | {cost['write_syscalls']} |",
              f"| store commits (intake group commits fsync) | {cost['commits']} |",
              f"| rows added | {cost['rows_added_total']} "
              f"({', '.join(f'{t} {n}' for t, n in sorted(cost['rows_added'].items()))}) |",
              f"| database growth | {cost['database_growth_bytes']} bytes |", ""]
    return lines
