"""The KernelBench comparison's non-GPU parts (tools/bench/reward/kernelbench): kb_judge.py's
input, flags, stand-ins and verdict mapping, and compare.py's logic and exit codes, on hand-made
inputs. Plain python3: no torch, no KernelBench. With DICE_JUDGE_BIN set (ctest sets it), the
manifest read is dice-judge's own --dump-only output."""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "bench", "reward", "kernelbench"))

import compare  # noqa: E402
import kb_judge  # noqa: E402


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def verdict(id_, variant, correct, failure=None):
    return {"id": id_, "variant": variant, "correct": correct,
            "failure": failure or ("none" if correct else "incorrect")}


def write_lines(path, rows):
    write(path, "".join(json.dumps(r) + "\n" for r in rows))


class ManifestTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def manifest(self, lines):
        write(os.path.join(self.dir, "manifest.jsonl"), "\n".join(lines) + "\n")

    def test_reads_candidates_and_their_files(self):
        write(os.path.join(self.dir, "refs/0.py"), "class Model: pass\n")
        write(os.path.join(self.dir, "candidates/0.original.py"), "class ModelNew: pass\n")
        self.manifest([
            json.dumps({"id": "7", "variant": "original", "reference": "refs/0.py",
                        "candidate": "candidates/0.original.py"}),
            json.dumps({"id": "8", "variant": "original", "reference": "refs/0.py",
                        "candidate": None, "error": "skeletonAltered: ..."}),
        ])
        items = kb_judge.read_manifest(self.dir)
        self.assertEqual(len(items), 2)
        self.assertEqual(items[0]["candidate"], "class ModelNew: pass\n")
        self.assertEqual(items[0]["reference"], "class Model: pass\n")
        self.assertIsNone(items[1]["candidate"])
        self.assertEqual(items[1]["error"], "skeletonAltered: ...")

    def test_errors_name_file_and_line(self):
        path = os.path.join(self.dir, "manifest.jsonl")
        with self.assertRaisesRegex(kb_judge.InputError, "manifest.jsonl: cannot read"):
            kb_judge.read_manifest(self.dir)
        self.manifest(["{\"id\": \"7\""])
        with self.assertRaisesRegex(kb_judge.InputError, path + ":1: not JSON"):
            kb_judge.read_manifest(self.dir)
        self.manifest([json.dumps({"id": "7", "reference": "r.py", "candidate": None})])
        with self.assertRaisesRegex(kb_judge.InputError, ":1: \"variant\" is missing"):
            kb_judge.read_manifest(self.dir)
        self.manifest([json.dumps({"id": "7", "variant": "original", "reference": "nope.py",
                                   "candidate": None})])
        with self.assertRaisesRegex(kb_judge.InputError, ":1: reference file nope.py: cannot read"):
            kb_judge.read_manifest(self.dir)

    def test_select_limits_items_and_variants(self):
        c = [{"id": i, "variant": v} for i in ("a", "b", "c")
             for v in ("original", "wrong_value")]
        self.assertEqual(len(kb_judge.select(c)), 6)
        self.assertEqual([x[1]["id"] for x in kb_judge.select(c, limit=2)], ["a", "a", "b", "b"])
        chosen = kb_judge.select(c, variant_limit=1)
        self.assertEqual([(x[1]["id"], x[1]["variant"]) for x in chosen],
                         [("a", "original"), ("a", "wrong_value"), ("b", "original"),
                          ("c", "original")])
        self.assertEqual([x[0] for x in chosen], [0, 1, 2, 4])  # indices into the manifest

    @unittest.skipUnless(os.environ.get("DICE_JUDGE_BIN"), "DICE_JUDGE_BIN not set")
    def test_reads_dice_judges_dump(self):
        items = os.path.join(self.dir, "items.json")
        middle = 'source = """\n__global__ void k(float* o) { o[threadIdx.x] = 2.0f; }\n"""'
        write(items, json.dumps([{"id": 5, "pytorch_code": "import torch\n",
                                  "prefix": "import torch\n", "middle": middle,
                                  "suffix": "\nclass ModelNew: pass\n"}]))
        dump = os.path.join(self.dir, "dump")
        subprocess.run([os.environ["DICE_JUDGE_BIN"], "--items", items, "--variants", "broken",
                        "--dump-sources", dump, "--dump-only"], check=True,
                       stderr=subprocess.DEVNULL)
        got = kb_judge.read_manifest(dump)
        self.assertEqual([(c["id"], c["variant"]) for c in got],
                         [("5", "original"), ("5", "wrong_value"), ("5", "store_off_by_one")])
        self.assertIn("o[threadIdx.x] = 2.0f;", got[0]["candidate"])
        self.assertIn("o[(threadIdx.x) + 1] = 2.0f;", got[2]["candidate"])
        self.assertTrue(got[0]["candidate"].startswith("import torch\n"))


class FlagsTest(unittest.TestCase):
    def error_of(self, argv):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), self.assertRaises(SystemExit) as exit_:
            kb_judge.parse_args(argv)
        self.assertEqual(exit_.exception.code, 2)
        return stderr.getvalue()

    def test_flags(self):
        base = ["--kernelbench", "kb", "--sources", "s", "--work", "w", "--out", "o"]
        args = kb_judge.parse_args(base)
        self.assertEqual((args.trials, args.tolerance_value, args.timing), (5, 0.01, "off"))
        self.assertIsNone(kb_judge.parse_args(base + ["--tolerance", "kernelbench"]).tolerance_value)
        self.assertIn("--tolerance abc: expected a number", self.error_of(base + ["--tolerance", "abc"]))
        self.assertIn("--tolerance 0: expected a positive", self.error_of(base + ["--tolerance", "0"]))
        self.assertIn("--trials 0: expected an integer >= 1", self.error_of(base + ["--trials", "0"]))
        self.assertIn("--limit -1", self.error_of(base + ["--limit", "-1"]))
        self.assertIn("--kernelbench", self.error_of(base[2:]))
        self.assertIn("invalid choice", self.error_of(base + ["--timing", "maybe"]))

    def test_chunk_estimate_follows_the_builds_so_far(self):
        # Nothing built yet: no estimate, the first chunk always starts.
        self.assertEqual(kb_judge.chunk_seconds_estimate({"compiled": [], "compile_seconds": 0.0},
                                                         32), 0.0)
        # 32 built in 160 s: 28 more take 140 s, which a deadline 100 s away does not allow.
        state = {"compiled": list(range(32)), "compile_seconds": 160.0}
        self.assertAlmostEqual(kb_judge.chunk_seconds_estimate(state, 28), 140.0)

    def test_missing_kernelbench_is_named_and_no_gpu_exits_3(self):
        d = tempfile.mkdtemp()
        write(os.path.join(d, "s/refs/0.py"), "x = 1\n")
        write(os.path.join(d, "s/manifest.jsonl"), json.dumps(
            {"id": "1", "variant": "original", "reference": "refs/0.py", "candidate": None}) + "\n")
        base = ["--sources", os.path.join(d, "s"), "--work", os.path.join(d, "w"),
                "--out", os.path.join(d, "o.jsonl")]
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            code = kb_judge.main(["--kernelbench", os.path.join(d, "nokb")] + base)
        self.assertEqual(code, 2)
        self.assertIn("nokb: no src/kernelbench/eval.py there", stderr.getvalue())
        write(os.path.join(d, "kb/src/kernelbench/eval.py"), "")
        try:
            import torch  # noqa: F401
            has_gpu = torch.cuda.is_available()
        except ImportError:
            has_gpu = False
        if has_gpu:
            self.skipTest("this machine has a GPU")
        saved = dict(sys.modules)
        try:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                code = kb_judge.main(["--kernelbench", os.path.join(d, "kb")] + base)
        finally:
            for name in set(sys.modules) - set(saved):
                del sys.modules[name]
            os.environ.pop("DICE_KB_SRC", None)
        self.assertEqual(code, 3, err.getvalue())
        self.assertRegex(err.getvalue(), "no torch|no CUDA GPU")


class StandInTest(unittest.TestCase):
    def test_model_stand_in_has_fresh_defaults(self):
        class Result(kb_judge._ShimModel):
            compiled: bool = False
            metadata: dict = {}
            runtime: float = -1.0

        a, b = Result(compiled=True), Result()
        a.metadata["x"] = 1
        self.assertEqual((a.compiled, b.compiled, b.metadata, b.runtime), (True, False, {}, -1.0))

    def test_missing_modules_get_stand_ins(self):
        saved = {n: sys.modules.get(n) for n in kb_judge.SHIMMED}
        try:
            installed = kb_judge.install_shims()
            for name in kb_judge.SHIMMED:
                __import__(name)  # each now imports, real or stand-in
            for name in installed:
                self.assertTrue(sys.modules[name].__dict__.get("__kb_judge_shim__"))
            if "dotenv" in installed:
                self.assertFalse(sys.modules["dotenv"].load_dotenv())
            if "tqdm" in installed:
                with sys.modules["tqdm"].tqdm(total=3) as bar:
                    bar.update(1)
        finally:
            for name, module in saved.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module


class VerdictTest(unittest.TestCase):
    c = {"id": "7", "variant": "original"}

    def test_mapping(self):
        v = kb_judge.verdict_from_result(self.c, {"compiled": True, "correctness": True,
                                                  "metadata": {}, "runtime": 2.0,
                                                  "ref_runtime": 3.0}, 4.2, True)
        self.assertEqual((v["correct"], v["reward"], v["failure"], v["speedup"]),
                         (True, 1, "none", 1.5))
        cases = [
            ({"compiled": False, "correctness": False,
              "metadata": {"compilation_error": "nvcc failed"}}, "compileError", False),
            ({"compiled": True, "correctness": False,
              "metadata": {"runtime_error": "illegal memory access"}}, "runtimeError", True),
            ({"compiled": True, "correctness": False,
              "metadata": {"correctness_issue": "Output shape mismatch: Expected [2]"}},
             "shapeMismatch", True),
            ({"compiled": True, "correctness": False,
              "metadata": {"correctness_issue": "Output mismatch",
                           "max_difference": ["0.5", "1.25"]}}, "incorrect", True),
            ({"timeout": "evaluation passed 180 s"}, "timeout", False),
            ({"error": "BrokenPipeError"}, "crashed", False),
            (None, "internalError", False),
        ]
        for result, failure, compiled in cases:
            v = kb_judge.verdict_from_result(self.c, result, 1.0, True)
            self.assertEqual((v["failure"], v["correct"], v["reward"], v["compiled"]),
                             (failure, False, 0, compiled), result)
            self.assertIsNone(v["speedup"])
        v = kb_judge.verdict_from_result(self.c, cases[3][0], 1.0, False)
        self.assertEqual(v["max_abs_error"], 1.25)
        # Same keys as dice-judge's lines (reward/judge/judge.h).
        self.assertEqual(set(v), {"id", "variant", "compiled", "correct", "failure", "reward",
                                  "findings", "compile_seconds", "eval_seconds", "speedup",
                                  "max_abs_error", "source_hashes", "edit", "log_excerpt"})


class CompareTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_agreement_known_and_real_differences(self):
        dice = {("1", "original"): verdict("1", "original", True),
                ("2", "original"): verdict("2", "original", True),
                ("3", "original"): verdict("3", "original", False, "staticCheck"),
                ("1", "wrong_value"): verdict("1", "wrong_value", False),
                ("4", "original"): verdict("4", "original", True)}
        kb = {("1", "original"): verdict("1", "original", True),
              ("2", "original"): verdict("2", "original", False, "runtimeError"),
              ("3", "original"): verdict("3", "original", True),
              ("1", "wrong_value"): verdict("1", "wrong_value", True),
              ("5", "original"): verdict("5", "original", True)}
        known = {("2", "original"): {"dice": True, "kernelbench": False, "reason": "int inputs"},
                 ("3", "original"): {"dice": True, "kernelbench": False, "reason": "wrong way"}}
        r = compare.compare(dice, kb, known)
        self.assertEqual(r["agree"], [("1", "original")])
        self.assertEqual(r["explained"], [(("2", "original"), "correct", "runtimeError",
                                           "int inputs")])
        # A known entry explains only the verdicts it names.
        self.assertEqual(r["unexplained"], [(("1", "wrong_value"), "incorrect", "correct"),
                                            (("3", "original"), "staticCheck", "correct")])
        self.assertEqual(r["only_dice"], [("4", "original")])
        self.assertEqual(r["only_kernelbench"], [("5", "original")])
        self.assertEqual(r["variants_correct"], [(("1", "wrong_value"), "incorrect", "correct")])
        text = compare.report(r, [])
        self.assertIn("| 3 | original | staticCheck | correct | **none: a real disagreement** |",
                      text)
        self.assertIn("| 2 | original | correct | runtimeError | int inputs |", text)

    def test_main_exit_codes_and_throughput(self):
        write_lines(self.path("d1.jsonl"), [verdict("1", "original", True),
                                            verdict("2", "original", True)])
        write_lines(self.path("d2.jsonl"), [verdict("1", "original", True)])
        write_lines(self.path("kb.jsonl"), [verdict("1", "original", True),
                                            verdict("2", "original", True)])
        write(self.path("cold.json"), json.dumps({"candidates": 60, "seconds": 90.0,
                                                  "cache_hits": 0, "prepare_seconds": 31.25}))
        write(self.path("kb.json"), json.dumps({"candidates": 60, "judged": 60, "seconds": 948.0,
                                                "compile_seconds": 496, "eval_seconds": 452,
                                                "complete": True}))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = compare.main(["--dice", self.path("d1.jsonl"), "--dice", self.path("d2.jsonl"),
                                 "--kernelbench", self.path("kb.jsonl"),
                                 "--dice-summary", "cold=" + self.path("cold.json"),
                                 "--kernelbench-summary", self.path("kb.json"),
                                 "--markdown", self.path("report.md")])
        self.assertEqual(code, 0, out.getvalue())
        self.assertIn("| dice-judge cold | 60 | 90.0 | 40.0 |", out.getvalue())
        self.assertIn("the worker's start (precompiled headers) took 31.2 s before these",
                      out.getvalue())
        self.assertIn("| KernelBench | 60 | 948.0 | 3.8 |", out.getvalue())
        self.assertIn("dice-judge cold: 10.5x.", out.getvalue())
        self.assertIn("measured 40.0 per minute (60 in 90.0 s): met.", out.getvalue())
        with open(self.path("report.md")) as f:
            self.assertEqual(f.read(), out.getvalue())
        # A real disagreement fails; so does dice disagreeing with itself across runs.
        write_lines(self.path("kb.jsonl"), [verdict("1", "original", False)])
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(compare.main(["--dice", self.path("d1.jsonl"),
                                           "--kernelbench", self.path("kb.jsonl")]), 1)
        write_lines(self.path("d2.jsonl"), [verdict("2", "original", False)])
        write_lines(self.path("kb.jsonl"), [verdict("1", "original", True)])
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertEqual(compare.main(["--dice", self.path("d1.jsonl"), "--dice",
                                           self.path("d2.jsonl"), "--kernelbench",
                                           self.path("kb.jsonl")]), 1)
        self.assertIn("different verdicts in different runs: 2 original", out.getvalue())

    def test_bad_input_is_named(self):
        write(self.path("bad.jsonl"), json.dumps(verdict("1", "original", True)) + "\n{oops\n")
        write_lines(self.path("ok.jsonl"), [verdict("1", "original", True)])
        write_lines(self.path("nocorrect.jsonl"), [{"id": "1", "variant": "original"}])
        write(self.path("known.json"), json.dumps([{"id": "1", "variant": "original"}]))
        cases = [
            (["--dice", self.path("bad.jsonl")], "bad.jsonl:2: not JSON"),
            (["--dice", self.path("nocorrect.jsonl")], "nocorrect.jsonl:1: \"correct\" is missing"),
            (["--dice", self.path("missing.jsonl")], "missing.jsonl: cannot read"),
            (["--dice", self.path("ok.jsonl"), "--known-differences", self.path("known.json")],
             "known.json: entry 0: \"dice\" is missing"),
            (["--dice", self.path("ok.jsonl"), "--dice-summary", "cold=" + self.path("no.json")],
             "no.json: cannot read"),
        ]
        for argv, message in cases:
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = compare.main(argv + ["--kernelbench", self.path("ok.jsonl")])
            self.assertEqual(code, 2, argv)
            self.assertIn(message, err.getvalue())
        write_lines(self.path("other.jsonl"), [verdict("9", "original", True)])
        with contextlib.redirect_stderr(io.StringIO()) as err, \
                contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(compare.main(["--dice", self.path("ok.jsonl"), "--kernelbench",
                                           self.path("other.jsonl")]), 2)
        self.assertIn("no candidate was judged by both", err.getvalue())

    def test_known_differences_file_parses(self):
        known = compare.read_known(os.path.join(
            HERE, "..", "..", "tools", "bench", "reward", "kernelbench", "known_differences.json"))
        self.assertIn(("6936", "original"), known)


if __name__ == "__main__":
    unittest.main()
