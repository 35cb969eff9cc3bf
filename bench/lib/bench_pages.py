"""bench/cost --pages: the pages SQLite wrote per event, by table and index.

The bridge runs with bench-wal-frames.so preloaded (bench/walpages/wal_frames.c), which logs every
WAL frame (its page number; a commit's last frame marked) and every page a checkpoint writes into
the database file. Afterwards the database's dbstat virtual table names the b-tree each page
belongs to. A page one commit dirties is one 4 KiB frame in the WAL however few bytes changed in
it, so this table says which rows' pages a commit rewrites: what the bytes written per event are
made of.
"""
import os
import sqlite3
import struct

from bench_env import BIN

SHIM = os.path.join(BIN, "bench-wal-frames.so")


def environment(db_path, log_path):
    """What the bridge's environment needs for the shim (the paths as the kernel names them)."""
    return {"LD_PRELOAD": SHIM, "WAL_FRAMES_DB": os.path.realpath(db_path),
            "WAL_FRAMES_LOG": log_path}


def log_size(log_path):
    return os.path.getsize(log_path) if os.path.exists(log_path) else 0


def _records(log_path, start, end):
    with open(log_path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    for i in range(0, len(data) - len(data) % 5, 5):
        kind, page = struct.unpack(">cI", data[i:i + 5])
        yield kind.decode(), page


def _owners(db_path):
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT name, pageno FROM dbstat").fetchall()
    finally:
        con.close()
    owners = {page: name for name, page in rows}
    owners[1] = owners.get(1, "sqlite_schema (page 1: header, change counter)")
    return owners


def per_event(db_path, log_path, start, end, events):
    """Frames and database page writes per event by b-tree, read after the bridge stopped."""
    owners = _owners(db_path)
    frames, checkpoint, commits = {}, {}, 0
    distinct_pages = set()
    for kind, page in _records(log_path, start, end):
        name = owners.get(page, "(freed since, or free list)")
        if kind in ("w", "c"):
            frames[name] = frames.get(name, 0) + 1
            distinct_pages.add(page)
            commits += kind == "c"
        else:
            checkpoint[name] = checkpoint.get(name, 0) + 1
    total = sum(frames.values())
    return {"events": events, "commits": commits,
            "frames_per_event": round(total / events, 2) if events else None,
            "frames_per_commit": round(total / commits, 1) if commits else None,
            "wal_frames_per_event_by_btree": {
                k: round(v / events, 3) for k, v in sorted(frames.items(), key=lambda kv: -kv[1])},
            "checkpoint_pages_per_event_by_btree": {
                k: round(v / events, 3)
                for k, v in sorted(checkpoint.items(), key=lambda kv: -kv[1])}}


def markdown(pages):
    out = [f"WAL frames (4 KiB pages) per event: {pages['frames_per_event']} "
           f"({pages['frames_per_commit']} per commit, {pages['commits']} commits for "
           f"{pages['events']} events)", "",
           "| b-tree | WAL frames per event | checkpoint pages per event |", "|---|---:|---:|"]
    ck = pages["checkpoint_pages_per_event_by_btree"]
    names = list(pages["wal_frames_per_event_by_btree"]) + [n for n in ck if n not in
                                                             pages["wal_frames_per_event_by_btree"]]
    for name in names:
        out.append(f"| {name} | {pages['wal_frames_per_event_by_btree'].get(name, 0)} | "
                   f"{ck.get(name, 0)} |")
    return out
