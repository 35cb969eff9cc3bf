#!/usr/bin/env python3
"""Runs the shell blocks of a Markdown file the way a reader would type them.

Usage: run_doc_commands.py --source-dir DIR --build-dir DIR [--keep] [--list] FILE.md

Every fenced block whose info string is `sh`, `bash` or `shell` is a command block; it runs, in the
order of the file, in a scratch copy of the source tree (build/ in the copy links to --build-dir, so
`build/bin/wopbridge` is the real build's program). A comment on the line(s) just above a block
changes how it runs (CONTRIBUTING.md, "Commands in docs run"):

  <!-- doc-test: skip REASON -->        not run; the reason is required
  <!-- doc-test: background -->         its last command runs until Ctrl-C (a server): it is started
                                        in its own process group, the block is ready when
                                        $WOPBRIDGE_URL/readyz answers 200 (or when `until="REGEX"`
                                        matches its output), and it gets SIGINT at the end
  <!-- doc-test: second-terminal -->    runs in a second terminal: a shell of its own, started like
                                        the first (nothing the first exported is set there)
  <!-- doc-test: stop -->               Ctrl-C first: the terminal's background command is stopped
                                        before the block runs in that terminal
  options: expect="REGEX" (the block's output must match), until="REGEX", timeout=SECONDS

Each terminal is one bash that keeps its variables and working directory from block to block, with
`set -euo pipefail`: a failing command, a failing pipeline stage or an unset variable fails the
block, and so the test. A block for a terminal whose background command still runs is refused
(mark it second-terminal, or stop). Indented code blocks are refused: commands are fenced.

The terminals start with WOPBRIDGE_LISTEN / WOPBRIDGE_URL set to a free loopback port (`serve`
honours WOPBRIDGE_LISTEN; docs default WOPBRIDGE_URL to http://127.0.0.1:8080), BASE_PORT to a
free range for the cluster example, and TMPDIR inside the scratch directory. build/bin is not on
PATH: a doc that says `wopbridge` means an installed one.
"""
import argparse
import fcntl
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SHELL_LANGS = {"sh", "bash", "shell"}
KINDS = {"skip", "background", "second-terminal", "stop"}
MARKER = re.compile(r"^\s*<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
OPTION = re.compile(r'(\w+)=(?:"((?:[^"\\]|\\.)*)"|(\S+))')


class DocError(Exception):
    pass


# The whole file's budget: below ctest's TIMEOUT, so a stuck doc still cleans up after itself.
DEADLINE = [float("inf")]


def budget(seconds):
    return max(1.0, min(seconds, DEADLINE[0] - time.monotonic()))


def on_signal(sig, frame):
    raise DocError("stopped by signal %d" % sig)


class Block:
    def __init__(self, path, line, text):
        self.path, self.line, self.text = path, line, text
        self.kinds, self.options, self.reason = set(), {}, None

    def where(self):
        return "%s:%d" % (self.path, self.line)


def parse_marker(block, spec, where):
    if spec.startswith("skip"):
        reason = spec[len("skip"):].strip()
        if not reason:
            raise DocError("%s: `doc-test: skip` needs a reason" % where)
        block.kinds.add("skip")
        block.reason = reason
        return
    for m in OPTION.finditer(spec):
        value = m.group(2) if m.group(2) is not None else m.group(3)
        block.options[m.group(1)] = value.replace('\\"', '"')
    rest = OPTION.sub(" ", spec)
    for word in rest.split():
        if word not in KINDS:
            raise DocError("%s: unknown doc-test marker word '%s'" % (where, word))
        block.kinds.add(word)
    for key in block.options:
        if key not in ("expect", "until", "timeout"):
            raise DocError("%s: unknown doc-test option '%s'" % (where, key))


def parse(path, display):
    """Returns the command blocks of a Markdown file, with their markers."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, pending, fence, body, start = [], [], None, [], 0
    in_list, prev_blank = False, True
    for n, line in enumerate(lines, 1):
        if fence is not None:
            if line.strip().startswith(fence[0]) and line.strip().strip(fence[0][0]) == "":
                if fence[1]:
                    b = Block(display, start, "\n".join(body) + "\n")
                    for where, spec in pending:
                        parse_marker(b, spec, where)
                    blocks.append(b)
                elif pending:
                    raise DocError("%s: a doc-test marker above a block that is not ```sh"
                                   % pending[0][0])
                pending, fence = [], None
            else:
                body.append(line)
            continue
        m = re.match(r"^(\s*)(```+|~~~+)\s*([\w+-]*)", line)
        if m:
            fence = (m.group(2), m.group(3).lower() in SHELL_LANGS)
            body, start = [], n
            prev_blank = False
            continue
        marker = MARKER.match(line)
        if marker:
            pending.append(("%s:%d" % (display, n), marker.group(1)))
            continue
        if line.strip() == "":
            prev_blank = True
            continue
        if re.match(r"^\s*([-*+]|\d+[.)])\s", line):
            in_list = True
        elif not line.startswith(" "):
            in_list = False
        if line.startswith("    ") and prev_blank and not in_list:
            raise DocError("%s:%d: an indented code block; fence commands with ```sh (and other "
                           "text with ``` or ```yaml…) so the doc test sees them" % (display, n))
        if pending:
            raise DocError("%s: a doc-test marker must sit right above a ```sh block"
                           % pending[0][0])
        prev_blank = False
    if fence is not None:
        raise DocError("%s:%d: unclosed code fence" % (display, start))
    if pending:
        raise DocError("%s: a doc-test marker at the end of the file" % pending[0][0])
    return blocks


def logical_commands(text):
    """Splits a block into logical lines (backslash continuations joined), comments dropped."""
    out, cur = [], ""
    for line in text.split("\n"):
        if not cur and (line.strip() == "" or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            cur += line + "\n"
            continue
        out.append(cur + line)
        cur = ""
    if cur:
        out.append(cur)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_range(count):
    """A base such that base+1 .. base+count are free loopback ports (the cluster's nodes)."""
    for _ in range(200):
        base = random.randint(20000, 59000)
        socks = []
        try:
            for p in range(base + 1, base + count + 1):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise DocError("no free port range found")


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def stop_group(pgid, first=signal.SIGINT, grace=10.0, leader=None):
    """Ctrl-C (SIGINT) the group, then SIGTERM, then SIGKILL; returns the signal that ended it.
    leader: the group leader's Popen when it is our child (reaped here: a zombie still counts)."""
    def alive():
        if leader is not None:
            leader.poll()
        return group_alive(pgid)

    for sig, wait in ((first, grace), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        if not alive():
            return None
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return None
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not alive():
                return sig
            time.sleep(0.05)
    return signal.SIGKILL


class Terminal:
    """One interactive-like shell: a bash reading commands from a pipe, state kept across blocks."""

    def __init__(self, number, cwd, env, work):
        self.number, self.work, self.seq = number, work, 0
        self.background = None  # (pgid, output path, block)
        self.proc = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     cwd=cwd, env=env, start_new_session=True, text=True)
        self.send("set -euo pipefail")

    def send(self, line):
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass

    def files(self):
        self.seq += 1
        stem = os.path.join(self.work, "t%d-%03d" % (self.number, self.seq))
        return stem + ".sh", stem + ".out", stem + ".done"

    def run(self, text, timeout):
        """Runs text in this shell; returns (ok, output, why)."""
        script, out, done = self.files()
        with open(script, "w") as f:
            f.write(text)
        self.send("source %s </dev/null >%s 2>&1; echo $? >%s" % (
            shlex.quote(script), shlex.quote(out), shlex.quote(done)))
        timeout = budget(timeout)
        deadline = time.monotonic() + timeout
        while not os.path.exists(done):
            if self.proc.poll() is not None:
                return False, read(out), "a command failed (exit status %d)" % self.proc.returncode
            if time.monotonic() > deadline:
                stop_group(self.proc.pid, signal.SIGTERM, 2.0, self.proc)
                return False, read(out), "did not finish within %d s" % round(timeout)
            time.sleep(0.05)
        return True, read(out), None

    def start(self, text):
        """Starts text as a job of its own (its own process group, like a foreground command)."""
        script, out, done = self.files()
        with open(script, "w") as f:
            f.write(text)
        self.send("set -m; source %s </dev/null >%s 2>&1 & echo $! >%s; set +m" % (
            shlex.quote(script), shlex.quote(out), shlex.quote(done)))
        deadline = time.monotonic() + 10
        while not read(done).endswith("\n"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise DocError("terminal %d did not start the background command" % self.number)
            time.sleep(0.02)
        return int(read(done).strip()), out

    def close(self):
        if self.background:
            stop_group(self.background[0])
            self.background = None
        self.send("exit 0")
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        # Whatever the blocks left running with `&` (a redis-server, an HTTP server) goes too.
        stop_group(self.proc.pid, signal.SIGTERM, 5.0, self.proc)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def wait_ready(block, pgid, out, env, timeout):
    until = block.options.get("until")
    url = env["WOPBRIDGE_URL"] + "/readyz"
    timeout = budget(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if until is not None:
            if re.search(until, read(out), re.M):
                return
        else:
            try:
                with urllib.request.urlopen(url, timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
        if not group_alive(pgid):
            raise DocError("%s: the background command exited before it was ready:\n%s"
                           % (block.where(), read(out)))
        time.sleep(0.1)
    what = "its output to match %r" % until if until is not None else url + " to answer 200"
    raise DocError("%s: waited %d s for %s; output:\n%s"
                   % (block.where(), round(timeout), what, read(out)))


def copy_tree(source, dest, build):
    skip = {".git", "var", ".cache", "node_modules", "__pycache__"}

    def ignore(d, names):
        if os.path.abspath(d) == os.path.abspath(source):
            return [n for n in names if n in skip or n.startswith("build")]
        return [n for n in names if n in ("node_modules", "__pycache__")]

    shutil.copytree(source, dest, symlinks=True, ignore=ignore)
    os.symlink(os.path.abspath(build), os.path.join(dest, "build"))


def show(title, text):
    if text and not text.endswith("\n"):
        text += "\n"
    sys.stdout.write("---- %s\n%s" % (title, text))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--list", action="store_true", help="list the blocks and how they run")
    ap.add_argument("--budget", type=float, default=240,
                    help="seconds for the whole file (default 240; ctest allows 300)")
    ap.add_argument("file")
    a = ap.parse_args()
    source = os.path.abspath(a.source_dir)
    rel = os.path.relpath(os.path.abspath(os.path.join(source, a.file)), source)
    try:
        blocks = parse(os.path.join(source, rel), rel)
    except DocError as e:
        print("FAIL %s" % e)
        return 1
    if a.list:
        for b in blocks:
            how = ", ".join(sorted(b.kinds)) or "run"
            print("%s  %s%s" % (b.where(), how, (" (" + b.reason + ")") if b.reason else ""))
        return 0
    if not os.path.exists(os.path.join(a.build_dir, "bin", "wopbridge")):
        print("FAIL %s/bin/wopbridge does not exist: build first" % a.build_dir)
        return 1

    # Docs with fixed ports (SMTP 2525, Redis 6379, a page on 8000) run one at a time on a machine.
    # /tmp, not $TMPDIR: the lock is for every run on the machine.
    lock = open("/tmp/wopbridge-doc-test-%s.lock" % re.sub(r"[^A-Za-z0-9]+", "-", rel), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)

    DEADLINE[0] = time.monotonic() + a.budget
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    scratch = tempfile.mkdtemp(prefix="wopbridge-doc-")
    os.chmod(scratch, 0o755)  # the cluster example runs PostgreSQL as another user when root
    root = os.path.join(scratch, "tree")
    work = os.path.join(scratch, "blocks")
    os.makedirs(work)
    os.makedirs(os.path.join(scratch, "tmp"))
    copy_tree(source, root, a.build_dir)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WOPBRIDGE_", "PG"))}
    env.update({
        "WOPBRIDGE_LISTEN": "127.0.0.1:%d" % port,
        "WOPBRIDGE_URL": "http://127.0.0.1:%d" % port,
        "BASE_PORT": str(free_range(3)),
        "TMPDIR": os.path.join(scratch, "tmp"),
    })
    print("doc test of %s in %s (bridge on %s, BASE_PORT %s)"
          % (rel, root, env["WOPBRIDGE_URL"], env["BASE_PORT"]))
    terminals = {}
    failed = None
    ran = skipped = 0
    started = time.monotonic()
    try:
        for b in blocks:
            if "skip" in b.kinds:
                show("%s  skipped: %s" % (b.where(), b.reason), "")
                skipped += 1
                continue
            number = 2 if "second-terminal" in b.kinds else 1
            t = terminals.get(number)
            if t is None:
                t = terminals[number] = Terminal(number, root, env, work)
            if "stop" in b.kinds:
                if not t.background:
                    raise DocError("%s: `stop`, but terminal %d runs nothing" % (b.where(), number))
                pgid, out, owner = t.background
                if not group_alive(pgid):
                    raise DocError("%s: the background command of %s exited before the stop:\n%s"
                                   % (b.where(), owner.where(), read(out)))
                stop_group(pgid)
                show("%s  Ctrl-C in terminal %d: %s stopped" % (b.where(), number, owner.where()),
                     read(out))
                t.background = None
            if t.background:
                raise DocError("%s: terminal %d still runs the background command of %s: mark "
                               "this block second-terminal (or stop it first)"
                               % (b.where(), number, t.background[2].where()))
            timeout = int(b.options.get("timeout", 180))
            title = "%s  terminal %d%s" % (b.where(), number,
                                          ", background" if "background" in b.kinds else "")
            show(title, "".join("$ " + c + "\n" for c in logical_commands(b.text)))
            ran += 1
            if "background" in b.kinds:
                cmds = logical_commands(b.text)
                if not cmds:
                    raise DocError("%s: an empty background block" % b.where())
                if len(cmds) > 1:
                    ok, output, why = t.run("\n".join(cmds[:-1]) + "\n", timeout)
                    sys.stdout.write(output)
                    if not ok:
                        raise DocError("%s: %s" % (b.where(), why))
                pgid, out = t.start(cmds[-1] + "\n")
                t.background = (pgid, out, b)
                wait_ready(b, pgid, out, env, timeout)
                show("%s  ready; its output so far" % b.where(), read(out))
                continue
            ok, output, why = t.run(b.text, timeout)
            sys.stdout.write(output)
            if not ok:
                raise DocError("%s: %s" % (b.where(), why))
            expect = b.options.get("expect")
            if expect is not None and not re.search(expect, output, re.M):
                raise DocError("%s: the output does not match expect=%r" % (b.where(), expect))
        for t in terminals.values():
            if t.background:
                pgid, out, owner = t.background
                if not group_alive(pgid):
                    raise DocError("%s: the background command exited before the end:\n%s"
                                   % (owner.where(), read(out)))
                stop_group(pgid)
                show("%s  stopped (Ctrl-C); its output" % owner.where(), read(out))
                t.background = None
    except DocError as e:
        failed = str(e)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # clean up whatever happens meanwhile
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for t in terminals.values():
            if t.background:
                show("%s  background output" % t.background[2].where(), read(t.background[1]))
            t.close()
        if failed or a.keep:
            print("scratch directory kept: %s" % scratch)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    elapsed = time.monotonic() - started
    if failed:
        print("FAIL %s" % failed)
        return 1
    print("OK %s: %d block(s) run, %d skipped, %.1f s" % (rel, ran, skipped, elapsed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
