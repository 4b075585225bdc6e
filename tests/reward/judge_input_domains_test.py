"""Inputs of the judge's making keep the domain get_inputs() draws (issue 50 item 1): references
that index (gather, embedding, index_select, float-held indices, embedding_bag's sorted offsets),
take log, sqrt or acos of their inputs, read probabilities, masks, permutations and plain sizes,
each judged with a correct candidate test double on the CPU:
- through the judge and its runner (judge.py --spawn-runner --device cpu): the correctness
  trials, the fresh set and a shape variant;
- through the judge's timing (Judge.time_both, in this process): every timed call's inputs
  (timed_calls.CallInputs under request seeds), with a runner double that answers the timing
  requests with the same loop (timed_calls.time_request), as runner.py does.
Where the task's reference fails anyway, the verdict is internalError with a "reference-failed"
note that says whose inputs they were: get_inputs()'s own values (the task's code) or the
judge's timing inputs (the judge's input making). Skipped when python3 has no torch."""

import json
import os
import subprocess
import sys
import tempfile
import time
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.path.join(HERE, "..", "..", "reward", "python")
sys.path.insert(0, PY)

try:
    import torch
except ImportError:
    torch = None

import judge  # noqa: E402
import timed_calls  # noqa: E402
from compare import EvalFailure, output_atols  # noqa: E402

# Each case: the reference (no parameters: its tables are inputs, so the candidate needs none)
# and a test double of a compiled extension that computes the same with its own arithmetic.
CASES = {
    # Indices into another input: embedding rows, then a gather along the sequence.
    "gather_index": ("""
import torch
import torch.nn as nn
import torch.nn.functional as F
batch, length, dim, vocab, picks = 4, 16, 8, 50, 5
class Model(nn.Module):
    def forward(self, table, ids, index):
        return torch.gather(F.embedding(ids, table), 1, index)
def get_inputs():
    return [torch.randn(vocab, dim), torch.randint(0, vocab, (batch, length)),
            torch.randint(0, length, (batch, picks, dim))]
def get_init_inputs():
    return []
""", """
import torch
def forward(table, ids, index):
    return torch.take_along_dim(table[ids], index, dim=1)
"""),
    # Indices held in a float tensor: any shift of a few units reads past the table.
    "float_indices": ("""
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, table, position):
        return torch.index_select(table, 0, position.long())
def get_inputs():
    return [torch.randn(40, 8), torch.randint(0, 40, (64,)).float()]
def get_init_inputs():
    return []
""", """
import torch
def forward(table, position):
    return table[position.to(torch.int64)]
"""),
    # Positive inputs for sqrt, log and rsqrt.
    "log_sqrt_positive": ("""
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x, y):
        return torch.sqrt(x) + torch.log(y) + torch.rsqrt(y)
def get_inputs():
    return [torch.rand(32, 64), torch.rand(32, 64) + 1e-3]
def get_init_inputs():
    return []
""", """
import torch
def forward(x, y):
    return x.pow(0.5) + y.log() + y.pow(-0.5)
"""),
    # Probabilities in [0, 1]: binary_cross_entropy asserts it (a device-side assert on CUDA).
    "probabilities": ("""
import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def forward(self, p, target):
        return F.binary_cross_entropy(p, target)
def get_inputs():
    return [torch.rand(64, 64), torch.rand(64, 64)]
def get_init_inputs():
    return []
""", """
import torch
def forward(p, target):
    log_p = torch.clamp(torch.log(p), min=-100)
    log_q = torch.clamp(torch.log1p(-p), min=-100)
    return -(target * log_p + (1 - target) * log_q).mean()
"""),
    # acos of [-1, 1]; the candidate's relu is a kernel's fmaxf (NaN gives 0, torch's gives NaN).
    "acos_range": ("""
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(torch.acos(x) - 1.5)
def get_inputs():
    return [torch.rand(64, 64) * 2 - 1]
def get_init_inputs():
    return []
""", """
import torch
def forward(x):
    y = torch.acos(x) - 1.5
    return torch.where(y > 0, y, torch.zeros_like(y))
"""),
    # A bool mask.
    "bool_mask": ("""
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x, keep):
        return torch.softmax(x.masked_fill(~keep, -1e4), dim=-1)
def get_inputs():
    return [torch.randn(8, 32), torch.rand(8, 32) > 0.5]
def get_init_inputs():
    return []
""", """
import torch
def forward(x, keep):
    e = torch.exp(torch.where(keep, x, torch.full_like(x, -1e4)) - 30.0)
    return e / e.sum(dim=-1, keepdim=True)
"""),
    # Sorted offsets into another input, starting at 0 (embedding_bag raises otherwise).
    "sorted_offsets": ("""
import torch
import torch.nn as nn
import torch.nn.functional as F
bags, ids, vocab, dim = 6, 40, 30, 8
class Model(nn.Module):
    def forward(self, table, index, offsets):
        return F.embedding_bag(index, table, offsets, mode="sum")
def get_inputs():
    starts = torch.randint(1, ids, (bags - 1,)).sort().values
    return [torch.randn(vocab, dim), torch.randint(0, vocab, (ids,)),
            torch.cat([torch.zeros(1, dtype=torch.long), starts])]
def get_init_inputs():
    return []
""", """
import torch
def forward(table, index, offsets):
    ends = torch.cat([offsets[1:], torch.tensor([index.numel()])])
    return torch.stack([table[index[s:e]].sum(dim=0) for s, e in zip(offsets.tolist(),
                                                                    ends.tolist())])
"""),
    # argsort's permutation per row, and a size as a plain int.
    "argsort_and_sizes": ("""
import torch
import torch.nn as nn
batch_size, width = 8, 24
class Model(nn.Module):
    def forward(self, x, order, chunks):
        return torch.gather(x, 1, order).chunk(chunks, dim=1)[0]
def get_inputs():
    return [torch.randn(batch_size, width), torch.argsort(torch.rand(batch_size, width), dim=1),
            3]
def get_init_inputs():
    return []
""", """
import torch
def forward(x, order, chunks):
    rows = torch.arange(x.shape[0]).unsqueeze(1)
    return x[rows, order][:, :x.shape[1] // chunks]
"""),
}

CANDIDATE = """
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="domain_ext", cpp_sources="", cuda_sources="", functions=["forward"])


class ModelNew(nn.Module):
    def forward(self, *inputs):
        return ext.forward(*inputs)
"""


def write_case(folder, reference, extension):
    paths = {}
    for name, text in (("reference.py", reference), ("extension.py", extension),
                       ("candidate.py", CANDIDATE)):
        paths[name] = os.path.join(folder, name)
        with open(paths[name], "w") as f:
            f.write(text)
    return paths


def run_judge(paths, *extra):
    proc = subprocess.run(
        [sys.executable, os.path.join(PY, "judge.py"), "--spawn-runner", "--device", "cpu",
         "--reference", paths["reference.py"], "--runner-candidate", paths["candidate.py"],
         "--runner-module", "domain_ext=" + paths["extension.py"]] + list(extra),
        capture_output=True, text=True, timeout=180)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("DICE_EVAL_RESULT  ")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    return json.loads(lines[0].split(" ", 2)[2])


def load_source(text):
    module = types.ModuleType("reference")
    exec(compile(text, "reference.py", "exec"), module.__dict__)
    return module


class RunnerDouble:
    """The runner's stage, time and exit, answered in this process with the judge's own loop
    (timed_calls.time_request), as runner.py answers them; an exception of the candidate is its
    runtimeError, as runner.py answers it."""

    def __init__(self, model):
        self.model, self.staged, self.ops = model, [], []

    def ask(self, message, values=(), extra_fds=()):
        self.ops.append(message["op"])
        if message["op"] == "stage":
            self.staged.append(list(values))
            return {"ok": True}, []
        assert message["op"] == "time", message
        try:
            digests = timed_calls.time_request(torch, self.model, self.staged,
                                               int(message["calls"]), int(message["seed"]),
                                               torch.device("cpu"), lambda: None)
        except Exception as e:  # noqa: BLE001 - as runner.py answers it
            raise EvalFailure("runtimeError", "timed forward raised %s: %s" % (
                type(e).__name__, e))
        return {"digests": digests}, []

    def end(self):
        self.ops.append("exit")


def judge_timing(reference, extension, seed=7):
    """(result, runner double) of Judge.time_both for the reference against the candidate double
    on the CPU, or (EvalFailure, runner double) where it failed."""
    ref = load_source(reference)
    fake_ext = load_source(extension)

    class Candidate(torch.nn.Module):
        def forward(self, *inputs):
            return fake_ext.forward(*inputs)

    args = judge.parse_args(["--reference", "reference.py", "--runner-candidate", "candidate.py",
                             "--device", "cpu", "--timing", "--timing-trials", "12",
                             "--seed", str(seed)])
    runner = RunnerDouble(Candidate())
    j = judge.Judge(torch, args, runner)
    seeds = judge.draw_seeds(torch, args)
    model = ref.Model(*ref.get_init_inputs())
    fresh = j.make_inputs(ref.get_inputs, seeds["fresh"])
    with torch.no_grad():
        want = timed_calls.flat_outputs(model(*fresh))
    result = {}
    try:
        j.time_both(model, ref.get_inputs, seeds, want, output_atols(torch, want, args), result)
    except EvalFailure as e:
        e.findings = j.findings
        return e, runner
    result["findings"] = j.findings
    return result, runner


# Request seeds, and the calls of each: as many as a default --timing-trials 100 gives a round.
REQUEST_SEEDS = (1, 2, 3, judge.timing_seed())
CALLS = 20


def timing_inputs(base):
    """Every call's inputs of every request seed, made from one base set."""
    for seed in REQUEST_SEEDS:
        made = timed_calls.CallInputs(torch, [base], seed, "cpu")
        for k in range(CALLS):
            yield made.inputs(k)


def finite(values):
    return all(bool(torch.isfinite(v).all()) for v in timed_calls.flat_outputs(values)
               if isinstance(v, torch.Tensor) and v.is_floating_point())


@unittest.skipIf(torch is None, "python3 has no torch")
class TimedInputsKeepTheDomainTest(unittest.TestCase):
    def test_every_timed_call_of_every_case_runs_the_reference_as_its_own_inputs_do(self):
        for name, (reference, _) in CASES.items():
            ref = load_source(reference)
            model = ref.Model(*ref.get_init_inputs())
            for seed in (1, 2):
                torch.manual_seed(seed)
                base = list(ref.get_inputs())
                with torch.no_grad():
                    self.assertTrue(finite(model(*base)), name)
                    for k, inputs in enumerate(timing_inputs(base)):
                        self.assertTrue(finite(model(*inputs)), "%s, call %d" % (name, k))

    def test_values_keep_their_class(self):
        torch.manual_seed(3)
        positive = torch.rand(16, 40) + 0.25
        spanning = torch.randn(16, 40)
        spanning[0, :4] = 0.0
        index = torch.randint(0, 9, (16, 40))
        mask = torch.rand(16, 40) > 0.5
        offsets = torch.tensor([0, 4, 4, 9, 30])
        seen = set()
        for p, s, i, m, o, n in timing_inputs([positive, spanning, index, mask, offsets, 5]):
            self.assertGreaterEqual(float(p.min()), float(positive.min()))
            self.assertLessEqual(float(p.max()), float(positive.max()))
            # Values spanning 0 are drawn toward it: as many of each sign, zeros where they were
            # (moved by the roll that moved the rest).
            for sign in (-1, 0, 1):
                self.assertEqual(int((torch.sign(s) == sign).sum()),
                                 int((torch.sign(spanning) == sign).sum()))
            # Integers and masks are moved, never changed; sorted offsets stay where they are.
            self.assertEqual(sorted(i.flatten().tolist()), sorted(index.flatten().tolist()))
            self.assertEqual(int(m.sum()), int(mask.sum()))
            self.assertTrue(torch.equal(o, offsets))
            self.assertEqual(n, 5)
            seen.add((p.numpy().tobytes(), s.numpy().tobytes()))
        self.assertEqual(len(seen), len(REQUEST_SEEDS) * CALLS)  # every call's inputs differ

    def test_sorted_floats_stay_sorted(self):
        edges = torch.linspace(-3.0, 5.0, 33)
        for (y,) in timing_inputs([edges]):
            self.assertTrue(bool((y[1:] >= y[:-1]).all()))
            self.assertGreaterEqual(float(y.min()), -3.0)
            self.assertLessEqual(float(y.max()), 5.0)

    def test_complex_values_are_moved_never_changed(self):
        z = torch.randn(6, 10, dtype=torch.complex64)
        for (y,) in timing_inputs([z]):
            self.assertEqual(sorted(y.flatten().tolist(), key=abs),
                             sorted(z.flatten().tolist(), key=abs))

    def test_half_precision_stays_in_range(self):
        for dtype in (torch.float16, torch.bfloat16):
            x = torch.rand(8, 64).to(dtype)
            for (y,) in timing_inputs([x]):
                self.assertEqual(y.dtype, dtype)
                self.assertGreaterEqual(float(y.min()), float(x.min()))
                self.assertLessEqual(float(y.max()), float(x.max()))


@unittest.skipIf(torch is None, "python3 has no torch")
class JudgeTimingOnTheCpuTest(unittest.TestCase):
    def test_each_case_is_timed_and_its_outputs_agree(self):
        for name, (reference, extension) in CASES.items():
            result, runner = judge_timing(reference, extension)
            self.assertNotIsInstance(result, EvalFailure, "%s: %s" % (
                name, getattr(result, "detail", "")))
            self.assertGreater(result["speedup"], 0, name)
            self.assertEqual(result["timing_trials"], judge.TIMING_ROUNDS, name)
            self.assertIn("time", runner.ops)
            # Every request to the runner before its end; the reference's timed loops after it.
            self.assertEqual(runner.ops[-1], "exit", name)

    def test_the_reference_is_timed_once_the_runner_has_ended_on_each_rounds_seed(self):
        reference, extension = CASES["log_sqrt_positive"]
        events = []
        real = timed_calls.time_request

        def recorded(torch_, model, base_sets, calls, seed, device, synchronize):
            kind = ("stand-in" if isinstance(model, judge.StandIn) else
                    "candidate" if type(model).__name__ == "Candidate" else "reference")
            events.append((kind, seed, calls))
            return real(torch_, model, base_sets, calls, seed, device, synchronize)

        timed_calls.time_request = recorded
        try:
            result, runner = judge_timing(reference, extension)
        finally:
            timed_calls.time_request = real
        self.assertNotIsInstance(result, EvalFailure, getattr(result, "detail", ""))
        end = runner.ops.index("exit")
        candidate_rounds = [e for e in events if e[0] == "candidate"]
        before_end = len(candidate_rounds) + 2  # the reference's warm-up and provisional loops
        self.assertEqual([e[0] for e in events[:before_end]],
                         ["reference", "candidate", "reference"] + ["candidate"] * (
                             len(candidate_rounds) - 1))
        self.assertEqual(runner.ops[end:], ["exit"])
        after = events[before_end:]
        self.assertTrue(all(kind != "candidate" for kind, _, _ in after))
        # Each measured round's seed is timed again by the reference, then by the stand-in. A
        # loaded machine can slow the provisional reference time enough that the speedup looks
        # implausible; the candidate is then timed a second group of rounds (Judge.time_both).
        measured = candidate_rounds[1:]
        self.assertIn(len(measured), (judge.TIMING_ROUNDS, 2 * judge.TIMING_ROUNDS))
        for seed_round in measured:
            self.assertIn(("reference",) + seed_round[1:], after)
            self.assertIn(("stand-in",) + seed_round[1:], after)
        # Every request seed is fresh.
        self.assertEqual(len({seed for _, seed, _ in events}), len(events) - 2 * len(measured))

    def test_a_reference_the_judges_inputs_break_is_the_judges_fault(self):
        # Whole numbers held as floats: the judge's timing inputs move them off whole numbers.
        reference = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        if not bool((x == x.round()).all()):
            raise ValueError("x must hold whole numbers")
        return x * 2
def get_inputs():
    return [torch.randint(0, 9, (4, 8)).float()]
def get_init_inputs():
    return []
"""
        result, runner = judge_timing(reference, "def forward(x):\n    return x + x\n")
        self.assertIsInstance(result, EvalFailure)
        self.assertEqual(result.failure, "internalError")
        self.assertIn("the judge's timing inputs", result.detail)
        self.assertIn("the judge's input making", result.detail)
        self.assertIn("ValueError: x must hold whole numbers", result.detail)
        self.assertEqual([f["check"] for f in result.findings], ["reference-failed"])
        self.assertFalse(result.findings[0]["fatal"])
        # The reference's loop runs first: the candidate was never timed on those inputs.
        self.assertEqual(runner.ops, ["stage", "stage"])


@unittest.skipIf(torch is None, "python3 has no torch")
class JudgeRunnerOnTheCpuTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.folder.cleanup()

    def case(self, name, reference=None, extension=None):
        folder = os.path.join(self.folder.name, name)
        os.makedirs(folder, exist_ok=True)
        return write_case(folder, reference or CASES[name][0], extension or CASES[name][1])

    def test_each_case_is_rewarded(self):
        for name in CASES:
            r = run_judge(self.case(name), "--trials", "2")
            self.assertEqual(r["failure"], "none", "%s: %s" % (name, r))
            self.assertTrue(r["correct"], name)

    def test_a_shape_variant_keeps_the_index_ranges(self):
        r = run_judge(self.case("gather_index"), "--trials", "1", "--shape-variant",
                      "length=3,vocab=7", "--shape-variant", "batch=1")
        self.assertEqual(r["failure"], "none", r)
        self.assertEqual(r["shape_variants"], 2)

    def test_a_reference_that_fails_on_its_own_inputs_is_the_tasks_fault(self):
        broken = CASES["gather_index"][0].replace("torch.randint(0, length,",
                                                  "torch.randint(length, length + 2,")
        r = run_judge(self.case("broken", broken, CASES["gather_index"][1]), "--trials", "1")
        self.assertEqual(r["failure"], "internalError", r)
        self.assertIn("the reference failed on get_inputs()'s own values (trial 0, seed",
                      r["detail"])
        self.assertIn("the task's code", r["detail"])
        self.assertEqual([f["check"] for f in r["findings"]], ["reference-failed"])

    def test_a_shape_variant_that_breaks_the_reference_is_named(self):
        # The index's size is fixed at import: another batch size breaks the reference's gather.
        fixed = CASES["gather_index"][0].replace(
            "torch.randint(0, length, (batch, picks, dim))", "torch.randint(0, length, INDEX)")
        fixed += "INDEX = (batch, picks, dim)\n"
        r = run_judge(self.case("fixed", fixed, CASES["gather_index"][1]), "--trials", "1",
                      "--shape-variant", "batch=2")
        self.assertEqual(r["failure"], "internalError", r)
        self.assertIn("shape variant batch=2", r["detail"])
        self.assertEqual([f["check"] for f in r["findings"]], ["reference-failed"])

    def test_a_shape_variant_get_inputs_cannot_draw_is_named(self):
        r = run_judge(self.case("gather_index"), "--trials", "1", "--shape-variant", "length=0")
        self.assertEqual(r["failure"], "internalError", r)
        self.assertIn("get_inputs() failed (shape variant length=0, seed", r["detail"])
        self.assertEqual([f["check"] for f in r["findings"]], ["reference-failed"])


if __name__ == "__main__":
    unittest.main()
