#!/usr/bin/env python3
"""scripts/check-skips.py on hand-made ctest JUnit reports: an unnamed skip fails under CI=true and
only warns otherwise; an allowed one and a run without skips pass; an allowance needs a reason."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "check-skips.py")

REPORT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="t" tests="3">
  <testcase name="Store.PostgresBackend" status="notrun">
    <skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
    <system-out>[ RUN      ] Store.PostgresBackend
store_test.cpp:34: Skipped
PostgreSQL unavailable: initdb not found
[  SKIPPED ] Store.PostgresBackend (0 ms)
</system-out>
  </testcase>
  <testcase name="Bench.DISABLED_Measure" status="disabled"><system-out>Disabled</system-out></testcase>
  <testcase name="Ok.Runs" status="run"><system-out></system-out></testcase>
</testsuite>
"""


class CheckSkipsTest(unittest.TestCase):
    def run_check(self, report, allow, ci):
        with tempfile.TemporaryDirectory() as d:
            junit = os.path.join(d, "junit.xml")
            allowed = os.path.join(d, "allowed.txt")
            with open(junit, "w") as f:
                f.write(report)
            with open(allowed, "w") as f:
                f.write(allow)
            env = dict(os.environ, CI="true" if ci else "")
            return subprocess.run([sys.executable, SCRIPT, junit, "--allow", allowed],
                                  capture_output=True, text=True, env=env)

    def test_an_unnamed_skip_fails_under_ci_with_its_reason(self):
        r = self.run_check(REPORT, "Bench.DISABLED_*  a measurement\n", ci=True)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("Store.PostgresBackend was skipped without an allowance: "
                      "PostgreSQL unavailable: initdb not found", r.stdout)
        self.assertNotIn("Bench.DISABLED_Measure was skipped", r.stdout)

    def test_an_unnamed_skip_only_warns_outside_ci(self):
        r = self.run_check(REPORT, "", ci=False)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("warning: Store.PostgresBackend", r.stdout)
        self.assertIn("warning: Bench.DISABLED_Measure", r.stdout)

    def test_allowed_skips_pass(self):
        r = self.run_check(REPORT, "# why each may skip\nStore.*  no server here\nBench.DISABLED_*  a measurement\n",
                           ci=True)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("2 skipped or disabled, all allowed", r.stdout)

    def test_an_allowance_without_a_reason_is_refused(self):
        r = self.run_check(REPORT, "Store.PostgresBackend\n", ci=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("has no reason", r.stderr)


if __name__ == "__main__":
    unittest.main()
