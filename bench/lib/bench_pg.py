"""A PostgreSQL server for the cost table, and what it spent per acknowledged event: server CPU
(every backend, the WAL writer, the checkpointer; the postmaster's reaped children included),
bytes its processes wrote, commits, rows inserted and updated (pg_stat_database), WAL records,
bytes and syncs (pg_stat_wal), and server execution time by statement (pg_stat_statements).

The server is the Debian build on loopback with stock durability (fsync, synchronous_commit on,
full_page_writes on), in a directory under build-bench/tmp: the disk a real store would use.
"""
import glob
import os
import shutil
import socket
import subprocess

HZ = os.sysconf("SC_CLK_TCK")


def _bindir():
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                  key=lambda d: int(d.split("/")[-2]) if d.split("/")[-2].isdigit() else 0)
    if not dirs or not os.path.exists(os.path.join(dirs[-1], "initdb")):
        raise RuntimeError("PostgreSQL server binaries not found (scripts/setup-debian.sh postgres)")
    return dirs[-1]


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, work):
        self.bin = _bindir()
        self.dir = os.path.join(work, "pg")
        self.port = _free_port()
        self.as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        os.makedirs(self.dir)
        if self.as_pg:
            os.chmod(work, 0o711)  # a temp dir is root's alone: let the server's user through
            shutil.chown(self.dir, "postgres")  # initdb refuses root
        subprocess.run(self.as_pg + [f"{self.bin}/initdb", "-D", f"{self.dir}/data", "-U",
                                     "postgres", "-A", "trust", "-E", "UTF8", "--no-instructions"],
                       check=True, stdout=subprocess.DEVNULL)
        opts = (f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.dir}"
                " -c max_connections=100 -c shared_preload_libraries=pg_stat_statements"
                " -c pg_stat_statements.track=all -c track_io_timing=on "
                # e.g. "-c session_preload_libraries=auto_explain -c auto_explain.log_analyze=on"
                + os.environ.get("BENCH_PG_OPTIONS", ""))
        subprocess.run(self.as_pg + [f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-l",
                                     f"{self.dir}/postgres.log", "-w", "-t", "60", "-o", opts,
                                     "start"], check=True, stdout=subprocess.DEVNULL)
        self.sql("CREATE EXTENSION pg_stat_statements")
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def sql(self, text):
        out = subprocess.run([f"{self.bin}/psql", "-X", "-q", "-A", "-t", "-F", "\t", "-h",
                              "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-c", text],
                             check=True, capture_output=True, text=True).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    def stop(self):
        subprocess.run(self.as_pg + [f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-m", "fast",
                                     "-w", "stop"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    def _postmaster(self):
        with open(f"{self.dir}/data/postmaster.pid") as f:
            return int(f.readline())

    def _processes(self):
        """(ticks, write_bytes) of the postmaster, its live children and its reaped ones."""
        pm = self._postmaster()
        ticks = written = 0
        for pid in [pm] + _children(pm):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{pid}/io") as f:
                    io = dict(line.split(":", 1) for line in f)
            except OSError:
                continue
            ticks += int(fields[11]) + int(fields[12])
            if pid == pm:
                ticks += int(fields[13]) + int(fields[14])  # children already reaped
            written += int(io["write_bytes"])
        return ticks, written

    def reset(self):
        self.sql("SELECT pg_stat_statements_reset()")

    def snapshot(self):
        ticks, written = self._processes()
        db = self.sql("SELECT xact_commit, tup_inserted, tup_updated, tup_deleted "
                      "FROM pg_stat_database WHERE datname = 'postgres'")[0]
        wal = self.sql("SELECT wal_records, wal_fpi, wal_bytes, wal_sync FROM pg_stat_wal")[0]
        # toplevel: a statement the bridge sent. The nested ones (foreign-key checks run by the
        # server for a statement) are already inside that statement's time.
        stmts = self.sql("SELECT queryid, toplevel, calls, total_exec_time, rows, "
                         "regexp_replace(left(query, 90), '\\s+', ' ', 'g') "
                         "FROM pg_stat_statements WHERE dbid = "
                         "(SELECT oid FROM pg_database WHERE datname = 'postgres')")
        return {"ticks": ticks, "write_bytes": written,
                "db": [int(v) for v in db], "wal": [float(v) for v in wal],
                "statements": {(s[0], s[1] == "t"): (int(s[2]), float(s[3]), int(s[4]), s[5])
                               for s in stmts}}


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def per_event(before, after, events, top=8):
    if not events:
        return None
    db = [a - b for a, b in zip(after["db"], before["db"])]
    wal = [a - b for a, b in zip(after["wal"], before["wal"])]
    stmts = []
    for key, (calls, ms, rows, text) in after["statements"].items():
        c0, ms0, r0, _ = before["statements"].get(key, (0, 0.0, 0, ""))
        if calls > c0:
            stmts.append({"query": text, "nested": not key[1],
                          "calls_per_event": round((calls - c0) / events, 3),
                          "ms_per_call": round((ms - ms0) / (calls - c0), 4),
                          "us_per_event": round((ms - ms0) * 1000 / events, 1)})
    stmts.sort(key=lambda s: -s["us_per_event"])
    sent = [s for s in stmts if not s["nested"]]
    nested = [s for s in stmts if s["nested"]]
    return {"server_cpu_us": round((after["ticks"] - before["ticks"]) / HZ * 1e6 / events, 1),
            "server_bytes_written": round((after["write_bytes"] - before["write_bytes"]) / events),
            "commits": round(db[0] / events, 3), "rows_inserted": round(db[1] / events, 2),
            "rows_updated": round(db[2] / events, 2), "rows_deleted": round(db[3] / events, 2),
            "wal_records": round(wal[0] / events, 2), "wal_full_page_images": round(wal[1] / events, 3),
            "wal_bytes": round(wal[2] / events), "wal_syncs": round(wal[3] / events, 3),
            "statements": round(sum(s["calls_per_event"] for s in sent), 2),
            "exec_us": round(sum(s["us_per_event"] for s in sent), 1),
            "nested_statements": round(sum(s["calls_per_event"] for s in nested), 2),
            "nested_exec_us": round(sum(s["us_per_event"] for s in nested), 1),
            "top": stmts[:top]}


def markdown(pg):
    if not pg:
        return []
    lines = ["PostgreSQL server, per acknowledged event:", "", "| Per event | Value |", "|---|---:|",
             f"| server CPU (every PostgreSQL process) | {pg['server_cpu_us']:,.1f} µs |",
             f"| server execution time (pg_stat_statements) | {pg['exec_us']:,.1f} µs |",
             f"| statements | {pg['statements']} |",
             f"| nested statements (foreign-key checks), already inside the time above | "
             f"{pg['nested_statements']} ({pg['nested_exec_us']:,.1f} µs) |",
             f"| commits | {pg['commits']} |",
             f"| rows inserted / updated / deleted | {pg['rows_inserted']} / {pg['rows_updated']} / "
             f"{pg['rows_deleted']} |",
             f"| WAL records / full-page images / bytes | {pg['wal_records']} / "
             f"{pg['wal_full_page_images']} / {pg['wal_bytes']:,} |",
             f"| WAL syncs | {pg['wal_syncs']} |",
             f"| bytes written by the server's processes | {pg['server_bytes_written']:,} |", "",
             "| Statement (top by execution time) | calls/event | ms/call | µs/event |",
             "|---|---:|---:|---:|"]
    for s in pg["top"]:
        q = s["query"].replace("|", "\\|")
        q = f"`{q}`" + (" (nested)" if s["nested"] else "")
        lines.append(f"| {q} | {s['calls_per_event']} | {s['ms_per_call']} | {s['us_per_event']} |")
    return lines + [""]

