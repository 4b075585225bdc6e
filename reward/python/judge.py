"""The judge: decides whether one compiled candidate is correct and how fast it is, against its
PyTorch reference (KernelBench semantics plus anti-cheat checks). It never imports candidate code:
the candidate runs in the runner (runner.py), a process of its own in a stricter sandbox, and
everything it produces reaches the judge as bytes over the channel (channel.py). The reference,
the comparisons, the timing arithmetic and the verdict live here only (docs/SECURITY.md).

Usage (the reward worker starts it ahead of its work, like the runner):
  python3 judge.py --job-from-stdin [--device cuda] [--serve-jobs N]
      imports torch and creates the CUDA context, prints "DICE_EVAL_READY", then reads its
      arguments from stdin, NUL-separated, up to a newline; its channel to the runner arrives with
      the first byte (SCM_RIGHTS). With --serve-jobs N > 1 it judges up to N jobs, one after
      another: after each result it prints "DICE_EVAL_READY" again and reads the next job, while
      it is sound to (Server.serves_again: its CUDA context works, under half its CPU-time limit
      used); the result's "serves_again" says which. It runs no candidate code, so nothing of a
      candidate can stay in it: between jobs it puts back the process-wide torch settings a
      reference may change, drops the job's files and returns its cached GPU memory.
  python3 judge.py --spawn-runner ARGS...   (tests: starts runner.py itself, unsandboxed)
Arguments:
  --reference ref.py --runner-candidate PATH --runner-module NAME=PATH... (paths as the runner
  sees them; the judge has copies of the modules at the same paths) [--kernels k1,k2]
  [--trials 3] [--tol-fp32 1e-2 --tol-fp16 1e-2 --tol-bf16 1e-2]
  [--seed -1] [--timing --timing-trials 100 --warmups 3] [--device cuda] [--nonce-file nonce]
  [--timing-turn] [--peak-gbps 4800] [--plausible-speedup 10] [--answer-seconds 600]
  [--shape-variant NAME=INT,NAME=INT ...] [--libraries own_kernels_only|allowed]

Before the runner loads anything, each --runner-module file is read here (module_imports.py):
a module that imports what an honest kernel extension does not need (a vendor library, dynamic
lookup, ATen compute, anything outside the allow-list) is the candidate's antiCheat, with a
"module-imports" finding naming the symbol and its rule. --libraries is the reward policy's rule
on library calls (reward.libraries): own_kernels_only (the default) refuses vendor libraries'
imports and kernels (vendor-library), naming the policy; allowed waives that rule, and the
verdict carries a non-fatal "library-calls" finding instead.

--seed -1 (the default) draws the model and input seeds from os.urandom, so a candidate cannot
know its inputs ahead; they are in the result ("seeds") to reproduce a verdict. --seed N >= 0
draws them as KernelBench does from N.

--shape-variant (repeatable; the task's shape_variants) sets module-level integers of the
reference (batch_size=3,dim=129) before one more input set is drawn from get_inputs(): a kernel
that only holds for the task's own shapes fails there. A variant must leave get_init_inputs()
as it is (it varies the inputs, not the model); one that does not, or that names no integer of
the reference, is the task's error (internalError), not the candidate's.

Every input set is get_inputs()'s own values; the timed calls' inputs are made from them by
timed_calls.CallInputs under a seed drawn here per timing request, which keeps their domain.

--timing: the candidate is timed by this process's clock around whole requests to the runner
(TIMING_ROUNDS of them), and the reference only once the runner has ended: the judge prints
"DICE_RUNNER_DONE <nonce>" and waits for a line on stdin, which the worker sends once it has
reaped the runner's sandbox (Judge.time_both; docs/SECURITY.md, "Timing that belongs to the
kernel"). Where the reference (or get_inputs) raises
anyway, the verdict is internalError with a "reference-failed" note naming the inputs: the task's
own values, or the judge's timing inputs (Judge.reference_failed).

Output: one line "DICE_EVAL_RESULT <nonce> <json>" on stdout, written by this process only (the
runner's output is never read for a result). JSON keys: failure (a FailureClass name of
schemas/verdict.capnp), detail, correct, trials, max_abs_error, findings [{check, detail, fatal}],
kernel_ms_mean, kernel_ms_std, reference_ms_mean, reference_ms_std, timing_trials, speedup,
timing_clock (the wall times behind them, with the stated margin), eval_seconds, phases, seeds,
shape_variants (how many were checked, with any), judge_job (this job's number in the judge's
life, 1 for its first), serves_again. The findings are
listed in docs/SECURITY.md.
"""

import argparse
import gc
import json
import math
import os
import resource
import socket
import subprocess
import sys
import time
import traceback
import types

import channel
import kernel_check
import module_imports
import timed_calls
from compare import (EvalFailure, check_output_kinds, compare_outputs, is_constant,
                     output_atols, same_tensors, same_values)

RESULT_PREFIX = "DICE_EVAL_RESULT"
READY_LINE = "DICE_EVAL_READY"
TIMING_TURN_PREFIX = "DICE_TIMING_TURN"
# Printed with the nonce when the judge has sent the runner its exit and needs it gone before
# timing the reference; the worker answers on stdin once it has reaped the runner's sandbox.
RUNNER_DONE_PREFIX = "DICE_RUNNER_DONE"
# ---- pure helpers (tested on the CPU) ------------------------------------------------------

def mean_std(values):
    if not values:
        return 0.0, 0.0
    m = sum(values) / len(values)
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / len(values))


def draw_seeds(torch, args):
    """{"init": model seed, "trials": [input seed per trial], "fresh": one more, "timing": [2],
    "variants": [one per shape variant]}: from os.urandom with --seed -1, else drawn as
    KernelBench draws them from --seed (the trials' seeds first, as KernelBench's)."""
    variants = len(getattr(args, "shape_variant", []) or [])
    count = args.trials + 3 + variants
    if args.seed < 0:
        values = [int.from_bytes(os.urandom(4), "little") for _ in range(count + 1)]
        init = values.pop() & 0x7FFFFFFF
    else:
        torch.manual_seed(args.seed)
        values = [int(torch.randint(0, 2 ** 32 - 1, (1,)).item()) for _ in range(count)]
        init = args.seed
    return {"init": init, "trials": values[:args.trials], "fresh": values[args.trials],
            "timing": values[args.trials + 1:args.trials + 3],
            "variants": values[args.trials + 3:]}


def own_values(seed, which):
    """How an input set the judge takes from get_inputs() unchanged is named where the
    reference fails on it."""
    return "get_inputs()'s own values (%s, seed %d): the task's code" % (which, seed)


def parse_shape_variant(text):
    """"batch_size=3,dim=129" -> {"batch_size": 3, "dim": 129}; ValueError naming what is
    wrong."""
    sizes = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise ValueError("%r is not NAME=INT" % part)
        try:
            sizes[name] = int(value)
        except ValueError:
            raise ValueError("%r: %r is not an integer" % (part, value))
    return sizes


# Timing requests per measurement, each of its own seed and --timing-trials / TIMING_ROUNDS calls:
# the verdict's timing_trials are these rounds (the independent measurements), and its means and
# (population) standard deviations are over their per-call times, so a consumer's standard error
# sd / sqrt(n - 1) is the sample standard error of the mean time (tasks/answer_scoring.h).
TIMING_ROUNDS = 5
# The least per-call time a candidate is credited with, in ms: its clocked loop can come out at
# or under the loop's own overhead (a kernel within the clock's noise, or inputs and digests
# fused into its work); "faster-than-memory" judges such a time on a GPU.
KERNEL_MS_FLOOR = 1e-4
# The clock's resolution per call: this many times the spread (largest less smallest) of the
# judge's own overhead loop between rounds, per call. A net time under it is noise of the loop,
# not the kernel's, and is credited as the resolution (kernel-below-clock-resolution): a
# speedup is never a ratio to a difference the clock cannot see.
RESOLUTION_SPREADS = 2.0
# The reference timed beside the candidate's idle process (before its timing) more than this
# many times slower than with that process gone is noted (reference-slowed-beside-candidate).
BESIDE_CANDIDATE_SLOWDOWN = 1.5


def timing_seed():
    """A timing request's seed: from os.urandom, so no call's inputs are known before its request
    arrives."""
    return int.from_bytes(os.urandom(8), "little") >> 1


def clock_resolution_ms(overheads, calls):
    """The least per-call time the clock resolves, from the overhead loop's walls of every
    round (RESOLUTION_SPREADS), and at least KERNEL_MS_FLOOR."""
    return max(KERNEL_MS_FLOOR, RESOLUTION_SPREADS * (max(overheads) - min(overheads)) / calls)


def per_call_ms(walls, overheads, calls, floor_ms=KERNEL_MS_FLOOR):
    """Per-call times of clocked loops less the loop's own overhead, each at least floor_ms."""
    return [max((w - o) / calls, floor_ms) for w, o in zip(walls, overheads)]


class StandIn:
    """The loop's overhead, clocked: a model that returns fixed outputs of the reference's kinds,
    so the loop makes every call's inputs and digests as it does around a forward."""

    def __init__(self, outputs):
        self.outputs = outputs

    def __call__(self, *inputs):
        return self.outputs


# ---- the runner's side, seen from here ----------------------------------------------------

# The failure classes a runner's {"error"} answer may name (any other is runtimeError): the
# candidate's own failures, never one that would leave its verdict unscored (internalError).
RUNNER_FAILURES = ("importError", "runtimeError", "shapeMismatch", "resourceLimit")
# What an exception's text says when a process ran out of memory: the device's (PyTorch's
# allocator, a launch, a library's workspace) or the host's. The runner's error of that kind is
# the candidate's resourceLimit, as the sandbox's classification reads MemoryError
# (reward/run_failure.cc).
CUDA_OUT_OF_MEMORY_TEXTS = ("CUDA out of memory", "CUDA error: out of memory",
                            "CUBLAS_STATUS_ALLOC_FAILED")
OUT_OF_MEMORY_TEXTS = CUDA_OUT_OF_MEMORY_TEXTS + ("MemoryError",)


# How the detail of a `crashed` verdict starts when the runner (the candidate's process) ended
# during a request; the evaluator reads how it ended and makes it resourceLimit when a limit ended
# it (kRunnerEnded, reward/run_failure.h).
RUNNER_ENDED = "the runner ended"


def says_out_of_memory(text):
    return any(s in text for s in OUT_OF_MEMORY_TEXTS)


def malformed(what):
    """The candidate's failure for an answer of its runner that is not what the protocol says."""
    return EvalFailure("antiCheat", "malformed answer from the runner: %s" % what)


def checked_digest_answer(answer, calls):
    """The digests of a runner's answer to a timing request of `calls` calls; the candidate's
    antiCheat unless they are a list of one per call."""
    digests = answer.get("digests")
    if not isinstance(digests, list) or len(digests) != calls:
        raise malformed("its timing answer is not digests, one per call")
    return digests


class RunnerLink:
    """Requests to the runner; every answer is checked before use. A malformed answer, or none in
    time, ends the evaluation: the runner is the candidate's process."""

    def __init__(self, torch, sock, answer_seconds, runner_gone=None):
        self.torch, self.sock, self.answer_seconds = torch, sock, answer_seconds
        # From the first "load" on, candidate code may run in the runner and hold GPU memory.
        self.candidate_loaded = False
        # Returns once every process of the runner has ended (main() says how it knows).
        self.runner_gone = runner_gone or (lambda: None)

    def end(self):
        """Ends the runner, and returns once the candidate's processes are gone: no code of the
        candidate can reach the device after this."""
        try:
            channel.send(self.sock, {"op": "exit"})
        except OSError:
            pass  # gone already
        self.runner_gone()
        # For the log (and the test that reads it): the system's monotonic clock, the one the
        # candidate's process sees too.
        sys.stderr.write("judge: the runner is gone at monotonic %.6f\n" % time.monotonic())
        sys.stderr.flush()

    def ask(self, message, values=(), extra_fds=()):
        self.candidate_loaded = self.candidate_loaded or message.get("op") == "load"
        items, fds = channel.encode(self.torch, list(values))
        fds = fds + [os.dup(fd) for fd in extra_fds]
        message = dict(message, inputs=items)
        try:
            channel.send(self.sock, message, fds)
        except OSError as e:
            raise EvalFailure("crashed", RUNNER_ENDED + ": %s" % e)
        finally:
            for fd in fds:
                os.close(fd)
        try:
            answer, answer_fds = channel.receive(self.sock, self.answer_seconds)
        except EOFError:
            raise EvalFailure("crashed", RUNNER_ENDED + " during %r" % message.get("op"))
        except channel.AnswerTimeout as e:
            raise EvalFailure("timeout", "%r: %s" % (message.get("op"), e))
        except (channel.ProtocolError, OSError) as e:
            raise malformed("during %r: %s" % (message.get("op"), e))
        # The runner writes into memfds the judge made (slots_for) and sends none of its own:
        # descriptors with an answer are not runner.py's, and kept they would run the judge out
        # of its open-file limit (the sandbox's max_open_files).
        for fd in answer_fds:
            os.close(fd)
        if answer_fds:
            raise malformed("%d descriptors with the answer to %r" % (len(answer_fds),
                                                                      message.get("op")))
        if "error" in answer:
            failure = answer.get("error")
            if failure not in RUNNER_FAILURES:
                failure = "runtimeError"
            detail = str(answer.get("detail", ""))[:2000]
            if failure == "runtimeError" and says_out_of_memory(detail):
                failure = "resourceLimit"
            raise EvalFailure(failure, detail)
        return answer, []

    def outputs(self, answer, slot_fds, want, device):
        """The outputs the runner wrote into the slots (memfds made here), checked against the
        reference's outputs `want`. Every fd is closed."""
        items = answer.get("outputs", [])
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            for fd in slot_fds:
                os.close(fd)
            raise malformed("its outputs are not a list of objects")
        for i, item in enumerate(items):
            declared = item.get("unexpected") if isinstance(item, dict) else None
            if isinstance(declared, dict):
                for fd in slot_fds:
                    os.close(fd)
                where = "output %d" % i if len(want) > 1 else "output"
                w = want[i] if i < len(want) else None
                ref = ("dtype %s, shape %s" % (str(w.dtype).replace("torch.", ""), list(w.shape))
                       if isinstance(w, self.torch.Tensor) else "a plain value" if i < len(want)
                       else "no such output")
                raise EvalFailure("shapeMismatch", "%s: dtype %s, shape %s on %s; reference: %s"
                                  % (where, str(declared.get("dtype"))[:32],
                                     str(declared.get("shape"))[:200],
                                     str(declared.get("device"))[:16], ref))
        try:
            values = channel.decode(self.torch, items, slot_fds, device)
        except channel.ProtocolError as e:
            # The runner fills only the slots whose dtype and shape its output has and declares
            # the others (unexpected): outputs that do not decode were not sent by runner.py.
            raise malformed("its outputs do not decode: %s" % e)
        return values, channel.declared_devices(items)


# ---- the evaluation ------------------------------------------------------------------------

class Judge:
    def __init__(self, torch, args, link):
        self.torch, self.args, self.link = torch, args, link
        self.device = torch.device(args.device)
        self.cuda = self.device.type == "cuda"
        self.findings = []
        self.spent = {"inputs": 0.0, "runner": 0.0, "compare": 0.0}

    def finding(self, check, detail, fatal):
        self.findings.append({"check": check, "detail": detail, "fatal": fatal})

    def note_once(self, check, detail):
        if all(f["check"] != check for f in self.findings):
            self.finding(check, detail, False)

    def timed(self, what, fn, *a):
        start = time.monotonic()
        try:
            return fn(*a)
        finally:
            self.spent[what] += time.monotonic() - start

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def make_inputs(self, get_inputs, seed, which="an input set"):
        """get_inputs()'s own values under `seed`, on the judge's device. Where get_inputs raises,
        the task's code failed (reference_failed; `which` names the set)."""
        self.torch.manual_seed(seed)
        try:
            values = get_inputs()
        except Exception as e:  # noqa: BLE001 - the task's code
            raise self.reference_failed(e, "get_inputs() failed (%s, seed %d): the task's code" %
                                        (which, seed))
        return [x.to(self.device) if isinstance(x, self.torch.Tensor) else x for x in values]

    def cloned(self, inputs):
        return [x.clone() if isinstance(x, self.torch.Tensor) else x for x in inputs]

    def reference(self, model, inputs, origin):
        """The reference's outputs for `inputs` (whose making `origin` names); where it raises,
        reference_failed says on whose inputs."""
        try:
            with self.torch.no_grad():
                out = model(*self.cloned(inputs))
            self.sync()  # a device-side assert of the reference surfaces here
        except Exception as e:  # noqa: BLE001 - the task's code
            raise self.reference_failed(e, "the reference failed on " + origin)
        return timed_calls.flat_outputs(out)

    def reference_failed(self, e, where):
        """The exception to raise for exception e of the task's code (the reference or its
        get_inputs), `where` saying which failed on whose inputs. Neither is the candidate's
        fault: internalError, with a "reference-failed" note that says whose inputs they were:
        get_inputs()'s own values (the task's fault) or the judge's timing inputs (ours). A CUDA
        out-of-memory is left to own_failure, which knows whose memory it may be."""
        if is_cuda_oom(self.torch, e):
            return e
        traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
        why = "%s: %s: %s" % (where, type(e).__name__, str(e)[:1500])
        self.finding("reference-failed", why[:1000], False)
        return EvalFailure("internalError", why)

    def candidate(self, inputs, want):
        """The runner's outputs for `inputs`, checked to be of the reference's kinds."""
        slots, slot_fds = channel.slots_for(self.torch, want)
        try:
            answer, fds = self.timed("runner", self.link.ask, {
                "op": "forward", "slots": slots}, inputs, slot_fds)
        except BaseException:
            for fd in slot_fds:
                os.close(fd)
            raise
        for fd in fds:  # the runner sends none back
            os.close(fd)
        got, devices = self.link.outputs(answer, slot_fds, want, self.device)
        self.check_guards(answer, "forward")
        modified = answer.get("inputs_modified", [])
        if not isinstance(modified, list):
            raise malformed("inputs_modified is not a list")
        if modified:
            self.finding("inputs-modified", "forward changed input(s) %s" % str(modified)[:200],
                         True)
            raise EvalFailure("antiCheat", "the candidate modified its inputs")
        check_output_kinds(self.torch, got, want, devices)
        return got

    def check_correctness(self, ref_model, get_inputs, seeds):
        torch, args = self.torch, self.args
        max_err, scaled = 0.0, set()
        per_trial = []  # (reference outputs, candidate outputs) of each trial
        for trial, seed in enumerate(seeds["trials"]):
            pristine = self.timed("inputs", self.make_inputs, get_inputs, seed, "trial %d" % trial)
            want = self.reference(ref_model, pristine, own_values(seed, "trial %d" % trial))
            got = self.candidate(pristine, want)
            err, _ = self.timed("compare", compare_outputs, torch, got, want, args, scaled)
            max_err = float("nan") if math.isnan(err) else max(max_err, err)
            # Run it again on the same inputs: it must agree with itself.
            again = self.candidate(pristine, want)
            try:
                self.timed("compare", compare_outputs, torch, again, got, args)
            except EvalFailure as e:
                self.finding("kernel-outputs-differ", "trial %d: %s" % (trial, e.detail), True)
                raise EvalFailure("antiCheat", "two runs on equal inputs disagree: " + e.detail)
            for i, (g, w) in enumerate(zip(got, want)):
                if is_constant(torch, g) and not is_constant(torch, w):
                    self.finding("constant-output", "trial %d, output %d: one value everywhere, "
                                 "the reference's varies" % (trial, i), True)
                    raise EvalFailure("antiCheat", "a constant output for a varying reference")
            per_trial.append((want, got))
        self.check_input_dependence(per_trial)
        for i in sorted(scaled):
            self.finding("tolerance-scaled", "output %d: every reference value lies within atol "
                         "of zero, so atol was scaled to the reference's magnitude" % i, False)
        # Inputs from a seed no run above used: an output cached across calls is stale here.
        fresh = self.timed("inputs", self.make_inputs, get_inputs, seeds["fresh"], "the fresh set")
        want = self.reference(ref_model, fresh, own_values(seeds["fresh"], "the fresh set"))
        got = self.candidate(fresh, want)
        try:
            self.timed("compare", compare_outputs, torch, got, want, args)
        except EvalFailure as e:
            self.finding("stale-output", "fresh inputs: " + e.detail, True)
            raise EvalFailure("antiCheat", "wrong on fresh inputs after passing the trials "
                              "(an output cached across calls?): " + e.detail)
        self.check_drawn_inputs(ref_model, fresh, seeds["fresh"])
        return max_err, fresh

    def check_drawn_inputs(self, ref_model, fresh, seed):
        """The fresh set drawn toward its centre as timed calls' inputs are
        (timed_calls.CallInputs: rolled, each floating value moved toward 0 or the middle of its
        range by a share under CONTRACTION_MAX, within the range get_inputs drew). A kernel right
        only for get_inputs' distribution is wrong here: one that normalises with running
        statistics where the reference, in training mode, uses the batch's agrees with it only
        while the batch's mean and variance are near 0 and 1. Without this set such a kernel was
        rewarded untimed and refused timed (its timed outputs differ): one reward per kernel."""
        drawn = self.timed("inputs", timed_calls.CallInputs(
            self.torch, [fresh], seed, self.device).inputs, 0)
        origin = ("the fresh set drawn toward its centre (get_inputs()'s values, seed %d, "
                  "moved by the judge: ours)" % seed)
        try:
            want = self.reference(ref_model, drawn, origin)
        except EvalFailure as e:
            # The judge's inputs broke what the task's reference assumes of its inputs: no
            # verdict of the candidate's rests on them (the trials and the fresh set stand).
            if e.failure != "internalError":
                raise
            self.note_once("drawn-inputs-skipped", "the reference failed on the fresh set drawn "
                           "toward its centre, so the candidate was not checked on it: " +
                           e.detail[:300])
            return
        got = self.candidate(drawn, want)
        try:
            self.timed("compare", compare_outputs, self.torch, got, want, self.args)
        except EvalFailure as e:
            self.finding("wrong-on-drawn-inputs", "the fresh set drawn toward its centre: " +
                         e.detail, True)
            raise EvalFailure("incorrect", "right on get_inputs()'s values, wrong on the same "
                              "values drawn toward their centre (as timed calls' inputs are): "
                              + e.detail)

    def check_input_dependence(self, per_trial):
        """Outputs that do not change when the inputs do, while the reference's do, were not
        computed from the inputs."""
        if len(per_trial) < 2:
            return
        first_want, first_got = per_trial[0]
        wants_vary = any(not same_tensors(self.torch, w, first_want) for w, _ in per_trial[1:])
        gots_vary = any(not same_tensors(self.torch, g, first_got) for _, g in per_trial[1:])
        if wants_vary and not gots_vary:
            self.finding("input-independent-output", "the same output for %d different input "
                         "sets" % len(per_trial), True)
            raise EvalFailure("antiCheat", "the output does not depend on the inputs")

    def check_shape_variants(self, ref, ref_model, init_inputs, seeds):
        """The task's other shapes: each variant sets module-level sizes of the reference, draws
        one input set from get_inputs() and compares as the trials do. The sizes are set back
        afterwards, also when a variant fails."""
        torch = self.torch
        for k, (sizes, seed) in enumerate(zip(self.args.shape_variant, seeds["variants"])):
            label = ",".join("%s=%d" % kv for kv in sizes.items())
            saved = {}
            for name in sizes:
                old = getattr(ref, name, None)
                if not isinstance(old, int) or isinstance(old, bool):
                    raise EvalFailure("internalError", "shape variant %d (%s): the reference has "
                                      "no module-level integer %r" % (k, label, name))
                saved[name] = old
            try:
                for name, value in sizes.items():
                    setattr(ref, name, value)
                if not same_values(torch, list(ref.get_init_inputs()), list(init_inputs)):
                    raise EvalFailure("internalError", "shape variant %d (%s) changes "
                                      "get_init_inputs(): it names a size of the model, not of "
                                      "its inputs" % (k, label))
                which = "shape variant %s" % label
                inputs = self.timed("inputs", self.make_inputs, ref.get_inputs, seed, which)
                want = self.reference(ref_model, inputs, own_values(seed, which))
                try:
                    got = self.candidate(inputs, want)
                    self.timed("compare", compare_outputs, torch, got, want, self.args)
                except EvalFailure as e:
                    self.finding("shape-variant", "%s: %s" % (label, e.detail[:400]), True)
                    raise EvalFailure(e.failure, "with the task's other shape %s: %s" %
                                      (label, e.detail))
            finally:
                for name, old in saved.items():
                    setattr(ref, name, old)

    def check_guards(self, answer, what):
        """The runner's guard bytes (guard_memory.py): a forward that wrote outside its tensors
        fails, and so does one whose guards could not be read (that proves nothing)."""
        error = answer.get("guard_error")
        written = answer.get("written_outside")
        if error:
            raise EvalFailure("runtimeError", "the guards around the candidate's tensors could "
                              "not be read after %s: %s" % (what, str(error)[:300]))
        if written:
            if not isinstance(written, list):
                raise malformed("its guard report is not a list")
            self.finding("write-out-of-bounds", "%s wrote outside its tensors: %s" %
                         (what, "; ".join(str(w) for w in written)[:500]), True)
            raise EvalFailure("runtimeError", "the kernel wrote outside its tensors (%s)" %
                              str(written[0])[:300])

    def check_kernels_ran(self, inputs, modules):
        if not self.cuda:
            return
        answer, fds = self.timed("runner", self.link.ask, {"op": "kernels"}, inputs)
        for fd in fds:
            os.close(fd)
        self.check_guards(answer, "the kernel check's forward")
        for key, check in (("probe_error", "launch-probe-unavailable"),
                           ("profiler_error", "profiler-unavailable")):
            if answer.get(key):
                self.finding(check, str(answer[key])[:500], False)
        launches = answer.get("launches")
        if launches is None:
            # Fails closed: without a kernel list nothing says the candidate's kernels computed
            # forward (a candidate can take CUPTI's one subscriber, or break the profiler).
            self.finding("kernel-evidence-missing", "the runner listed no kernels (%s)" % "; ".join(
                str(answer.get(k))[:200] for k in ("probe_error", "profiler_error")
                if answer.get(k)), True)
            raise EvalFailure("antiCheat", "no evidence: the candidate's process listed no "
                              "kernels for the kernel check")
        if not isinstance(launches, list) or not all(
                isinstance(x, list) and len(x) == 2 and all(isinstance(v, str) for v in x)
                for x in launches):
            raise malformed("its kernel list is not a list of [name, library]")
        # The candidate's own kernels are those its own module launched, whatever their name.
        # A launch whose library the probe could not tell (a driver-API launch, the profiler)
        # counts by name, never for a name in torch's or its libraries' namespaces.
        own, foreign, by_name = kernel_check.classify_launches(launches, modules,
                                                               self.args.kernels)
        if by_name:
            self.finding("kernel-identity-by-name", "the launching library of some kernels is "
                         "unknown (%s): those matched by name" % answer.get("probe", "?"), False)
        if not own:
            self.finding("kernel-not-run", "no kernel of the candidate's module ran during forward"
                         " (saw: %s)" % "; ".join(sorted(set(foreign)))[:500], True)
            raise EvalFailure("antiCheat", "no kernel of the candidate ran during forward")
        vendor, fallback = kernel_check.computing_foreign(launches, modules, self.args.kernels)
        if fallback:
            self.finding("torch-fallback", "PyTorch's own kernels computed part of forward: " +
                         "; ".join(fallback)[:500], True)
            raise EvalFailure("antiCheat", "forward fell back to PyTorch's kernels")
        if vendor:
            found, refusal = kernel_check.library_call_finding(vendor, getattr(
                self.args, "libraries", module_imports.DEFAULT_LIBRARY_POLICY))
            self.findings.append(found)
            if refusal:
                raise EvalFailure("antiCheat", refusal)
        allowed = sorted(set(foreign) - set(vendor))
        if allowed:
            self.finding("torch-kernels-ran", "fills and copies by PyTorch in forward: " +
                         "; ".join(allowed)[:500], False)

    def time_both(self, ref_model, get_inputs, seeds, want, atols, result):
        """Times the candidate and the reference by this process's clock, on the same inputs per
        call (timed_calls.time_request under one seed per round), and checks every timed call's
        output digest against the reference's.
        - The candidate: each round is one request to the runner, clocked from its sending to its
          answer; the runner's loop holds no clock.
        - The reference: timed only once the runner has ended (RunnerLink.end), so no process
          of the candidate can load the device while it runs; the same loop with a stand-in of
          its outputs gives the loop's own overhead, subtracted from both sides' times.
        - A provisional reference time, taken beside the candidate's idle process before its
          rounds, decides whether the speedup may be above --plausible-speedup: the candidate is
          then timed again (as many rounds more) while its runner still lives, and the slower
          reading stands."""
        torch, args = self.torch, self.args
        base_sets = [self.make_inputs(get_inputs, s, "a timing set") for s in seeds["timing"]]
        for base in base_sets:
            self.link.ask({"op": "stage"}, base)
        calls = max(2, -(-args.timing_trials // TIMING_ROUNDS))

        def reference_loop(model, seed, count):
            """(wall ms, digests) of the judge's own loop."""
            self.sync()
            start = time.perf_counter()
            try:
                digests = timed_calls.time_request(torch, model, base_sets, count, seed,
                                                   self.device, self.sync)
            except Exception as e:  # noqa: BLE001 - the task's code on the judge's inputs
                raise self.reference_failed(e, "the reference failed on the judge's timing "
                                            "inputs (timed_calls.CallInputs of get_inputs()'s own "
                                            "values, seeds %s, request seed %d): the judge's "
                                            "input making" % (seeds["timing"], seed))
            return (time.perf_counter() - start) * 1e3, digests

        def candidate_round(seed, count):
            """(wall ms, digests) of one request to the runner, clocked here."""
            start = time.perf_counter()
            answer, fds = self.link.ask({"op": "time", "calls": count, "seed": seed})
            wall_ms = (time.perf_counter() - start) * 1e3
            for fd in fds:
                os.close(fd)
            return wall_ms, checked_digest_answer(answer, count)

        # Both loops once first, unclocked, on seeds of their own: each process's first use of a
        # kernel loads it, and its allocator grows.
        warm_ups = max(1, args.warmups)
        reference_loop(ref_model, timing_seed(), warm_ups)
        candidate_round(timing_seed(), warm_ups)
        provisional_ms, _ = reference_loop(ref_model, timing_seed(), calls)
        groups = [[]]  # per group of rounds: (seed, candidate wall ms, its digests)
        for _ in range(TIMING_ROUNDS):
            seed = timing_seed()
            groups[0].append((seed,) + candidate_round(seed, calls))
        fastest_ms = min(wall for _, wall, _ in groups[0])
        if provisional_ms / fastest_ms > args.plausible_speedup:
            groups.append([])
            for _ in range(TIMING_ROUNDS):
                seed = timing_seed()
                groups[1].append((seed,) + candidate_round(seed, calls))

        self.link.end()  # from here no process of the candidate's is left to load the device
        stand_in = StandIn(want)
        reference_loop(stand_in, timing_seed(), warm_ups)
        tol = max(args.tol_fp32, args.tol_fp16, args.tol_bf16)
        walled = []  # per group: (candidate walls, reference walls, overhead walls)
        clock = {"calls_per_round": calls, "provisional_reference_wall_ms": round(
            provisional_ms, 3), "candidate_wall_ms": [], "reference_wall_ms": [],
            "overhead_wall_ms": []}
        for group in groups:
            walls, ref_walls, overheads = [], [], []
            for seed, wall_ms, got in group:
                ref_ms, ref_digests = reference_loop(ref_model, seed, calls)
                overhead_ms, _ = reference_loop(stand_in, seed, calls)
                for k, (g, w) in enumerate(zip(got, ref_digests)):
                    if not timed_calls.digests_agree(g, w, atols, tol):
                        self.finding("timed-output-wrong", "timed call %d (request seed %d): its "
                                     "output is not the reference's for that call's inputs" % (
                                         k, seed), True)
                        raise EvalFailure("antiCheat", "a timed call returned a wrong output "
                                          "(cached, stale, unfinished or partly computed)")
                walls.append(wall_ms)
                ref_walls.append(ref_ms)
                overheads.append(overhead_ms)
            walled.append((walls, ref_walls, overheads))
            clock["candidate_wall_ms"] += [round(v, 3) for v in walls]
            clock["reference_wall_ms"] += [round(v, 3) for v in ref_walls]
            clock["overhead_wall_ms"] += [round(v, 3) for v in overheads]
        all_overheads = [o for _, _, overheads in walled for o in overheads]
        margin_ms = sum(all_overheads) / len(all_overheads) / calls
        resolution_ms = clock_resolution_ms(all_overheads, calls)
        clock["margin_ms"] = round(margin_ms, 6)
        clock["resolution_ms"] = round(resolution_ms, 6)
        measured = [(per_call_ms(walls, overheads, calls, resolution_ms),
                     per_call_ms(ref_walls, overheads, calls, resolution_ms))
                    for walls, ref_walls, overheads in walled]
        below = sum(1 for walls, _, overheads in walled for w, o in zip(walls, overheads)
                    if (w - o) / calls < resolution_ms)
        if below:
            self.finding("kernel-below-clock-resolution", "%d of %d rounds timed the kernel "
                         "under the clock's resolution of %.4f ms a call (twice the spread of the "
                         "loop's own overhead between rounds): credited as that" % (
                             below, len(all_overheads), resolution_ms), False)
        result["timing_clock"] = clock
        # The slower group stands (a recheck can only lower a speedup).
        ms, ref_ms = max(measured, key=lambda m: mean_std(m[0])[0])
        result["kernel_ms_mean"], result["kernel_ms_std"] = mean_std(ms)
        result["reference_ms_mean"], result["reference_ms_std"] = mean_std(ref_ms)
        result["timing_trials"] = len(ms)
        result["speedup"] = result["reference_ms_mean"] / result["kernel_ms_mean"]
        if len(measured) > 1:
            first = mean_std(measured[0][1])[0] / mean_std(measured[0][0])[0]
            second = mean_std(measured[1][1])[0] / mean_std(measured[1][0])[0]
            self.finding("speedup-rechecked", "%.2fx, then %.2fx on a second timing" % (
                first, second), False)
        isolated_ms = sum(clock["reference_wall_ms"]) / len(clock["reference_wall_ms"])
        if provisional_ms > BESIDE_CANDIDATE_SLOWDOWN * isolated_ms + 5.0:
            self.finding("reference-slowed-beside-candidate", "the reference took %.3f ms a "
                         "request beside the candidate's idle process, %.3f ms with it gone" % (
                             provisional_ms, isolated_ms), False)
        self.finding("timing-margin", "per call: kernel %.4f ms, reference %.4f ms, the loop's "
                     "own overhead %.4f ms (inputs and digests, subtracted from both): %.2fx; a "
                     "kernel that did the loop's work in its own would be credited at most that "
                     "overhead: at least %.2fx" % (
                         result["kernel_ms_mean"], result["reference_ms_mean"], margin_ms,
                         result["speedup"], result["reference_ms_mean"] / (
                             result["kernel_ms_mean"] + margin_ms)), False)


class PhaseClock:
    """Seconds per phase into result["phases"], each phase ending where the next starts."""

    def __init__(self, phases, start):
        self.phases, self.last = phases, start

    def lap(self, name):
        now = time.monotonic()
        self.phases[name] = round(now - self.last, 4)
        self.last = now


def check_module_imports(args, findings):
    """Each built module, read from its file before the runner loads it: the symbols and
    libraries it imports must be ones an honest kernel extension needs (module_imports.py). The
    evidence comes from the file the linker wrote, never from the candidate's process. On the CPU
    a module that is not an ELF file is a test double (a plain Python file) and is not read; on a
    GPU every module must be one, in the judge's own folder (the evaluator copies it there): its
    absence is ours (internalError), not the candidate's."""
    gpu = args.device.startswith("cuda")
    for name, path in args.runner_module:
        try:
            elf = module_imports.is_elf(path)
        except OSError as e:
            if not gpu:
                continue  # the runner says what is missing
            raise EvalFailure("internalError", "the judge cannot read module %s (%s): %s" % (
                name, path, e))
        if not elf:
            if not gpu:
                continue
            raise EvalFailure("internalError", "module %s (%s) is not an ELF file" % (name, path))
        try:
            _, refused = module_imports.check_file(path)
        except module_imports.ModuleFileError as e:
            findings.append({"check": "module-imports", "detail": "module %s: %s" % (name, e),
                             "fatal": True})
            raise EvalFailure("antiCheat", "no evidence: module %s cannot be read as the loader "
                              "reads it: %s" % (name, e))
        found, refusal = module_imports.findings_under_policy(name, refused, args.libraries)
        findings.extend(found)
        if refusal:
            raise EvalFailure("antiCheat", refusal)


def exec_reference(source):
    module = types.ModuleType("reference")
    module.__file__ = "reference.py"
    exec(compile(source, "reference.py", "exec"), module.__dict__)
    return module


def evaluate(torch, args, link, result, clock, timing_turn=None):
    judge = Judge(torch, args, link)
    judge.findings = result["findings"]  # with what the runner's start noted
    with open(args.reference, encoding="utf-8") as f:
        reference_source = f.read()
    try:
        ref = exec_reference(reference_source)
        init_inputs = ref.get_init_inputs()
    except Exception as e:  # noqa: BLE001
        raise EvalFailure("internalError", "the reference does not load: %s: %s" %
                          (type(e).__name__, e))
    seeds = draw_seeds(torch, args)
    result["seeds"] = seeds
    modules = [m[1] for m in args.runner_module]
    check_module_imports(args, result["findings"])
    clock.lap("module_imports")
    link.ask({"op": "load", "candidate": args.runner_candidate, "seed": seeds["init"],
              "modules": [list(m) for m in args.runner_module]}, list(init_inputs))
    torch.manual_seed(seeds["init"])
    ref_model = ref.Model(*init_inputs).to(judge.device)
    clock.lap("load")
    max_err, fresh = judge.check_correctness(ref_model, ref.get_inputs, seeds)
    result["max_abs_error"] = max_err
    result["trials"] = args.trials
    clock.lap("correctness")
    for what, seconds in judge.spent.items():
        result["phases"]["correctness_" + what] = round(seconds, 4)
    if args.shape_variant:
        judge.check_shape_variants(ref, ref_model, init_inputs, seeds)
        result["shape_variants"] = len(args.shape_variant)
        clock.lap("shape_variants")
    judge.check_kernels_ran(fresh, {os.path.basename(m) for m in modules})
    clock.lap("kernel_check")
    result["correct"] = True
    if args.timing and timing_turn is not None:
        timing_turn()
        clock.lap("timing_turn")
    if args.timing:
        want = judge.reference(ref_model, fresh, own_values(seeds["fresh"], "the fresh set"))
        atols = output_atols(torch, want, args)
        judge.time_both(ref_model, ref.get_inputs, seeds, want, atols, result)
        floor_ms = sum(w.numel() * w.element_size() for w in want
                       if isinstance(w, torch.Tensor)) / (args.peak_gbps * 1e6)
        if judge.cuda and result["kernel_ms_mean"] < 0.5 * floor_ms:
            judge.finding("faster-than-memory", "%.4f ms for outputs that take %.4f ms to write "
                          "at %g GB/s" % (result["kernel_ms_mean"], floor_ms, args.peak_gbps),
                          True)
            raise EvalFailure("antiCheat", "timed faster than writing its outputs allows")
        clock.lap("timing")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reference", required=True)
    p.add_argument("--runner-candidate", required=True)
    p.add_argument("--runner-module", action="append", default=[],
                   type=lambda s: tuple(s.split("=", 1)),
                   help="NAME=PATH of a prebuilt extension module, as the runner sees it")
    p.add_argument("--kernels", default="", type=lambda s: [k for k in s.split(",") if k])
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--tol-fp32", type=float, default=1e-2)
    p.add_argument("--tol-fp16", type=float, default=1e-2)
    p.add_argument("--tol-bf16", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=-1)
    p.add_argument("--timing", action="store_true")
    p.add_argument("--timing-trials", type=int, default=100)
    p.add_argument("--warmups", type=int, default=3)
    p.add_argument("--peak-gbps", type=float, default=4800.0)
    p.add_argument("--plausible-speedup", type=float, default=10.0)
    p.add_argument("--answer-seconds", type=float, default=600.0)
    p.add_argument("--device", default="cuda")
    p.add_argument("--nonce-file", default="")
    p.add_argument("--timing-turn", action="store_true")
    p.add_argument("--shape-variant", action="append", default=[], type=parse_shape_variant,
                   help="NAME=INT,...: module-level sizes of the reference for one more input "
                   "set")
    p.add_argument("--libraries", default=module_imports.DEFAULT_LIBRARY_POLICY,
                   choices=sorted(module_imports.LIBRARY_POLICIES),
                   help="the reward policy's rule on library calls (reward.libraries): "
                   "own_kernels_only refuses vendor libraries' imports and kernels, allowed "
                   "notes them (a library-calls finding)")
    p.add_argument("--spawn-runner", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def import_torch(device):
    import torch
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise EvalFailure("internalError", "no CUDA device visible to the judge")
        torch.empty(1, device=device)
    return torch


def read_job(stdin):
    """The job's arguments and its channel: the descriptor rides on the first byte."""
    data, fds, _, _ = socket.recv_fds(stdin, 65536, 1)
    while data and not data.endswith(b"\n"):
        more = stdin.recv(65536)
        if not more:
            break
        data += more
    argv = [a for a in data.decode("utf-8", "replace").rstrip("\n").split("\0") if a]
    return argv, (fds[0] if fds else -1)


def spawn_runner(args):
    """Tests only: runner.py as a plain child process, joined by a socketpair."""
    here, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runner.py")
    # Its stdout goes to our stderr: only this process's output holds the result.
    proc = subprocess.Popen([sys.executable, script, "--channel-fd", str(theirs.fileno()),
                             "--device", args.device], pass_fds=[theirs.fileno()],
                            stdout=sys.stderr.fileno())
    theirs.close()
    return here, proc


class JobStart:
    """How the job arrived: on the command line, or (--job-from-stdin) from the worker after
    torch was imported ahead of it; `torch` is then the module or the import's exception.
    next_job() takes the next one from the worker (--serve-jobs)."""

    def __init__(self, argv):
        self.argv, self.stdin, self.channel_fd = argv, None, -1
        self.torch, self.import_seconds = None, 0.0
        self.serve_jobs, self.served = 1, 0
        self.globals, self.setup_seconds = None, 0.0
        if argv[:1] != ["--job-from-stdin"]:
            return
        options = dict(zip(argv[1::2], argv[2::2]))
        self.serve_jobs = max(1, int(options.get("--serve-jobs", "1")))
        start = time.monotonic()
        try:
            self.torch = import_torch(options.get("--device", "cuda"))
        except Exception as e:  # noqa: BLE001 - reported with the job's nonce, by judge()
            self.torch = e
        self.import_seconds = round(time.monotonic() - start, 4)
        # What a judge that serves several jobs puts back between them, taken now, before it is
        # ready: its cost is part of the start, not of the first job.
        start = time.monotonic()
        if self.serve_jobs > 1 and not isinstance(self.torch, Exception):
            self.globals = TorchGlobals(self.torch)
        self.setup_seconds = round(time.monotonic() - start, 4)
        self.stdin = socket.socket(fileno=0)
        self.next_job()

    def next_job(self):
        """Says it is ready and reads the next job; False once the worker closed stdin."""
        if self.served:
            self.import_seconds = 0.0  # paid once, by the first job's phases
        sys.stdout.write(READY_LINE + "\n")
        sys.stdout.flush()
        self.argv, self.channel_fd = read_job(self.stdin)
        return bool(self.argv)


# A judge that has used this share of its CPU-time limit (RLIMIT_CPU, the sandbox's
# cpu_time_seconds) takes no more jobs: the limit counts the process's whole life, and a judge
# that ran into it mid-job would end without a result.
SERVE_CPU_SHARE = 0.5


class TorchGlobals:
    """The process-wide torch settings a reference may change (it is trusted task code, but may
    set a default dtype or TF32 for its own reasons): taken before the first job and put back
    after each, so that every job meets the settings of a fresh judge."""

    def __init__(self, torch):
        self.torch = torch
        self.values = {name: get() for name, (get, _) in self.settings().items()}

    # The cuDNN and cuBLAS flags through torch._C's own getters and setters, which only read and
    # write ATen's context: the torch.backends attributes are Python layers that newer torch
    # versions extend, and nothing of cuDNN itself is needed to put a flag back. A torch without
    # one of them has that flag left out.
    RAW_FLAGS = (("cudnn.enabled", "cudnn_enabled"), ("cudnn.benchmark", "cudnn_benchmark"),
                 ("cudnn.deterministic", "cudnn_deterministic"),
                 ("cudnn.allow_tf32", "cudnn_allow_tf32"),
                 ("cuda.matmul.allow_tf32", "cublas_allow_tf32"))

    def settings(self):
        torch = self.torch
        out = {
            "default_dtype": (torch.get_default_dtype, torch.set_default_dtype),
            "grad_enabled": (torch.is_grad_enabled, torch.set_grad_enabled),
            "num_threads": (torch.get_num_threads, torch.set_num_threads),
            "deterministic": (torch.are_deterministic_algorithms_enabled,
                              torch.use_deterministic_algorithms),
        }
        for name, flag in self.RAW_FLAGS:
            get = getattr(torch._C, "_get_" + flag, None)
            put = getattr(torch._C, "_set_" + flag, None)
            if get is not None and put is not None:
                out[name] = (get, put)
        return out

    def restore(self):
        settings = self.settings()
        for name, value in self.values.items():
            settings[name][1](value)


class Server:
    """What lets one judge process take job after job (--serve-jobs): the state it puts back
    between jobs, and whether it is sound to take another."""

    def __init__(self, job):
        self.job = job

    def serves_again(self, phases):
        """Puts the process back as it was before the job; True when it can take another. Each
        step's seconds go into `phases` (serve_restore, serve_gc, serve_cuda)."""
        job = self.job
        if job.globals is None or job.served >= job.serve_jobs:
            return False
        try:
            clock = PhaseClock(phases, time.monotonic())
            job.globals.restore()
            clock.lap("serve_restore")
            torch = job.torch
            gc.collect()
            clock.lap("serve_gc")
            if torch.cuda.is_initialized():
                # A device-side assert or an illegal address of the reference leaves the
                # context unusable: this raises then, and the judge ends instead.
                torch.cuda.synchronize()
                torch.ones(1, device="cuda").add_(1).item()
                torch.cuda.empty_cache()
                clock.lap("serve_cuda")
        except Exception as e:  # noqa: BLE001 - any doubt ends this judge; the next is fresh
            print("judge: ends after this job: %s: %s" % (type(e).__name__, e), file=sys.stderr)
            return False
        soft = resource.getrlimit(resource.RLIMIT_CPU)[0]
        if soft != resource.RLIM_INFINITY:
            used = resource.getrusage(resource.RUSAGE_SELF)
            if used.ru_utime + used.ru_stime > SERVE_CPU_SHARE * soft:
                return False
        return True


def drop_job_files(args):
    """The job's files in this judge's folder (the reference, its copies of the modules): a judge
    that serves on must not fill its folder, nor keep a job's files for the next."""
    for path in [args.reference] + [m[1] for m in args.runner_module]:
        try:
            os.unlink(path)
        except OSError:
            pass


def open_runner(args, job):
    """The channel to the runner, and its process where this judge started it."""
    if args.spawn_runner:
        return spawn_runner(args)
    if job.stdin is not None and job.channel_fd >= 0:
        return channel.open_channel(job.channel_fd), None
    return None, None


def read_nonce(args):
    if not args.nonce_file:
        return ""
    with open(args.nonce_file) as f:
        nonce = f.read().strip()
    os.unlink(args.nonce_file)
    return nonce


def empty_result():
    return {"failure": "internalError", "detail": "", "correct": False, "trials": 0,
            "max_abs_error": 0.0, "findings": [], "kernel_ms_mean": 0.0, "kernel_ms_std": 0.0,
            "reference_ms_mean": 0.0, "reference_ms_std": 0.0, "timing_trials": 0,
            "speedup": 0.0, "eval_seconds": 0.0, "phases": {}}


def judge(args, job, sock, result, clock, take_timing_turn, runner_gone=None):
    """Runs the evaluation through the runner, filling `result`; every failure lands in it."""
    torch, link = None, None
    try:
        if job.stdin is None:
            torch = import_torch(args.device)
            clock.lap("import")
        elif isinstance(job.torch, Exception):
            raise job.torch
        else:
            torch = job.torch
            result["phases"]["import"] = job.import_seconds
        if sock is None:
            raise EvalFailure("internalError", "no channel to the runner came with the job")
        link = RunnerLink(torch, sock, args.answer_seconds, runner_gone)
        try:
            hello, fds = channel.receive(sock, args.answer_seconds)
        except (EOFError, channel.ProtocolError) as e:
            # The runner sends this packet before it is given the candidate (the load request
            # comes after it): no candidate code has run, so its absence is ours, or the GPU's.
            raise EvalFailure("internalError", "the runner did not start: %s: %s" % (
                type(e).__name__, e))
        for fd in fds:
            os.close(fd)
        if "ready" not in hello:
            raise EvalFailure("internalError", "the runner did not start: %s" % str(hello)[:300])
        if hello.get("guard_error"):
            # Fails closed: without guards, a write past a tensor would go unseen.
            raise EvalFailure("internalError", "the candidate's process has no guard allocator: "
                              "%s" % str(hello["guard_error"])[:500])
        for key, check in (("probe_error", "launch-probe-unavailable"),
                           ("shared_poison_error", "shared-poison-unavailable")):
            if hello.get(key):
                result["findings"].append({"check": check, "detail": str(hello[key])[:500],
                                           "fatal": False})
        evaluate(torch, args, link, result, clock, take_timing_turn if args.timing_turn else None)
        result["failure"] = "none"
    except EvalFailure as e:
        result["failure"], result["detail"] = e.failure, e.detail
    except Exception as e:  # noqa: BLE001 - the judge's own process failed
        result["failure"], result["detail"] = own_failure(
            torch, e, link is not None and link.candidate_loaded)
    if result["failure"] != "none":
        result["correct"] = False


# The judge's own CUDA out-of-memory is the candidate's resourceLimit only while the judge itself
# holds at most this share of the GPU's memory: the rest was taken by other processes, and the
# candidate's is one of them. A judge holding more needs that much for the reference alone (the
# task is too large for its slot): the service's fault.
JUDGE_OWN_MEMORY_SHARE = 0.5


def is_cuda_oom(torch, e):
    """Whether exception e is CUDA running out of device memory (an allocation of PyTorch's, or
    the out-of-memory error of a launch or of a library's workspace)."""
    oom = getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None)
    return (oom is not None and isinstance(e, oom)) or (
        isinstance(e, RuntimeError) and any(s in str(e) for s in CUDA_OUT_OF_MEMORY_TEXTS))


def judge_memory(torch):
    """(bytes the judge's allocator holds, bytes of the device), or None when CUDA cannot say."""
    try:
        return torch.cuda.memory_reserved(), torch.cuda.get_device_properties(
            torch.cuda.current_device()).total_memory
    except Exception:  # noqa: BLE001 - a broken context answers nothing
        return None


def own_failure(torch, e, candidate_loaded):
    """(failure, detail) for exception e of the judge's own process, which is not an
    EvalFailure. A CUDA out-of-memory once candidate code may hold GPU memory, while the judge
    holds little itself, is the candidate's resourceLimit (docs/SECURITY.md says why a
    neighbour's hoarding reads the same); anything else is a fault of ours: internalError, its
    traceback on stderr (the verdict's log excerpt) and its innermost frame in the detail."""
    if torch is not None and candidate_loaded and is_cuda_oom(torch, e):
        memory = judge_memory(torch)
        if memory is not None and memory[0] <= JUDGE_OWN_MEMORY_SHARE * memory[1]:
            return "resourceLimit", (
                "the GPU had no memory left for the judge's checks while the candidate's "
                "process ran (the judge held %.2f of %.2f GiB): %s" % (
                    memory[0] / 2 ** 30, memory[1] / 2 ** 30, str(e)[:500]))
    traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
    frames = traceback.extract_tb(e.__traceback__)
    where = " (at %s:%d)" % (os.path.basename(frames[-1].filename), frames[-1].lineno) \
        if frames else ""
    return "internalError", "%s%s: %s" % (type(e).__name__, where, str(e)[:2000])


def close_runner(sock, proc):
    try:
        if sock is not None:
            channel.send(sock, {"op": "exit"})
    except OSError:
        pass
    if sock is not None:
        sock.close()
    if proc is not None:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main(argv):
    job = JobStart(argv)
    server = Server(job)
    while True:
        serves_again = judge_one_job(job, server)
        if not serves_again or not job.next_job():
            return 0


def judge_one_job(job, server):
    """Judges the job in `job.argv` and writes its result line; True when this process takes
    another job."""
    job.served += 1
    args = parse_args(job.argv)
    sock, proc = open_runner(args, job)
    nonce = read_nonce(args)
    out = sys.stdout.buffer

    def take_timing_turn():
        """Asks the worker for the GPU to itself; the reply (or the end of stdin) is the go."""
        out.write(("\n%s %s\n" % (TIMING_TURN_PREFIX, nonce)).encode("ascii", "replace"))
        out.flush()
        if job.stdin is not None:
            job.stdin.recv(64)

    def runner_gone():
        """Returns once every process of the runner has ended: the worker kills the runner's
        sandbox when asked (a line on stdout) and answers when it has reaped it; a runner this
        judge spawned (tests) is waited for here."""
        if proc is not None:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        elif job.stdin is not None:
            out.write(("\n%s %s\n" % (RUNNER_DONE_PREFIX, nonce)).encode("ascii", "replace"))
            out.flush()
            job.stdin.recv(64)  # "gone", or the end of stdin

    result = empty_result()
    start = time.monotonic()
    judge(args, job, sock, result, PhaseClock(result["phases"], start), take_timing_turn,
          runner_gone)
    close_runner(sock, proc)
    result["eval_seconds"] = time.monotonic() - start
    if isinstance(result["max_abs_error"], float) and not math.isfinite(result["max_abs_error"]):
        result["max_abs_error"] = -1.0
    result["judge_job"] = job.served
    if job.served == 1 and job.globals is not None:
        result["phases"]["serve_setup"] = job.setup_seconds
    result["serves_again"] = server.serves_again(result["phases"])
    if result["serves_again"]:
        drop_job_files(args)
    line = "\n%s %s %s\n" % (RESULT_PREFIX, nonce, json.dumps(result, ensure_ascii=False))
    out.write(line.encode("utf-8", "replace"))
    out.flush()
    return result["serves_again"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
