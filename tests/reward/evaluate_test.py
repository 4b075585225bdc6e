"""Tests of reward/python/evaluate.py on the CPU (device "cpu"): the flow, the comparison and
the dynamic anti-cheat checks, with test-double extension modules (plain Python files) standing
in for compiled CUDA ones. Skipped when python3 has no torch."""

import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "evaluate_fixtures")
SCRIPT = os.path.join(HERE, "..", "..", "reward", "python", "evaluate.py")
sys.path.insert(0, os.path.dirname(SCRIPT))

try:
    import torch
except ImportError:
    torch = None

import evaluate  # noqa: E402


def run_eval(candidate, extension, *extra):
    with tempfile.TemporaryDirectory() as tmp:
        nonce_file = os.path.join(tmp, "nonce")
        with open(nonce_file, "w") as f:
            f.write("n0nce\n")
        proc = subprocess.run(
            [sys.executable, SCRIPT, "--device", "cpu", "--trials", "3",
             "--reference", os.path.join(FIXTURES, "reference_add.py"),
             "--candidate", os.path.join(FIXTURES, candidate),
             "--module", "fused_ext=" + os.path.join(FIXTURES, extension),
             "--nonce-file", nonce_file] + list(extra),
            capture_output=True, text=True, timeout=120)
        assert not os.path.exists(nonce_file), "the nonce file must be gone before the candidate"
    lines = [l for l in proc.stdout.splitlines() if l.startswith("DICE_EVAL_RESULT n0nce ")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    return json.loads(lines[0].split(" ", 2)[2])


@unittest.skipIf(torch is None, "python3 has no torch")
class EvaluateFlowTest(unittest.TestCase):
    def test_correct_candidate(self):
        r = run_eval("candidate_add.py", "fake_extension_ok.py")
        self.assertEqual(r["failure"], "none", r)
        self.assertTrue(r["correct"])
        self.assertEqual(r["trials"], 3)
        self.assertLess(r["max_abs_error"], 1e-5)
        # Every phase reached is timed (no timing phase on the CPU), and the top-level ones add up
        # to at most the whole evaluation.
        self.assertEqual(list(r["phases"]), ["import", "load", "correctness", "correctness_inputs",
                                             "correctness_to_host", "correctness_compare",
                                             "kernel_check"])
        # The parts of correctness are inside it.
        parts = sum(r["phases"]["correctness_" + k] for k in ("inputs", "to_host", "compare"))
        self.assertLessEqual(parts, r["phases"]["correctness"] + 1e-3)
        self.assertTrue(all(v >= 0 for v in r["phases"].values()), r["phases"])
        top = [v for k, v in r["phases"].items() if not k.startswith("correctness_")]
        self.assertLessEqual(sum(top), r["eval_seconds"] + 1e-3)

    def test_wrong_values(self):
        r = run_eval("candidate_add.py", "fake_extension_wrong.py")
        self.assertEqual(r["failure"], "incorrect")
        self.assertFalse(r["correct"])
        self.assertIn("output 0", r["detail"])

    def test_tolerance_option(self):
        r = run_eval("candidate_add.py", "fake_extension_wrong.py", "--tol-fp32", "1.0")
        self.assertEqual(r["failure"], "none", r)

    def test_mutated_inputs(self):
        r = run_eval("candidate_add.py", "fake_extension_mutates.py")
        self.assertEqual(r["failure"], "antiCheat")
        self.assertEqual([f["check"] for f in r["findings"]], ["inputs-modified"])

    def test_state_across_calls(self):
        r = run_eval("candidate_add.py", "fake_extension_stateful.py")
        self.assertEqual(r["failure"], "antiCheat")
        self.assertEqual(r["findings"][0]["check"], "kernel-outputs-differ")

    def test_one_output_buffer_rewritten_on_each_call(self):
        r = run_eval("candidate_add.py", "fake_extension_one_buffer.py")
        self.assertEqual(r["failure"], "antiCheat", r)
        self.assertEqual(r["findings"][0]["check"], "kernel-outputs-differ")

    def test_output_cached_by_shape_is_stale_on_fresh_inputs(self):
        # One trial: the kernel-reference-kernel rerun uses the same inputs, so only the call on
        # inputs from an unused seed shows the cache.
        r = run_eval("candidate_add.py", "fake_extension_shape_cache.py", "--trials", "1")
        self.assertEqual(r["failure"], "antiCheat", r)
        self.assertEqual([f["check"] for f in r["findings"]], ["stale-output"])

    def test_forward_raises(self):
        r = run_eval("candidate_raises.py", "fake_extension_ok.py")
        self.assertEqual(r["failure"], "runtimeError")
        self.assertIn("illegal memory access", r["detail"])

    def test_wrong_shape(self):
        r = run_eval("candidate_wrong_shape.py", "fake_extension_ok.py")
        self.assertEqual(r["failure"], "shapeMismatch")

    def test_missing_module(self):
        r = run_eval("candidate_add.py", "does_not_exist.py")
        self.assertEqual(r["failure"], "importError")


class Options:
    tol_fp32 = 1e-2
    tol_fp16 = 1e-2
    tol_bf16 = 2e-2


@unittest.skipIf(torch is None, "python3 has no torch")
class CompareOutputsTest(unittest.TestCase):
    def test_tuple_elementwise_and_integer_exact(self):
        want = (torch.ones(3), torch.tensor([1, 2, 3]))
        evaluate.compare_outputs(torch, (torch.ones(3) + 1e-4, torch.tensor([1, 2, 3])), want,
                                 Options)
        with self.assertRaises(evaluate.EvalFailure) as e:
            evaluate.compare_outputs(torch, (torch.ones(3), torch.tensor([1, 2, 4])), want,
                                     Options)
        self.assertEqual(e.exception.failure, "incorrect")

    def test_count_and_shape(self):
        with self.assertRaises(evaluate.EvalFailure) as e:
            evaluate.compare_outputs(torch, [torch.ones(3)], (torch.ones(3), torch.ones(3)),
                                     Options)
        self.assertEqual(e.exception.failure, "shapeMismatch")
        with self.assertRaises(evaluate.EvalFailure) as e:
            evaluate.compare_outputs(torch, torch.ones(3, 1), torch.ones(3), Options)
        self.assertEqual(e.exception.failure, "shapeMismatch")

    def test_tolerance_by_dtype(self):
        want = torch.ones(4, dtype=torch.bfloat16)
        evaluate.compare_outputs(torch, want * 1.025, want, Options)  # within 2e-2 + 2e-2
        with self.assertRaises(evaluate.EvalFailure):
            evaluate.compare_outputs(torch, torch.ones(4) * 1.025, torch.ones(4), Options)

    def test_nan_matches_nan_only(self):
        nan = torch.tensor([float("nan"), 1.0])
        evaluate.compare_outputs(torch, nan.clone(), nan, Options)
        with self.assertRaises(evaluate.EvalFailure):
            evaluate.compare_outputs(torch, torch.tensor([0.0, 1.0]), nan, Options)

    def test_chunks_cover_the_whole_tensor(self):
        # Chunks of 3 over 10 values, non-contiguous: the one bad value sits in the last, short
        # chunk; the largest difference is found whichever chunk holds it.
        saved = evaluate.COMPARE_CHUNK
        evaluate.COMPARE_CHUNK = 3
        try:
            want = torch.arange(20, dtype=torch.float32).reshape(10, 2).t()[0]
            got = want.clone()
            got[1] += 0.004
            self.assertAlmostEqual(evaluate.compare_outputs(torch, got, want, Options), 0.004,
                                   places=5)
            got[9] += 5.0
            with self.assertRaises(evaluate.EvalFailure) as e:
                evaluate.compare_outputs(torch, got, want, Options)
            self.assertIn("1 of 10 values outside tolerance", e.exception.detail)
            self.assertIn("max abs error 5", e.exception.detail)
            ints = torch.arange(10)
            bad = ints.clone()
            bad[7] = -1
            with self.assertRaises(evaluate.EvalFailure) as e:
                evaluate.compare_outputs(torch, bad, ints, Options)
            self.assertIn("1 of 10 values differ", e.exception.detail)
        finally:
            evaluate.COMPARE_CHUNK = saved

    def test_largest_difference_ignores_nan_and_is_nan_when_all_are(self):
        want = torch.tensor([1.0, float("nan"), 3.0])
        got = torch.tensor([1.005, 2.0, 3.0])
        with self.assertRaises(evaluate.EvalFailure) as e:  # NaN against 2.0 is wrong...
            evaluate.compare_outputs(torch, got, want, Options)
        self.assertIn("1 of 3 values outside tolerance", e.exception.detail)
        self.assertIn("max abs error 0.005", e.exception.detail)  # ...but not the largest error
        err = evaluate.compare_tensor(torch, torch.full((2,), float("nan")),
                                      torch.full((2,), float("nan")), 1e-2, "output")
        self.assertTrue(err != err)  # every difference NaN: NaN, not 0

    def test_same_values(self):
        a = torch.tensor([1.0, float("nan")])
        self.assertTrue(evaluate.same_values(torch, a, a.clone()))
        self.assertFalse(evaluate.same_values(torch, a, torch.tensor([1.0, 2.0])))
        self.assertFalse(evaluate.same_values(torch, a, a.double()))


@unittest.skipIf(torch is None, "python3 has no torch")
class TrialSeedsTest(unittest.TestCase):
    def test_seeds_are_kernelbench_s(self):
        # KernelBench (eval.py, run_and_check_correctness): torch.manual_seed(seed), then one
        # torch.randint(0, 2**32 - 1, (1,)) per trial.
        class Args:
            seed, trials, device = 42, 5, "cpu"
        torch.manual_seed(42)
        want = [torch.randint(0, 2 ** 32 - 1, (1,)).item() for _ in range(5)]
        torch.manual_seed(7)  # the harness seeds the generator itself
        self.assertEqual(evaluate.Harness(torch, Args).trial_seeds(), want)
        self.assertEqual(len(set(want)), 5)


class LaunchProbeDouble(evaluate.LaunchProbe):
    """Test double of evaluate.LaunchProbe (no library): runs fn, answers with fixed names."""

    def __init__(self, names, graph=False):
        self.names, self.graph, self.calls, self.detached = names, graph, 0, False

    def detach(self):
        self.detached = True

    def launches(self, fn):
        self.calls += 1
        fn()
        return list(self.names), self.graph


class ProfiledHarness(evaluate.Harness):
    """Harness whose profiler pass is a test double (the CPU has no CUDA kernels to profile):
    it records that the profiler was asked and answers with fixed names."""

    def __init__(self, torch_module, args, probe, profiled):
        super().__init__(torch_module, args, probe)
        self.cuda = True  # the kernel check runs only for CUDA devices
        self.profiled, self.profiler_calls = profiled, 0

    def kernels_profiled(self, new_model, inputs):
        self.profiler_calls += 1
        return list(self.profiled)


@unittest.skipIf(torch is None, "python3 has no torch")
class KernelCheckTest(unittest.TestCase):
    """check_kernels_ran with the launch probe: which names it trusts, when it falls back to the
    profiler, and what it reports."""

    class Args:
        seed, trials, device, kernels = 42, 1, "cpu", ["scale_kernel"]

    OURS = "void scale_kernel<float>(float const*, float*, int)"
    TORCH = "void at::native::vectorized_elementwise_kernel<4>(...)"

    def check(self, probe, profiled=()):
        harness = ProfiledHarness(torch, self.Args, probe, profiled)
        model = torch.nn.Identity()
        harness.check_kernels_ran(model, lambda: [torch.ones(4)])
        return harness

    def checks(self, harness):
        return [f["check"] for f in harness.findings]

    def test_own_kernel_seen_by_the_probe(self):
        probe = LaunchProbeDouble([self.OURS])
        harness = self.check(probe)
        self.assertEqual((probe.calls, harness.profiler_calls, harness.findings), (1, 0, []))
        self.assertFalse(probe.detached)

    def test_torch_kernels_only_is_fatal(self):
        with self.assertRaises(evaluate.EvalFailure) as caught:
            self.check(LaunchProbeDouble([self.TORCH]))
        self.assertEqual(caught.exception.failure, "antiCheat")

    def test_torch_kernels_beside_ours_are_noted(self):
        harness = self.check(LaunchProbeDouble([self.OURS, self.TORCH]))
        self.assertEqual(self.checks(harness), ["torch-kernels-ran"])
        self.assertFalse(harness.findings[0]["fatal"])

    def test_graph_launch_falls_back_to_the_profiler(self):
        probe = LaunchProbeDouble([], graph=True)
        harness = self.check(probe, profiled=[self.OURS])
        self.assertEqual((harness.profiler_calls, harness.findings), (1, []))
        self.assertTrue(probe.detached, "the profiler needs CUPTI's subscriber back")
        with self.assertRaises(evaluate.EvalFailure):
            self.check(LaunchProbeDouble([self.TORCH], graph=True), profiled=[self.TORCH])

    def test_graph_launch_beside_our_kernel_needs_no_profiler(self):
        harness = self.check(LaunchProbeDouble([self.OURS], graph=True))
        self.assertEqual(harness.profiler_calls, 0)

    def test_probe_that_did_not_load_is_noted_and_the_profiler_checks(self):
        error = evaluate.LaunchProbeError("cannot load dice_launch_probe.so: gone")
        harness = self.check(error, profiled=[self.OURS])
        self.assertEqual((self.checks(harness), harness.profiler_calls),
                         (["launch-probe-unavailable"], 1))
        self.assertIn("gone", harness.findings[0]["detail"])

    def test_without_a_probe_the_profiler_checks(self):
        self.assertEqual(self.check(None, profiled=[self.OURS]).profiler_calls, 1)

    def test_missing_library_is_a_launch_probe_error(self):
        with self.assertRaises(evaluate.LaunchProbeError):
            evaluate.LaunchProbe("/nonexistent/dice_launch_probe.so")

    @unittest.skipUnless(os.environ.get("DICE_LAUNCH_PROBE"), "this build has no launch probe")
    def test_built_probe_loads_and_reports_a_refused_subscription(self):
        # The real library: it loads anywhere; CUPTI refuses to subscribe without a GPU driver,
        # which must come back as a LaunchProbeError (the profiler then checks), not a crash.
        path = os.environ["DICE_LAUNCH_PROBE"]
        if os.path.exists("/dev/nvidiactl"):
            probe = evaluate.LaunchProbe(path)
            self.assertEqual(probe.launches(lambda: None), ([], False))
            self.assertEqual(probe.detach(), 0)
            return
        with self.assertRaises(evaluate.LaunchProbeError) as caught:
            evaluate.LaunchProbe(path)
        self.assertIn("CUPTI refused the subscription", str(caught.exception))
        probe = evaluate.LaunchProbe(path, attach=False)  # loaded, as on a CPU device
        with self.assertRaises(evaluate.LaunchProbeError):
            probe.launches(lambda: self.fail("fn must not run when the probe did not start"))


class PureHelpersTest(unittest.TestCase):
    def test_kernel_names_ran(self):
        names = ["void scale_kernel<float>(float const*, float*, int)",
                 "void at::native::vectorized_elementwise_kernel<4>(...)",
                 "my_scale_kernel_v2(float*)"]
        self.assertEqual(evaluate.kernel_names_ran(names, ["scale_kernel", "other"]),
                         {"scale_kernel"})
        self.assertEqual(evaluate.kernel_names_ran(["my_scale_kernel_v2(float*)"],
                                                   ["scale_kernel"]), set())

    def test_mean_std(self):
        self.assertEqual(evaluate.mean_std([]), (0.0, 0.0))
        self.assertEqual(evaluate.mean_std([1.0, 3.0]), (2.0, 1.0))

    def test_flatten(self):
        self.assertEqual(evaluate.flatten_outputs((1, [2, (3,)])), [1, 2, 3])


if __name__ == "__main__":
    unittest.main()
