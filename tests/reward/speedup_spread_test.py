"""tools/bench/reward/speedup_spread.py on hand-made dice-judge lines: the ratios, their summary,
and the errors for bad input. Plain python3."""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "bench", "reward"))

import speedup_spread  # noqa: E402


def write_run(folder, name, speedups):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        for id_, speedup in speedups.items():
            f.write(json.dumps({"id": id_, "variant": "original", "correct": True,
                                "speedup": speedup,
                                "kernel_ms": None if speedup is None else 1.0 / speedup,
                                "reference_ms": 1.0}) + "\n")
    return path


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = speedup_spread.main(argv)
    return code, out.getvalue(), err.getvalue()


class SpeedupSpreadTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_ratios_of_candidates_timed_in_both_runs(self):
        # Ten candidates in both; "x" untimed in B and "y" only in A are left out.
        a = {str(i): 1.0 for i in range(10)}
        a.update({"x": 2.0, "y": 3.0})
        b = {str(i): 1.0 for i in range(7)}
        b.update({"7": 1.05, "8": 2.0, "9": 0.25, "x": None})
        ratios, summary = speedup_spread.spread(
            speedup_spread.timed_speedups(write_run(self.dir, "a.jsonl", a)),
            speedup_spread.timed_speedups(write_run(self.dir, "b.jsonl", b)))
        self.assertEqual(summary["candidates"], 10)
        self.assertEqual(summary["within_10_percent"], 8)
        self.assertAlmostEqual(summary["p10"], 1.0)  # the lowest, 0.25, is below p10 of ten
        self.assertAlmostEqual(summary["p50"], 1.0)
        self.assertAlmostEqual(summary["p90"], 2.0)
        self.assertAlmostEqual(summary["geomean"], (1.05 * 2.0 * 0.25) ** 0.1)
        self.assertAlmostEqual(ratios[("9", "original")], 0.25)

    def test_prints_the_summary_and_each_candidate(self):
        a = write_run(self.dir, "a.jsonl", {"1": 2.0, "2": 1.0})
        b = write_run(self.dir, "b.jsonl", {"1": 1.0, "2": 1.0})
        code, out, _ = run([a, b, "--per-candidate"])
        self.assertEqual(code, 0)
        self.assertIn("2 candidates timed in both", out)
        self.assertIn("1/original: B/A 0.500", out)

    def test_bad_input_is_named(self):
        good = write_run(self.dir, "a.jsonl", {"1": 1.0})
        bad = os.path.join(self.dir, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"id": "1", "variant": "original", "correct": true, "speedup": 1.0}\n'
                    'not json\n')
        code, _, err = run([good, bad])
        self.assertEqual(code, 2)
        self.assertIn("bad.jsonl:2: not JSON", err)
        code, _, err = run([good, os.path.join(self.dir, "missing.jsonl")])
        self.assertEqual(code, 2)
        self.assertIn("missing.jsonl", err)
        untimed = write_run(self.dir, "untimed.jsonl", {"1": None})
        code, _, err = run([good, untimed])
        self.assertEqual(code, 2)
        self.assertIn("no candidate has a speedup in both", err)


if __name__ == "__main__":
    unittest.main()
