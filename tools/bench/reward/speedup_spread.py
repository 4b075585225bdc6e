#!/usr/bin/env python3
"""How far the same candidates' timed speedups moved between two dice-judge runs.

  speedup_spread.py RUN_A.jsonl RUN_B.jsonl [--per-candidate]

For every candidate timed in both runs (id and variant, a speedup in each), the ratio B / A;
prints their count, geometric mean, p10 / p50 / p90 and how many lie within 10% of 1. Two runs
of the same candidates on the same machine should read close to 1 throughout: a wide spread says
the timing, not the candidates, moved (on 2026-11-30 0.28-4.06 p10-p90 with 8 slots sharing one
H200, 0.78-1.40 with one slot: docs/BENCHMARKS.md, "Timed speedups with 8 slots on one GPU are
noise"). --per-candidate adds each one's kernel_ms and reference_ms in both runs. The lines are
read by kernelbench/compare.py's read_verdicts (errors name file:line). Exit status 2 for
unreadable input or nothing to compare.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernelbench"))
from compare import InputError, read_verdicts  # noqa: E402  dice-judge lines, errors by file:line


def timed_speedups(path):
    """{(id, variant): verdict line} for the lines of `path` with a positive speedup."""
    return {key: v for key, v in read_verdicts(path).items()
            if isinstance(v.get("speedup"), (int, float)) and v["speedup"] > 0}


def percentile(sorted_values, p):
    return sorted_values[min(len(sorted_values) - 1, int(p * len(sorted_values)))]


def spread(run_a, run_b):
    """The ratios B / A by candidate and their summary (a dict)."""
    keys = sorted(set(run_a) & set(run_b))
    ratios = {k: run_b[k]["speedup"] / run_a[k]["speedup"] for k in keys}
    values = sorted(ratios.values())
    if not values:
        return ratios, None
    return ratios, {
        "candidates": len(values),
        "geomean": math.exp(sum(math.log(v) for v in values) / len(values)),
        "p10": percentile(values, 0.10),
        "p50": percentile(values, 0.50),
        "p90": percentile(values, 0.90),
        "within_10_percent": sum(1 for v in values if 0.9 <= v <= 1.1),
    }


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.add_argument("--per-candidate", action="store_true")
    args = p.parse_args(argv)
    try:
        run_a, run_b = timed_speedups(args.run_a), timed_speedups(args.run_b)
    except InputError as e:
        print("speedup_spread: %s" % e, file=sys.stderr)
        return 2
    ratios, summary = spread(run_a, run_b)
    if summary is None:
        print("speedup_spread: no candidate has a speedup in both %s and %s" %
              (args.run_a, args.run_b), file=sys.stderr)
        return 2
    print("%d candidates timed in both: speedup B/A geomean %.3f, p10 %.3f, p50 %.3f, p90 %.3f, "
          "within 10%%: %d" % (summary["candidates"], summary["geomean"], summary["p10"],
                               summary["p50"], summary["p90"], summary["within_10_percent"]))
    if args.per_candidate:
        for key, ratio in sorted(ratios.items(), key=lambda kv: kv[1]):
            a, b = run_a[key], run_b[key]
            print("  %s/%s: B/A %.3f  kernel_ms %s -> %s  reference_ms %s -> %s" % (
                key[0], key[1], ratio, a.get("kernel_ms"), b.get("kernel_ms"),
                a.get("reference_ms"), b.get("reference_ms")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
