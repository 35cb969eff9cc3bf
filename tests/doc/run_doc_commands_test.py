#!/usr/bin/env python3
"""The doc-test runner on small made-up docs: what passes, and each way a doc fails it."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "run_doc_commands.py")
FENCE = "`" * 3


def doc(*parts):
    return "\n".join(parts) + "\n"


def sh(*lines, marker=None):
    head = ["<!-- doc-test: %s -->" % marker] if marker else []
    return "\n".join(head + [FENCE + "sh"] + list(lines) + [FENCE, ""])


CASES = [
    ("a plain block runs", True, None,
     doc("# t", "", sh("echo hello", "test -f selftest.md"))),
    ("a failing command fails the doc", False, "selftest.md:3: a command failed",
     doc("# t", "", sh("true", "false", "echo never"))),
    ("an unset variable fails the doc", False, "a command failed",
     doc("# t", "", sh('echo "$NOT_SET_ANYWHERE"'))),
    ("a failing pipeline stage fails the doc", False, "a command failed",
     doc("# t", "", sh("false | cat"))),
    ("variables and the directory persist within a terminal", True, None,
     doc("# t", "", sh("X=1; cd examples"), "", sh('test "$X" = 1', "test -d ../examples"))),
    ("a second terminal has none of the first one's variables", False, "a command failed",
     doc("# t", "", sh("export ONLY_HERE=1"), "",
         sh('echo "$ONLY_HERE"', marker="second-terminal"))),
    ("expect must match the output", False, "does not match expect",
     doc("# t", "", sh("echo hello", marker='expect="^goodbye"'))),
    ("expect matches", True, None,
     doc("# t", "", sh("echo hello world", marker='expect="^hello w"'))),
    ("an indented code block is refused", False, "an indented code block",
     doc("# t", "", "    echo indented", "")),
    ("an indented list continuation is text", True, None,
     doc("# t", "", "- item", "", "    more of the item", "")),
    ("skip needs a reason", False, "needs a reason",
     doc("# t", "", sh("false", marker="skip"))),
    ("a skipped block does not run", True, None,
     doc("# t", "", sh("false", marker="skip it cannot run here"))),
    ("an unknown marker word is refused", False, "unknown doc-test marker word",
     doc("# t", "", sh("true", marker="backgruond"))),
    ("a marker must sit above a shell block", False, "not ```sh",
     doc("# t", "", "<!-- doc-test: second-terminal -->", FENCE + "yaml", "a: 1", FENCE, "")),
    ("a background server, a second terminal, then the end", True, None,
     doc("# t", "",
         sh("export SECRET=s3", "sh -c 'echo serving $SECRET; exec sleep 300'",
            marker='background until="serving s3"'), "",
         sh("echo client", marker="second-terminal expect=client"))),
    ("a block for a busy terminal is refused", False, "still runs the background command",
     doc("# t", "", sh("sh -c 'echo up; exec sleep 300'", marker='background until="up"'), "",
         sh("echo same terminal"))),
    ("stop frees the terminal, with its variables kept", True, None,
     doc("# t", "",
         sh("export KEPT=1", "sh -c 'echo up; exec sleep 300'", marker='background until="up"'),
         "", sh('test "$KEPT" = 1', marker="stop"))),
    ("a background command that exits before it is ready fails", False,
     "exited before it was ready",
     doc("# t", "", sh("sh -c 'echo oops; exit 3'", marker='background until="never"'))),
    ("a background command that dies before the end fails", False, "exited before the end",
     doc("# t", "", sh("sh -c 'echo up; sleep 0.2'", marker='background until="up"'), "",
         sh("sleep 1", marker="second-terminal"))),
    ("a block that hangs times out", False, "did not finish within 1 s",
     doc("# t", "", sh("sleep 30", marker="timeout=1"))),
]


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        build = os.path.join(tmp, "build")
        os.makedirs(os.path.join(build, "bin"))
        with open(os.path.join(build, "bin", "wopbridge"), "w") as f:
            f.write("#!/bin/sh\n")
        for i, (name, ok, needle, text) in enumerate(CASES):
            src = os.path.join(tmp, "src%d" % i)
            os.makedirs(os.path.join(src, "examples"))
            with open(os.path.join(src, "selftest.md"), "w") as f:
                f.write(text)
            # TMPDIR: the scratch copies a failing doc keeps go with this directory.
            env = dict(os.environ, TMPDIR=tmp)
            r = subprocess.run([sys.executable, RUNNER, "--source-dir", src, "--build-dir", build,
                                "selftest.md"], capture_output=True, text=True, timeout=120,
                               env=env)
            out = r.stdout + r.stderr
            good = (r.returncode == 0) == ok and (needle is None or needle in out)
            print("%s %s" % ("ok  " if good else "FAIL", name))
            if not good:
                failures += 1
                print("  exit %d, wanted %s%s\n%s" % (r.returncode, "0" if ok else "non-zero",
                                                       (" and %r" % needle) if needle else "", out))
    print("%d of %d cases failed" % (failures, len(CASES)) if failures else "all %d cases pass"
          % len(CASES))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
