"""Mutation fuzzing of the reward service's Python readers of candidate files, in process:
static_check.check and extract_sources.extract. libFuzzer (static_check_fuzz) sees no coverage
inside Python and runs one sandboxed process per input; this runs the functions directly, some
150 inputs a second, from the reward tests' candidates mutated line by line (Python tokens inserted, lines spliced
and cut, pieces of a line repeated up to thousands of times).
Any exception is a bug (the C++ side would report an internal error instead of a verdict): the
input is written to OUT_DIR and the run exits 1.

Usage: python3 tests/fuzz/python_checkers_fuzz.py SECONDS [SEED] [OUT_DIR]
"""

import glob
import os
import random
import sys
import time
import traceback
import warnings

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "reward", "python"))
import extract_sources  # noqa: E402
import static_check  # noqa: E402

TOKENS = ["(", ")", "[", "]", " + ", "lambda x: x", "def f(self):\n", "class A(Model):\n",
          "self.", "torch.", "load_inline(", 'f"{src}"', '"a"', "['x']", " @ ", "try:\n",
          "except:\n", "global g\n", "super().forward(x)", "ModelNew", "__global__", "<<<1,1>>>",
          "\n", "    ", "import ctypes\n",
          "from torch.utils.cpp_extension import load_inline as li\n", "getattr(x, n)", "*args",
          "**kw", "async def f(): await g()\n", "match x:\n case 1: pass\n", ":=", "yield",
          "del self.x\n", "self.x[0] = 1\n", "x.y.z = 1\n", 'setattr(torch, "a", 1)\n', "\\",
          '"""', "'''", "#", 'b"x"', "1e999", "None", "..."]


def mutate(source, seeds):
    lines = source.split("\n")
    for _ in range(random.randint(1, 4)):
        r = random.random()
        i = random.randrange(len(lines))
        j = random.randint(0, len(lines[i]))
        if r < 0.3:
            lines.insert(i, random.choice(random.choice(seeds).split("\n")))
        elif r < 0.5 and len(lines) > 1:
            del lines[i]
        elif r < 0.7:
            lines[i] = lines[i][:j] + random.choice(TOKENS) + lines[i][j:]
        elif r < 0.8:
            # A piece of the line repeated up to thousands of times: deep nesting and long chains
            # (`+ x + x ...`, `((((`), which parsers and tree walkers meet by recursion.
            k = random.randint(j, min(len(lines[i]), j + 12))
            lines[i] = lines[i][:j] + lines[i][j:k] * random.choice((2, 50, 1200, 4000)) + \
                lines[i][k:]
        else:
            lines[i] = lines[i][:j] + lines[i][j + random.randint(1, 5):]
    return "\n".join(lines)


def main(argv):
    seconds = float(argv[1])
    random.seed(int(argv[2]) if len(argv) > 2 else 1)
    out_dir = argv[3] if len(argv) > 3 else "."
    seeds = [open(f).read() for f in sorted(glob.glob(
        os.path.join(ROOT, "tests", "reward", "corpus", "*", "*.py")))]
    checkers = (("static_check", lambda s: static_check.check(s, [])),
                ("extract_sources", extract_sources.extract))
    warnings.simplefilter("ignore")  # SyntaxWarnings of mutated literals
    end, runs, failed = time.time() + seconds, 0, 0
    while time.time() < end:
        source = mutate(random.choice(seeds), seeds)
        runs += 1
        for name, check in checkers:
            try:
                check(source)
            except Exception as e:  # noqa: BLE001: any exception is the finding
                failed += 1
                path = os.path.join(out_dir, "%s-crash-%d.py" % (name, runs))
                with open(path, "w") as f:
                    f.write(source)
                print("%s: %s: %s (input %s)" % (name, type(e).__name__, e, path))
                traceback.print_exc()
    print("python_checkers_fuzz: %d inputs in %.0f s, %d failures" % (runs, seconds, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
