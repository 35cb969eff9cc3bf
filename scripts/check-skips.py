#!/usr/bin/env python3
"""Fails a CI run on a skipped test that has no named allowance.

A GTEST_SKIP (a missing tool, an unavailable server) counts as passed for ctest, so a CI could stay
green while skipping whole areas. Every skipped or disabled test in the ctest JUnit report must
match a line of tests/allowed-skips.txt ("<name or fnmatch pattern>  <why>"); with CI=true (or
--strict) any other one fails the run, otherwise it is listed as a warning.

Usage: scripts/check-skips.py JUNIT_XML [--allow FILE] [--strict]
"""
import fnmatch
import os
import sys
import xml.etree.ElementTree as ET


def allowances(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            pattern, _, why = line.partition(" ")
            if not why.strip():
                sys.exit(f"{path}: '{pattern}' has no reason; write why it may skip")
            out.append(pattern)
    return out


def skip_reason(case):
    # GoogleTest prints "file:line: Skipped" and then the GTEST_SKIP message.
    lines = (case.findtext("system-out") or "").splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.rstrip().endswith(": Skipped") and lines[i + 1].strip():
            return lines[i + 1].strip()[:200]
    if case.get("status") == "disabled":
        return "disabled"
    skipped = case.find("skipped")
    return skipped.get("message", "skipped") if skipped is not None else "skipped"


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    strict = "--strict" in argv or os.environ.get("CI", "") == "true"
    allow_file = "tests/allowed-skips.txt"
    if "--allow" in argv:
        allow_file = argv[argv.index("--allow") + 1]
        args.remove(allow_file)
    if len(args) != 1:
        sys.exit(__doc__)
    allowed = allowances(allow_file)
    unexpected = []
    skipped = 0
    for case in ET.parse(args[0]).getroot().iter("testcase"):
        status = case.get("status", "")
        if case.find("skipped") is None and status not in ("notrun", "disabled"):
            continue
        skipped += 1
        name = case.get("name", "")
        if not any(fnmatch.fnmatchcase(name, p) for p in allowed):
            unexpected.append((name, skip_reason(case)))
    if not unexpected:
        print(f"check-skips: {skipped} skipped or disabled, all allowed by {allow_file}")
        return 0
    word = "error" if strict else "warning"
    for name, why in unexpected:
        print(f"check-skips: {word}: {name} was skipped without an allowance: {why}")
    if strict:
        print(f"check-skips: {len(unexpected)} unexpected skip(s); install what they need "
              f"(scripts/setup-debian.sh) or name them in {allow_file} with a reason")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
