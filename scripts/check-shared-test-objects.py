#!/usr/bin/env python3
"""Checks that test code compiles with the same command line in two build directories.

The sanitizer build takes its test objects from the compiler cache of the normal build only when
their command lines match (tests/CMakeLists.txt strips sanitizer and hardening flags from test
code). A flag that leaks into one of them silently recompiles every test, about 16 CPU minutes in
CI. Usage: check-shared-test-objects.py <build-dir> <other-build-dir>. With CI=true a difference
fails; otherwise it is a warning.
"""
import json
import os
import sys


def test_commands(build_dir):
    build_dir = os.path.abspath(build_dir)
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        entries = json.load(f)
    commands = {}
    for entry in entries:
        command = entry["command"].replace(build_dir, "<build>")
        source = entry["file"].replace(build_dir, "<build>")
        if "/tests/" in source and "/fuzz/" not in source:
            commands[source] = command
    return commands


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    first, second = (test_commands(d) for d in sys.argv[1:])
    differing = sorted(s for s in first.keys() & second.keys() if first[s] != second[s])
    missing = sorted(first.keys() ^ second.keys())
    if not first:
        print("check-shared-test-objects: no test sources in " + sys.argv[1], file=sys.stderr)
        return 1
    if not differing and not missing:
        print(f"check-shared-test-objects: {len(first)} test compile commands identical")
        return 0
    for source in differing[:5]:
        a, b = first[source].split(), second[source].split()
        print(f"differs: {source}\n  only in {sys.argv[1]}: {sorted(set(a) - set(b))}"
              f"\n  only in {sys.argv[2]}: {sorted(set(b) - set(a))}", file=sys.stderr)
    for source in missing[:5]:
        print(f"in one build only: {source}", file=sys.stderr)
    print(f"check-shared-test-objects: {len(differing)} differing, {len(missing)} unmatched; the "
          "sanitizer build will recompile them (strip the flag from test code in "
          "tests/CMakeLists.txt)", file=sys.stderr)
    return 1 if os.environ.get("CI") == "true" else 0


if __name__ == "__main__":
    sys.exit(main())
