"""Tests of the runner's start (reward/python/runner.py) on the CPU: torch.utils.cpp_extension as
candidates find it, a stand-in that imports the real module (setuptools, hipify: ~0.3 CPU-s of
every runner's start) only when a candidate names something other than load_inline and load.
Candidates (evaluate_fixtures/candidate_add.py after a few lines of each test's) go through the
judge and its runner (judge.py --spawn-runner, as in judge_test.py). Skipped when python3 has no
torch."""

import os
import subprocess
import sys
import tempfile
import unittest

from judge_test import FIXTURES, PY, run_judge, torch

# Raises where the runner imported the real module before the candidate named any of it.
CHECK_NOT_IMPORTED = """\
import sys
import torch.utils.cpp_extension
if ("CUDA_HOME" in vars(torch.utils.cpp_extension) or "torch.utils.hipify" in sys.modules or
        type(torch.utils.cpp_extension).__name__ != "CppExtensionStandIn"):
    raise RuntimeError("the runner imported the real torch.utils.cpp_extension at its start")
"""

# Names more of the module than load_inline, as an honest candidate may; candidate_add.py's
# load_inline then comes from the real module, imported on the first of these names.
NAME_OTHER_ATTRIBUTES = """\
import torch.utils.cpp_extension
from torch.utils.cpp_extension import *  # BuildExtension, CUDAExtension
from torch.utils.cpp_extension import CUDA_HOME, include_paths
if CUDA_HOME is not None and not isinstance(CUDA_HOME, str):
    raise RuntimeError("CUDA_HOME is %r" % (CUDA_HOME,))
if not include_paths() or not all(isinstance(p, str) for p in include_paths()):
    raise RuntimeError("include_paths() is %r" % (include_paths(),))
if not callable(BuildExtension) or not callable(CUDAExtension):
    raise RuntimeError("the star import took no BuildExtension or CUDAExtension")
if type(torch.utils.cpp_extension).__name__ == "CppExtensionStandIn":
    raise RuntimeError("the real module did not take the stand-in's place")
"""

BUILD_WITH_LOAD = """\
import torch.utils.cpp_extension as cpp_extension
paths = cpp_extension.include_paths()
ext = cpp_extension.load(name="fused_ext", sources=["fused.cu"])
"""


def judge_candidate_add_after(lines, module="fused_ext"):
    """The judge's result for candidate_add.py with `lines` before it."""
    with open(os.path.join(FIXTURES, "candidate_add.py"), encoding="utf-8") as f:
        candidate_add = f.read()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "candidate.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(lines + candidate_add)
        return run_judge(path, "fake_extension_ok.py", module=module)


def in_fresh_runner_process(code):
    """Runs `code` in a new python3 after runner.import_torch("cpu"); its stdout."""
    script = "import sys, runner\ntorch, cpp_extension, _ = runner.import_torch('cpu')\n" + code
    proc = subprocess.run([sys.executable, "-c", script], cwd=PY, capture_output=True, text=True,
                          timeout=120)
    if proc.returncode != 0:
        raise AssertionError(proc.stdout + proc.stderr)
    return proc.stdout


@unittest.skipIf(torch is None, "python3 has no torch")
class CppExtensionStandInTest(unittest.TestCase):
    def test_a_candidate_naming_only_load_inline_loads_before_the_real_module(self):
        r = judge_candidate_add_after(CHECK_NOT_IMPORTED)
        self.assertEqual(r["failure"], "none", r)
        self.assertTrue(r["correct"])

    def test_a_candidate_naming_other_attributes_is_judged_as_before(self):
        r = judge_candidate_add_after(NAME_OTHER_ATTRIBUTES)
        self.assertEqual(r["failure"], "none", r)
        self.assertTrue(r["correct"])

    def test_load_inline_still_answers_only_prebuilt_modules_after_the_real_import(self):
        r = judge_candidate_add_after(NAME_OTHER_ATTRIBUTES, module="other_ext")
        self.assertEqual(r["failure"], "importError", r)
        self.assertIn("load_inline(name='fused_ext'): no prebuilt module", r["detail"])

    def test_load_is_still_refused_after_the_real_import(self):
        r = judge_candidate_add_after(BUILD_WITH_LOAD)
        self.assertEqual(r["failure"], "importError", r)
        self.assertIn("only load_inline is supported", r["detail"])

    def test_the_start_imports_neither_the_real_module_nor_what_it_imports(self):
        out = in_fresh_runner_process(
            "print(type(sys.modules['torch.utils.cpp_extension']).__name__,"
            " torch.utils.cpp_extension is cpp_extension,"
            " sorted(m for m in ('setuptools', 'torch.utils.hipify') if m in sys.modules))")
        self.assertEqual(out.split(), ["CppExtensionStandIn", "True", "[]"])

    def test_the_real_module_takes_the_stand_ins_place_with_its_loaders(self):
        out = in_fresh_runner_process(
            "cpp_extension.load_inline = 'shim'\n"
            "home = cpp_extension.CUDA_HOME\n"
            "real = sys.modules['torch.utils.cpp_extension']\n"
            "cpp_extension.CUDA_HOME = '/set/through'\n"
            "print(real is not cpp_extension, torch.utils.cpp_extension is real,"
            " real.load_inline, real.CUDA_HOME, 'include_paths' in dir(cpp_extension))")
        self.assertEqual(out.split(), ["True", "True", "shim", "/set/through", "True"])

    def test_a_module_imported_before_the_start_is_kept(self):
        proc = subprocess.run(
            [sys.executable, "-c", "import torch.utils.cpp_extension as real, runner\n"
             "print(runner.import_torch('cpu')[1] is real)"], cwd=PY, capture_output=True,
            text=True, timeout=120)
        self.assertEqual(proc.stdout.strip(), "True", proc.stderr)


if __name__ == "__main__":
    unittest.main()
