"""Tests of the two-process evaluation on the CPU (device "cpu"): reward/python/judge.py with its
runner (runner.py, started by the judge's test-only --spawn-runner), the channel between them
(channel.py) and the timing helpers both sides share (timed_calls.py). Test-double extension
modules (plain Python files in evaluate_fixtures/) stand in for compiled CUDA ones. Skipped when
python3 has no torch."""

import json
import os
import socket
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "evaluate_fixtures")
PY = os.path.join(HERE, "..", "..", "reward", "python")
sys.path.insert(0, PY)

try:
    import torch
except ImportError:
    torch = None

import channel  # noqa: E402
import compare  # noqa: E402
import judge  # noqa: E402
import kernel_check  # noqa: E402
import timed_calls  # noqa: E402


def run_judge(candidate, extension, *extra, reference="reference_add.py", module="fused_ext"):
    proc = subprocess.run(
        [sys.executable, os.path.join(PY, "judge.py"), "--spawn-runner", "--device", "cpu",
         "--reference", os.path.join(FIXTURES, reference),
         "--runner-candidate", os.path.join(FIXTURES, candidate),
         "--runner-module", module + "=" + os.path.join(FIXTURES, extension)] + list(extra),
        capture_output=True, text=True, timeout=180)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("DICE_EVAL_RESULT  ")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    return json.loads(lines[0].split(" ", 2)[2])


def checks(result):
    return [f["check"] for f in result["findings"]]


@unittest.skipIf(torch is None, "python3 has no torch")
class JudgeFlowTest(unittest.TestCase):
    def test_correct_candidate(self):
        r = run_judge("candidate_add.py", "fake_extension_ok.py")
        self.assertEqual(r["failure"], "none", r)
        self.assertTrue(r["correct"])
        self.assertEqual(r["trials"], 3)
        self.assertLess(r["max_abs_error"], 1e-5)
        self.assertEqual(list(r["phases"]), ["import", "module_imports", "load", "correctness",
                                             "correctness_inputs", "correctness_runner",
                                             "correctness_compare", "kernel_check"])
        self.assertEqual(len(r["seeds"]["trials"]), 3)

    def test_seeds_are_fresh_unless_fixed(self):
        a = run_judge("candidate_add.py", "fake_extension_ok.py", "--trials", "1")
        b = run_judge("candidate_add.py", "fake_extension_ok.py", "--trials", "1")
        self.assertNotEqual(a["seeds"], b["seeds"])
        fixed = run_judge("candidate_add.py", "fake_extension_ok.py", "--trials", "1", "--seed",
                          "42")
        torch.manual_seed(42)
        self.assertEqual(fixed["seeds"]["trials"],
                         [int(torch.randint(0, 2 ** 32 - 1, (1,)).item())])
        self.assertEqual(fixed["seeds"]["init"], 42)

    def test_wrong_values(self):
        r = run_judge("candidate_add.py", "fake_extension_wrong.py")
        self.assertEqual(r["failure"], "incorrect")
        self.assertFalse(r["correct"])

    def test_tolerance_option(self):
        r = run_judge("candidate_add.py", "fake_extension_wrong.py", "--tol-fp32", "1.0")
        self.assertEqual(r["failure"], "none", r)

    def test_half_precision_output_for_a_float_reference(self):
        r = run_judge("candidate_add.py", "fake_extension_half.py")
        self.assertEqual(r["failure"], "shapeMismatch", r)
        self.assertIn("dtype float16", r["detail"])
        self.assertIn("reference: dtype float32", r["detail"])

    def test_zeros_below_atol_are_not_correct(self):
        r = run_judge("candidate_tiny.py", "fake_extension_tiny_zeros.py",
                      reference="reference_tiny.py", module="softmax_ext")
        self.assertEqual(r["failure"], "incorrect", r)

    def test_uniform_answer_below_atol_is_not_correct(self):
        r = run_judge("candidate_tiny.py", "fake_extension_tiny_uniform.py",
                      reference="reference_tiny.py", module="softmax_ext")
        self.assertNotEqual(r["failure"], "none", r)

    def test_honest_answer_below_atol_is_correct_at_the_reference_scale(self):
        r = run_judge("candidate_tiny.py", "fake_extension_tiny_ok.py",
                      reference="reference_tiny.py", module="softmax_ext")
        self.assertEqual(r["failure"], "none", r)
        self.assertIn("tolerance-scaled", checks(r))

    def test_tensor_subclass_answers_nothing_here(self):
        r = run_judge("candidate_add.py", "fake_extension_subclass.py")
        self.assertEqual(r["failure"], "incorrect", r)

    def test_patching_comparisons_in_the_candidate_process_changes_nothing(self):
        r = run_judge("candidate_add.py", "fake_extension_patches_judge.py")
        self.assertEqual(r["failure"], "incorrect", r)

    def test_mutated_inputs(self):
        r = run_judge("candidate_add.py", "fake_extension_mutates.py")
        self.assertEqual(r["failure"], "antiCheat")
        self.assertEqual(checks(r), ["inputs-modified"])

    def test_state_across_calls(self):
        r = run_judge("candidate_add.py", "fake_extension_stateful.py")
        self.assertEqual(r["failure"], "antiCheat")
        self.assertEqual(checks(r)[0], "kernel-outputs-differ")

    def test_one_output_buffer_rewritten_on_each_call(self):
        r = run_judge("candidate_add.py", "fake_extension_one_buffer.py")
        self.assertEqual(r["failure"], "antiCheat", r)
        self.assertEqual(checks(r)[0], "kernel-outputs-differ")

    def test_output_cached_by_shape_is_stale_on_fresh_inputs(self):
        # One trial: the second run uses the same inputs, so only the call on inputs from an
        # unused seed shows the cache.
        r = run_judge("candidate_add.py", "fake_extension_shape_cache.py", "--trials", "1")
        self.assertEqual(r["failure"], "antiCheat", r)
        self.assertEqual(checks(r), ["stale-output"])

    def test_a_kernel_right_only_for_get_inputs_distribution_is_incorrect(self):
        # Normalising with the running statistics agrees with the reference's batch statistics
        # on get_inputs' standard normal values (every trial and the fresh set pass), not on the
        # same values drawn toward 0.
        r = run_judge("candidate_norm.py", "fake_extension_norm_running.py",
                      reference="reference_norm.py")
        self.assertEqual(r["failure"], "incorrect", r)
        self.assertEqual(checks(r), ["wrong-on-drawn-inputs"], r)
        self.assertFalse(r["correct"])
        honest = run_judge("candidate_norm.py", "fake_extension_norm_batch.py",
                           reference="reference_norm.py")
        self.assertEqual(honest["failure"], "none", honest)
        self.assertTrue(honest["correct"])

    def test_a_reference_that_refuses_the_drawn_inputs_costs_the_candidate_nothing(self):
        # The drawn-in set is the judge's: where the task's reference cannot take it, the
        # candidate is judged on the trials and the fresh set alone, with a note.
        r = run_judge("candidate_picky.py", "fake_extension_double.py",
                      reference="reference_picky.py")
        self.assertEqual(r["failure"], "none", r)
        self.assertTrue(r["correct"])
        self.assertIn("drawn-inputs-skipped", checks(r))

    def test_shape_variants_pass_a_general_kernel(self):
        r = run_judge("candidate_rows.py", "fake_extension_rows_ok.py", "--shape-variant",
                      "batch_size=7", "--shape-variant", "batch_size=1,dim=33",
                      reference="reference_rows.py", module="rows_ext")
        self.assertEqual(r["failure"], "none", r)
        self.assertEqual(r["shape_variants"], 2)
        self.assertEqual(len(r["seeds"]["variants"]), 2)
        self.assertIn("shape_variants", r["phases"])

    def test_shape_variants_fail_a_kernel_fixed_to_the_tasks_shape(self):
        fixed = ("candidate_rows.py", "fake_extension_rows_fixed.py")
        plain = run_judge(*fixed, reference="reference_rows.py", module="rows_ext")
        self.assertEqual(plain["failure"], "none", plain)  # right at the task's own shape
        r = run_judge(*fixed, "--shape-variant", "batch_size=7", reference="reference_rows.py",
                      module="rows_ext")
        self.assertEqual(r["failure"], "incorrect", r)
        self.assertIn("batch_size=7", r["detail"])
        self.assertEqual(checks(r), ["shape-variant"])

    def test_a_shape_variant_that_changes_the_model_is_the_tasks_error(self):
        ok = ("candidate_rows.py", "fake_extension_rows_ok.py")
        r = run_judge(*ok, "--shape-variant", "scale=3", reference="reference_rows.py",
                      module="rows_ext")
        self.assertEqual(r["failure"], "internalError", r)  # scale is a float: no size
        self.assertIn("no module-level integer 'scale'", r["detail"])
        r = run_judge(*ok, "--shape-variant", "width=3", reference="reference_rows.py",
                      module="rows_ext")
        self.assertEqual(r["failure"], "internalError", r)
        self.assertIn("'width'", r["detail"])

    def test_forward_raises(self):
        r = run_judge("candidate_raises.py", "fake_extension_ok.py")
        self.assertEqual(r["failure"], "runtimeError")
        self.assertIn("illegal memory access", r["detail"])

    def test_wrong_shape(self):
        r = run_judge("candidate_wrong_shape.py", "fake_extension_ok.py")
        self.assertEqual(r["failure"], "shapeMismatch")

    def test_missing_module(self):
        r = run_judge("candidate_add.py", "does_not_exist.py")
        self.assertEqual(r["failure"], "importError")


class Options:
    tol_fp32 = 1e-2
    tol_fp16 = 1e-2
    tol_bf16 = 2e-2


@unittest.skipIf(torch is None, "python3 has no torch")
class CompareTest(unittest.TestCase):
    def test_tuple_elementwise_and_integer_exact(self):
        want = [torch.ones(3), torch.tensor([1, 2, 3])]
        compare.compare_outputs(torch, [torch.ones(3) + 1e-4, torch.tensor([1, 2, 3])], want,
                              Options)
        with self.assertRaises(compare.EvalFailure) as e:
            compare.compare_outputs(torch, [torch.ones(3), torch.tensor([1, 2, 4])], want, Options)
        self.assertEqual(e.exception.failure, "incorrect")

    def test_kinds(self):
        cpu = ["cpu", "cpu"]
        with self.assertRaises(compare.EvalFailure) as e:
            compare.check_output_kinds(torch, [torch.ones(3)], [torch.ones(3), torch.ones(3)], cpu)
        self.assertEqual(e.exception.failure, "shapeMismatch")
        with self.assertRaises(compare.EvalFailure) as e:
            compare.check_output_kinds(torch, [torch.ones(3, 1)], [torch.ones(3)], cpu)
        self.assertIn("shape", e.exception.detail)
        with self.assertRaises(compare.EvalFailure) as e:
            compare.check_output_kinds(torch, [torch.ones(3).double()], [torch.ones(3)], cpu)
        self.assertIn("dtype float64, reference float32", e.exception.detail)
        with self.assertRaises(compare.EvalFailure) as e:
            compare.check_output_kinds(torch, [torch.ones(3)], [torch.ones(3)], ["cuda"])
        self.assertIn("on cuda, reference on cpu", e.exception.detail)
        with self.assertRaises(compare.EvalFailure):
            compare.check_output_kinds(torch, [1.0], [torch.ones(1)], cpu)

    def test_tolerance_by_dtype(self):
        want = torch.ones(4, dtype=torch.bfloat16)
        compare.compare_outputs(torch, [want * 1.025], [want], Options)  # within 2e-2 + 2e-2
        with self.assertRaises(compare.EvalFailure):
            compare.compare_outputs(torch, [torch.ones(4) * 1.025], [torch.ones(4)], Options)

    def test_nan_matches_nan_only(self):
        nan = torch.tensor([float("nan"), 1.0])
        compare.compare_outputs(torch, [nan.clone()], [nan], Options)
        with self.assertRaises(compare.EvalFailure):
            compare.compare_outputs(torch, [torch.tensor([0.0, 1.0])], [nan], Options)

    def test_chunks_cover_the_whole_tensor(self):
        saved = compare.COMPARE_CHUNK
        compare.COMPARE_CHUNK = 3
        try:
            want = torch.arange(20, dtype=torch.float32).reshape(10, 2).t()[0] + 10
            got = want.clone()
            got[1] += 0.004
            self.assertAlmostEqual(compare.compare_outputs(torch, [got], [want], Options)[0], 0.004,
                                   places=5)
            got[9] += 5.0
            with self.assertRaises(compare.EvalFailure) as e:
                compare.compare_outputs(torch, [got], [want], Options)
            self.assertIn("1 of 10 values outside tolerance", e.exception.detail)
            ints = torch.arange(10)
            bad = ints.clone()
            bad[7] = -1
            with self.assertRaises(compare.EvalFailure) as e:
                compare.compare_outputs(torch, [bad], [ints], Options)
            self.assertIn("1 of 10 values differ", e.exception.detail)
        finally:
            compare.COMPARE_CHUNK = saved

    def test_informative_atol(self):
        self.assertEqual(compare.informative_atol(torch, torch.ones(4), 1e-2), (1e-2, False))
        atol, scaled = compare.informative_atol(torch, torch.full((4,), 1e-5), 1e-2)
        self.assertTrue(scaled)
        self.assertAlmostEqual(atol, 1e-7)
        self.assertEqual(compare.informative_atol(torch, torch.zeros(4), 1e-2), (1e-2, False))
        want = [torch.ones(4), torch.full((4,), 1e-5), 3]
        self.assertEqual(compare.output_atols(torch, want, Options),
                         compare.compare_outputs(torch, want, want, Options)[1])
        self.assertEqual(compare.informative_atol(torch, torch.arange(4), 1e-2), (1e-2, False))
        with self.assertRaises(compare.EvalFailure):  # zeros against a tiny reference
            compare.compare_outputs(torch, [torch.zeros(4)], [torch.full((4,), 1e-5)], Options)

    def test_constant_and_same_tensors(self):
        self.assertTrue(compare.is_constant(torch, torch.full((3,), 2.0)))
        self.assertFalse(compare.is_constant(torch, torch.arange(3.0)))
        a = [torch.tensor([1.0, float("nan")])]
        self.assertTrue(compare.same_tensors(torch, a, [a[0].clone()]))
        self.assertFalse(compare.same_tensors(torch, a, [torch.tensor([1.0, 2.0])]))

    def test_shape_variant_text(self):
        self.assertEqual(judge.parse_shape_variant("batch_size=3, dim=129"),
                         {"batch_size": 3, "dim": 129})
        for bad in ("batch_size", "3=3", "dim=1.5", "a=1,,b=2"):
            with self.assertRaises(ValueError, msg=bad):
                judge.parse_shape_variant(bad)

    def test_kernelbench_seeds(self):
        class Args:
            seed, trials = 42, 5
        torch.manual_seed(42)
        want = [torch.randint(0, 2 ** 32 - 1, (1,)).item() for _ in range(5)]
        self.assertEqual(judge.draw_seeds(torch, Args)["trials"], want)

        class Fresh:
            seed, trials = -1, 2
        self.assertNotEqual(judge.draw_seeds(torch, Fresh), judge.draw_seeds(torch, Fresh))


class LinkDouble:
    """Test double of judge.RunnerLink: answers "kernels" with fixed launches."""

    def __init__(self, answer):
        self.answer = answer

    def ask(self, message, values=()):
        return dict(self.answer), []


@unittest.skipIf(torch is None, "python3 has no torch")
class KernelCheckTest(unittest.TestCase):
    OURS = "void scale_kernel<float>(float const*, float*, int)"
    TORCH = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(...)"
    FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(...)"
    MODULE = "module_ext_ext.so"

    class Args:
        kernels = ["scale_kernel", "vectorized_elementwise_kernel"]
        device = "cpu"

    def check(self, launches, **extra):
        j = judge.Judge(torch, self.Args, LinkDouble(dict(launches=launches, **extra)))
        j.cuda = True  # the kernel check runs only for CUDA devices
        j.check_kernels_ran([], {self.MODULE})
        return j

    def test_own_kernel_by_identity(self):
        j = self.check([[self.OURS, self.MODULE]])
        self.assertEqual(j.findings, [])

    def test_dead_kernel_named_like_torchs_is_not_ours(self):
        # The candidate's module has a kernel named like torch's; torch's own launch of that name
        # comes from torch's library, so nothing of the candidate ran.
        with self.assertRaises(compare.EvalFailure) as e:
            self.check([[self.TORCH, "libtorch_cuda.so"]])
        self.assertEqual(e.exception.failure, "antiCheat")

    def test_torch_compute_beside_ours_is_a_fallback(self):
        with self.assertRaises(compare.EvalFailure):
            self.check([[self.OURS, self.MODULE], [self.TORCH, "libtorch_cuda.so"]])

    def test_fills_and_copies_beside_ours_are_noted(self):
        j = self.check([[self.OURS, self.MODULE], [self.FILL, "libtorch_cuda.so"]])
        self.assertEqual(checks({"findings": j.findings}), ["torch-kernels-ran"])
        self.assertFalse(j.findings[0]["fatal"])

    def test_by_name_when_the_library_is_unknown(self):
        j = self.check([[self.OURS, "?"]], probe="profiler")
        self.assertEqual(checks({"findings": j.findings}), ["kernel-identity-by-name"])
        # By name, a kernel in torch's namespaces is never the candidate's, whatever it shares.
        with self.assertRaises(compare.EvalFailure) as e:
            self.check([[self.TORCH, "?"]], probe="profiler")
        self.assertIn("no kernel of the candidate", e.exception.detail)

    def test_no_kernel_list_is_no_evidence(self):
        # Fails closed (issue 49): the candidate's process can take CUPTI's one subscriber or
        # break the profiler, and a missing list once let every fallback through.
        with self.assertRaises(compare.EvalFailure) as e:
            self.check(None, profiler_error="CUPTI busy")
        self.assertEqual(e.exception.failure, "antiCheat")
        self.assertIn("no evidence", e.exception.detail)

    def test_the_check_runs_without_kernel_names_too(self):
        # The module's identity decides; no --kernels (names for the by-name rule) skips nothing.
        class NoNames(self.Args):
            kernels = []
        j = judge.Judge(torch, NoNames, LinkDouble(dict(launches=[[self.TORCH, "libtorch.so"]])))
        j.cuda = True
        with self.assertRaises(compare.EvalFailure) as e:
            j.check_kernels_ran([], {self.MODULE})
        self.assertIn("no kernel of the candidate", e.exception.detail)

    def test_malformed_answer(self):
        with self.assertRaises(compare.EvalFailure):
            self.check([["name-only"]])

    def test_identity_where_known_and_names_where_not(self):
        # The candidate's kernel launched with no library known, cuBLAS's with one: ours by name,
        # cuBLAS's a fallback.
        with self.assertRaises(compare.EvalFailure) as e:
            self.check([[self.OURS, "?"], ["void cublasLt::splitKreduce_kernel<32>(...)",
                                           "libcublasLt.so.13"]])
        self.assertIn("fell back", e.exception.detail)

    def test_kernel_names_ran(self):
        names = [self.OURS, "my_scale_kernel_v2(float*)"]
        self.assertEqual(kernel_check.kernel_names_ran(names, ["scale_kernel", "other"]),
                         {"scale_kernel"})


@unittest.skipIf(torch is None, "python3 has no torch")
class ChannelTest(unittest.TestCase):
    def pair(self):
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        return a, b

    def test_tensors_and_values_round_trip_as_bytes(self):
        a, b = self.pair()
        values = [torch.randn(3, 4), torch.arange(5), torch.tensor([True, False]),
                  torch.ones(2, dtype=torch.bfloat16), torch.tensor(7), 3, 2.5, None,
                  torch.randn(4, 3).t(), (3, 3), [1, (2, 3)], "mean"]
        items, fds = channel.encode(torch, values)
        channel.send(a, {"op": "x", "values": items}, fds)
        message, got_fds = channel.receive(b, 5)
        got = channel.decode(torch, message["values"], got_fds)
        self.assertEqual(len(got), len(values))
        for g, v in zip(got, values):
            if isinstance(v, torch.Tensor):
                self.assertIs(type(g), torch.Tensor)
                self.assertEqual((g.dtype, g.shape), (v.dtype, v.shape))
                self.assertTrue(torch.equal(g, v))
            else:
                self.assertEqual(g, v)
                self.assertIs(type(g), type(v))
        items, fds = channel.encode(torch, [torch.Size([2, 3])])  # an init argument
        self.assertEqual(channel.decode(torch, items, fds), [(2, 3)])
        with self.assertRaises(channel.ProtocolError):
            channel.encode(torch, [object()])
        with self.assertRaises(channel.ProtocolError):
            channel.encode(torch, [[[[[[1]]]]]])

    def test_declared_size_must_match_the_bytes(self):
        a, b = self.pair()
        items, fds = channel.encode(torch, [torch.ones(4)])
        items[0]["shape"] = [8]
        channel.send(a, {"values": items}, fds)
        message, got_fds = channel.receive(b, 5)
        with self.assertRaises(channel.ProtocolError):
            channel.decode(torch, message["values"], got_fds)

    def test_unknown_dtype_and_bad_shapes_are_refused(self):
        for item in ({"tensor": 0, "dtype": "object", "shape": [1]},
                     {"tensor": 0, "dtype": "float32", "shape": [-1]},
                     {"tensor": 0, "dtype": "float32", "shape": [1] * 40},
                     {"tensor": 0, "dtype": "float32", "shape": [1 << 40, 1 << 40]},
                     {"tensor": 3, "dtype": "float32", "shape": [1]},
                     {"value": [1, 2]}):
            fd = os.memfd_create("t")
            with self.assertRaises(channel.ProtocolError, msg=item):
                channel.decode(torch, [item], [fd])

    def test_not_json_and_oversized_packets(self):
        a, b = self.pair()
        a.send(b"\xff not json")
        with self.assertRaises(channel.ProtocolError):
            channel.receive(b, 5)
        a.send(b"[1, 2]")
        with self.assertRaises(channel.ProtocolError):
            channel.receive(b, 5)
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        try:
            a.send(b" " * (channel.MAX_PACKET + 10))
        except OSError:
            return  # the kernel refused a packet that large: nothing to receive
        with self.assertRaises(channel.ProtocolError):
            channel.receive(b, 5)

    def test_silence_is_a_protocol_error_and_close_is_eof(self):
        a, b = self.pair()
        with self.assertRaises(channel.ProtocolError):
            channel.receive(b, 0.2)
        a.close()
        with self.assertRaises(EOFError):
            channel.receive(b, 5)

    def test_an_end_with_messages_unread_is_eof(self):
        # A runner that dies just after the judge's request reaches it resets the channel
        # (ECONNRESET) instead of closing it: the runner ended, not a malformed answer.
        a, b = self.pair()
        b.send(b"{}")
        a.close()
        with self.assertRaises(EOFError):
            channel.receive(b, 5)


@unittest.skipIf(torch is None, "python3 has no torch")
class TimedCallsTest(unittest.TestCase):
    def test_call_inputs_differ_per_call_and_per_seed_and_keep_indices_valid(self):
        base = [[torch.randn(4, 16), torch.randint(0, 10, (8,)), 3]]
        seen = set()
        for seed in (1, 2):
            made = timed_calls.CallInputs(torch, base, seed, "cpu")
            for k in range(20):
                x, idx, n = made.inputs(k)
                self.assertEqual(n, 3)
                self.assertEqual(sorted(idx.tolist()), sorted(base[0][1].tolist()))
                seen.add(x.numpy().tobytes())
        self.assertEqual(len(seen), 40)
        self.assertNotIn(base[0][0].numpy().tobytes(), seen)
        # Both sides draw the same values for one seed.
        again = timed_calls.CallInputs(torch, base, 2, "cpu")
        self.assertTrue(torch.equal(again.inputs(0)[0], timed_calls.CallInputs(
            torch, base, 2, "cpu").inputs(0)[0]))

    def test_no_common_scale_links_two_calls_inputs(self):
        # A roll and one common share per call would make call k's matrix product a scaled roll
        # of call j's ((cA)(cB) = c^2 AB): a cached product would pass. Shares per element leave
        # the ratio of two calls' inputs far from constant.
        a = torch.randn(16, 16)
        made = timed_calls.CallInputs(torch, [[a, a.clone()]], 5, "cpu")
        first, second = made.inputs(0), made.inputs(1)
        shift_back = [torch.roll(t, shifts=-s, dims=0) for t, s in ((first[0], 0),
                                                                    (second[0], 0))]
        ratio = shift_back[1] / shift_back[0]
        self.assertGreater(float(ratio.std()), 0.01)
        # Tensors of one shape get the same shares (elementwise relations between them hold).
        self.assertTrue(torch.equal(first[0], first[1]))

    def test_digests_catch_a_permuted_stale_or_scaled_output(self):
        # A digest misses a wrong output with a small probability (each weighting's difference
        # may fall inside the honest band); a request of stale calls is caught by the first few.
        # The draws here are fixed.
        torch.manual_seed(0)
        out = torch.randn(1000)

        def digest(value, seed=9):
            return timed_calls.on_host(torch, [timed_calls.Digests(torch, seed, "cpu").of(
                value)])[0]
        want = digest(out)
        self.assertTrue(timed_calls.digests_agree(digest(out + 1e-3), want, 1e-2, 1e-2))
        self.assertTrue(timed_calls.digests_agree(digest(out * (1 + 5e-3)), want, 1e-2, 1e-2))
        self.assertFalse(timed_calls.digests_agree(digest(out.roll(1)), want, 1e-2, 1e-2))
        self.assertFalse(timed_calls.digests_agree(digest(out + 1.0), want, 1e-2, 1e-2))
        self.assertFalse(timed_calls.digests_agree(digest(out * 1.1), want, 1e-2, 1e-2))
        self.assertFalse(timed_calls.digests_agree(digest(out[:999]), want, 1e-2, 1e-2))
        self.assertFalse(timed_calls.digests_agree("forged", want, 1e-2, 1e-2))
        self.assertFalse(timed_calls.digests_agree([[0.0, 0.0, True, 1]], want, 1e-2, 1e-2))
        # The weights are the request's: a digest under another seed's weights fails.
        self.assertFalse(timed_calls.digests_agree(digest(out, seed=10), want, 1e-2, 1e-2))

    def test_digests_change_weights_every_call(self):
        # One weight vector per request would let a fixed-weight linear layer's digest be
        # precomputed (w^T W once, then a dot product a call).
        out = torch.randn(64)
        digests = timed_calls.Digests(torch, 4, "cpu")
        first, second = timed_calls.on_host(torch, [digests.of(out), digests.of(out)])
        sums = timed_calls.DIGEST_WEIGHTINGS
        self.assertEqual(len(first[0]), sums + 3)
        for k in range(sums):
            self.assertNotEqual(first[0][k], second[0][k])
        self.assertNotEqual(first[0][0], first[0][1])  # weightings of their own
        self.assertEqual(first[0][sums:], second[0][sums:])

    def test_an_output_one_weighting_misses_is_caught_by_the_other(self):
        # A wrong output whose difference from the right one is orthogonal to the first
        # weighting: a permutation of the right values (sum of |x| and of squares unchanged),
        # moved along the first weights until its first weighted sum is the right one's. A
        # single weighting would let it pass; the second, drawn independently, does not.
        torch.manual_seed(1)
        out = torch.randn(1000)
        seed = 21
        digests = timed_calls.Digests(torch, seed, "cpu")
        want = timed_calls.on_host(torch, [digests.of(out)])[0]
        first_weights = next(iter(digests.weights.values()))[0].clone()
        permuted = out.roll(1)
        along = (first_weights.dot(out) - first_weights.dot(permuted)) / first_weights.dot(
            first_weights)
        wrong = permuted + along * first_weights
        got = timed_calls.on_host(torch, [timed_calls.Digests(torch, seed, "cpu").of(wrong)])[0]
        self.assertAlmostEqual(got[0][0], want[0][0], places=3)
        self.assertFalse(timed_calls.digests_agree(got, want, 1e-2, 1e-2))
        one = timed_calls.DIGEST_WEIGHTINGS
        try:
            timed_calls.DIGEST_WEIGHTINGS = 1
            only_first = [[got[0][0]] + got[0][one:]]
            self.assertTrue(timed_calls.digests_agree(only_first, [[want[0][0]] + want[0][one:]],
                                                      1e-2, 1e-2))
        finally:
            timed_calls.DIGEST_WEIGHTINGS = one

    def test_a_request_is_reproduced_by_its_seed_and_by_nothing_else(self):
        base = [[torch.randn(8, 8), torch.randint(0, 5, (3,))]]

        def model(x, i):
            return x @ x.t(), i.sum()
        run = [timed_calls.time_request(torch, model, base, 6, seed, "cpu", lambda: None)
               for seed in (11, 11, 12)]
        self.assertEqual(run[0], run[1])
        self.assertEqual(len(run[0]), 6)
        self.assertTrue(all(timed_calls.digests_agree(g, w, 1e-4, 1e-4)
                            for g, w in zip(run[0], run[1])))
        self.assertFalse(any(timed_calls.digests_agree(g, w, 1e-4, 1e-4)
                             for g, w in zip(run[2], run[0])))

    def test_per_call_times_subtract_the_loops_overhead(self):
        self.assertEqual(judge.per_call_ms([30.0, 40.0], [10.0, 10.0], 10), [2.0, 3.0])
        # A loop at or under the overhead is credited the floor, never a negative time.
        self.assertEqual(judge.per_call_ms([9.0], [10.0], 10), [judge.KERNEL_MS_FLOOR])
        # Nor a time the clock cannot resolve: twice the overhead loop's spread between rounds.
        self.assertAlmostEqual(judge.clock_resolution_ms([10.0, 10.5, 11.0], 10), 0.2)
        self.assertEqual(judge.clock_resolution_ms([10.0, 10.0], 10), judge.KERNEL_MS_FLOOR)
        self.assertEqual(judge.per_call_ms([10.5, 30.0], [10.0, 10.0], 10, 0.2), [0.2, 2.0])


class GuardMemoryTest(unittest.TestCase):
    """guard_memory.py's report reading and naming; the allocator itself is tested over host
    memory (reward_guard_arena_test) and on the GPU (the corpus's write_past_output.py)."""

    def test_report_lines(self):
        import guard_memory
        self.assertEqual(guard_memory.parse_report("ok\n"), [])
        self.assertEqual(guard_memory.parse_report("ok\n0 4096 100 1 0 16 16\n"), [
            {"address": 4096, "size": 100, "live": True, "before": 0, "after": 16,
             "reach": 16}])

    def test_an_error_report_raises_with_its_reason(self):
        import guard_memory
        with self.assertRaises(guard_memory.GuardMemoryError) as e:
            guard_memory.parse_report("error read: cuMemcpyDtoH: an illegal memory access\n")
        self.assertIn("illegal memory access", str(e.exception))
        with self.assertRaises(guard_memory.GuardMemoryError):
            guard_memory.parse_report("")

    def test_describe_names_the_tensor(self):
        import guard_memory
        v = [{"address": 4096, "size": 100, "live": True, "before": 0, "after": 16, "reach": 40},
             {"address": 8192, "size": 8, "live": False, "before": 4, "after": 0, "reach": 0}]
        self.assertEqual(guard_memory.describe(v, {4096: "output 0"}), [
            "output 0 (100 bytes): 16 bytes written past its end, up to 40 bytes after it",
            "a temporary freed during forward (8 bytes): 4 bytes written before its start"])

    @unittest.skipUnless(os.environ.get("DICE_GUARD_ALLOC"), "no dice_guard_alloc.so given")
    def test_the_built_module_without_a_gpu_says_why(self):
        import guard_memory
        if os.path.exists("/dev/nvidiactl"):
            self.skipTest("a GPU is here: installing the allocator would change this process's")
        with self.assertRaises(guard_memory.GuardMemoryError) as e:
            guard_memory.GuardMemory(torch, os.environ["DICE_GUARD_ALLOC"])
        self.assertIn("libcuda", str(e.exception))

    def test_a_missing_module_is_an_error(self):
        import guard_memory
        with self.assertRaises(guard_memory.GuardMemoryError):
            guard_memory.GuardMemory(torch, "/nonexistent/dice_guard_alloc.so")


@unittest.skipIf(torch is None, "python3 has no torch")
class JudgeGuardsTest(unittest.TestCase):
    """What the judge makes of the runner's guard report."""

    class Args:
        device = "cpu"

    def judge(self):
        return judge.Judge(torch, self.Args, LinkDouble({}))

    def test_nothing_written_outside_passes(self):
        j = self.judge()
        j.check_guards({}, "forward")
        j.check_guards({"written_outside": []}, "forward")
        self.assertEqual(j.findings, [])

    def test_a_write_outside_fails_with_a_fatal_finding(self):
        j = self.judge()
        with self.assertRaises(compare.EvalFailure) as e:
            j.check_guards({"written_outside": ["output 0 (4 bytes): 4 bytes written past its "
                                               "end, up to 4 bytes after it"]}, "forward")
        self.assertEqual(e.exception.failure, "runtimeError")
        self.assertEqual(checks({"findings": j.findings}), ["write-out-of-bounds"])
        self.assertTrue(j.findings[0]["fatal"])
        self.assertIn("output 0", j.findings[0]["detail"])

    def test_guards_that_could_not_be_read_prove_nothing(self):
        with self.assertRaises(compare.EvalFailure) as e:
            self.judge().check_guards({"guard_error": "read: cuMemcpyDtoH failed"}, "forward")
        self.assertIn("could not be read", e.exception.detail)

    def test_a_malformed_report_is_the_runners_lie(self):
        with self.assertRaises(compare.EvalFailure) as e:
            self.judge().check_guards({"written_outside": "everything is fine"}, "forward")
        self.assertEqual(e.exception.failure, "antiCheat")


@unittest.skipIf(torch is None, "python3 has no torch")
class RunnerHelpersTest(unittest.TestCase):
    def test_dense(self):
        import runner
        self.assertTrue(runner.dense(torch.ones(3, 4)))
        self.assertTrue(runner.dense(torch.ones(3, 4).t()))
        self.assertFalse(runner.dense(torch.ones(1).expand(8)))
        self.assertFalse(runner.dense(torch.ones(4, 1).expand(4, 3)))

    def test_missing_library_is_a_launch_probe_error(self):
        import runner
        with self.assertRaises(runner.LaunchProbeError):
            runner.LaunchProbe("/nonexistent/dice_launch_probe.so")

    @unittest.skipUnless(os.environ.get("DICE_LAUNCH_PROBE"), "this build has no launch probe")
    def test_built_probe_loads_and_reports_a_refused_subscription(self):
        import runner
        path = os.environ["DICE_LAUNCH_PROBE"]
        if os.path.exists("/dev/nvidiactl"):
            probe = runner.LaunchProbe(path)
            self.assertEqual(probe.launches(lambda: None), ([], False))
            self.assertEqual(probe.detach(), 0)
            return
        with self.assertRaises(runner.LaunchProbeError) as caught:
            runner.LaunchProbe(path)
        self.assertIn("CUPTI refused the subscription", str(caught.exception))
        probe = runner.LaunchProbe(path, attach=False)
        with self.assertRaises(runner.LaunchProbeError):
            probe.launches(lambda: self.fail("fn must not run when the probe did not start"))


if __name__ == "__main__":
    unittest.main()
