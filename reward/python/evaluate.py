"""Evaluate one compiled candidate against its PyTorch reference (KernelBench semantics plus
anti-cheat checks). Runs in a fresh sandboxed process per candidate: a CUDA error poisons the
process's context, so nothing is reused across candidates.

Usage:
  python3 evaluate.py --reference ref.py --candidate cand.py --module NAME=PATH [--module ...]
                      [--kernels k1,k2] [--trials 1] [--tol-fp32 1e-2 --tol-fp16 1e-2
                      --tol-bf16 1e-2] [--seed 42] [--timing --timing-trials 100 --warmups 3]
                      [--device cuda] [--nonce-file nonce] [--launch-probe dice_launch_probe.so]
                      [--timing-turn]
  python3 evaluate.py --job-from-stdin [--device cuda] [--launch-probe dice_launch_probe.so]
      imports torch and creates the CUDA context first (and loads the launch probe, or else warms
      the profiler), prints "DICE_EVAL_READY", then reads the arguments above from stdin,
      NUL-separated, up to a newline or the end of input. The reward service starts a slot's next
      evaluation this way while the current one runs.

--timing-turn: once the candidate is correct, and before timing, print "DICE_TIMING_TURN
<nonce>" and wait for a line on stdin (or its end): the reward worker answers once the GPU is
free of other candidates' work (reward/gpu_turns.h), so the timed kernels run alone on it.

The kernel check sees the candidate's kernels through --launch-probe (reward/cupti/
launch_probe.cc: CUPTI callbacks on kernel launches) when given, else through torch's profiler;
a forward that launches a CUDA graph is checked with the profiler either way (a graph launch
names no kernel).

The candidate file is executed with torch.utils.cpp_extension.load_inline replaced by a shim
that returns the prebuilt module NAME (imported from PATH): nothing is compiled here.

Output: one line "DICE_EVAL_RESULT <nonce> <json>" on stdout. The nonce is read from
--nonce-file, which is deleted before the candidate runs, so candidate code cannot print a
result line of its own that the worker would accept. JSON keys:
  failure        none | importError | runtimeError | shapeMismatch | incorrect | antiCheat |
                 internalError (FailureClass names in schemas/verdict.capnp)
  detail         why, for the verdict's log excerpt
  correct, trials, max_abs_error
  findings       [{"check", "detail", "fatal"}] from the dynamic checks:
                   inputs-modified       the candidate wrote into its inputs (fatal)
                   kernel-outputs-differ two runs on equal inputs disagree beyond tolerance (fatal)
                   stale-output          after the trials, inputs from a seed the candidate has not
                                         seen give a wrong answer: an output cached across calls
                                         (fatal)
                   kernel-not-run        no __global__ kernel of the candidate ran (fatal)
                   torch-kernels-ran     (not fatal) PyTorch's own kernels ran in forward
                   profiler-unavailable  (not fatal) the kernel check could not run
                   launch-probe-unavailable (not fatal) the launch probe could not run; the
                                         profiler checked instead
                   constant-output       (not fatal) constant output, varying reference
                   faster-than-memory    output bytes / peak bandwidth > measured time (fatal)
  kernel_ms_mean, kernel_ms_std, reference_ms_mean, reference_ms_std, timing_trials, speedup
  phases         seconds spent in each phase reached: import (torch and, started ahead, the CUDA
                 context; not in eval_seconds when started ahead), load (reference,
                 candidate, models on the device), correctness, kernel_check (the profiler pass),
                 timing_turn (waiting for the GPU to itself), timing; where an evaluation's time
                 goes

Defences (REFERENCE.md section 5): the reference runs first, on clones of the inputs; the
inputs are checked unmodified after the candidate runs; the reference's GPU outputs are moved
off the GPU and, before the candidate runs, PyTorch's allocator cache is emptied and refilled
with a block of NaN that the candidate's allocations are carved from; kernel,
reference, kernel again on fresh copies; the profiler must see one of the candidate's own
kernels; timing synchronizes the whole device before the stop event, flushes L2 before each
run and gives each timed call its own device copy of one of two input sets; the torch
functions the harness needs are bound before the candidate is loaded. The candidate's outputs
are compared on the device, in chunks, against the reference's outputs on the host.
"""

import argparse
import importlib.util
import json
import math
import os
import re
import sys
import time
import traceback
import types
import warnings

RESULT_PREFIX = "DICE_EVAL_RESULT"
READY_LINE = "DICE_EVAL_READY"  # printed by --job-from-stdin once torch is imported
TIMING_TURN_PREFIX = "DICE_TIMING_TURN"  # with the nonce: --timing-turn's request


class LaunchProbeError(Exception):
    """The launch probe could not load or start (the kernel check then uses the profiler)."""


class LaunchProbe:
    """dice_launch_probe.so through ctypes: the names of the kernels launched while fn runs."""

    GRAPH_LAUNCH = "@graph-launch"  # the probe's line for a CUDA graph launch

    def __init__(self, path, attach=True):
        """Loads the library and, with `attach` (a CUDA device), takes CUPTI's one subscriber
        now, before candidate code can take it and leave the check without one."""
        import ctypes
        try:
            lib = ctypes.CDLL(os.path.abspath(path))
            self.attach, self.detach = lib.dice_launch_probe_attach, lib.dice_launch_probe_detach
            self.start, self.stop = lib.dice_launch_probe_start, lib.dice_launch_probe_stop
        except (OSError, AttributeError) as e:
            raise LaunchProbeError("cannot load %s: %s" % (path, e))
        self.stop.restype = ctypes.c_char_p
        if attach:
            rc = self.attach()
            if rc != 0:
                raise LaunchProbeError("CUPTI refused the subscription (error %d)" % rc)

    def launches(self, fn):
        """(kernel names, whether a CUDA graph was launched) of one call of fn."""
        rc = self.start()
        if rc != 0:
            raise LaunchProbeError("CUPTI refused to record launches (error %d)" % rc)
        try:
            fn()
        finally:
            text = self.stop() or b""
        names = [n for n in text.decode("utf-8", "replace").split("\n") if n]
        return [n for n in names if n != self.GRAPH_LAUNCH], self.GRAPH_LAUNCH in names


class EvalFailure(Exception):
    """Ends the evaluation with a failure class (FailureClass name) and a detail."""

    def __init__(self, failure, detail):
        super().__init__(detail)
        self.failure = failure
        self.detail = detail


# ---- pure helpers (no GPU needed; tested on CPU) -------------------------------------------

def tolerance_for(dtype_name, args):
    if "bfloat16" in dtype_name:
        return args.tol_bf16
    if "float16" in dtype_name or "half" in dtype_name:
        return args.tol_fp16
    return args.tol_fp32


def flatten_outputs(out):
    """A tensor, or a (nested) tuple/list of tensors and plain values -> flat list."""
    if isinstance(out, (tuple, list)):
        flat = []
        for item in out:
            flat.extend(flatten_outputs(item))
        return flat
    return [out]


# Elements compared per step: float64 copies of a chunk this size take 128 MiB per side, so an
# output of any size is compared in bounded memory (whole-tensor float64 copies of a 4 GiB output
# took 32 GiB of host memory and minutes of CPU).
COMPARE_CHUNK = 16 << 20


def tensor_bytes(torch, out):
    """Bytes of the tensors in an output (a tensor, or a tuple/list of them)."""
    return sum(t.numel() * t.element_size() for t in flatten_outputs(out)
               if isinstance(t, torch.Tensor))


def compare_tensor(torch, g, w, tol, where):
    """Compare two tensors of equal shape, chunk by chunk, on the device of `g` (the candidate's
    output; the reference's may be on the host). Raises EvalFailure(incorrect); returns the
    largest absolute difference (0 for exact types, NaN when every difference is NaN)."""
    device = g.device if g.device.type != "cpu" else w.device
    g_flat, w_flat = g.detach().reshape(-1), w.detach().reshape(-1)
    exact = not w.is_floating_point() and not w.is_complex()
    wide = torch.complex128 if (w.is_complex() or g.is_complex()) else torch.float64
    # Accumulated on the device and read once at the end, not three host syncs per chunk (each
    # a stall between chunks). Dev id 3497's 4 GiB output, 11 comparisons, H200: 4.6 s in all
    # with this; how much it was before was not measured apart from the host copies.
    bad = torch.zeros((), dtype=torch.int64, device=device)
    largest = torch.full((), -1.0, dtype=torch.float64, device=device)  # -1: no finite diff yet
    for start in range(0, w_flat.numel(), COMPARE_CHUNK):
        gc = g_flat[start:start + COMPARE_CHUNK].to(device)
        wc = w_flat[start:start + COMPARE_CHUNK].to(device)
        if exact:
            bad += (gc.to(wc.dtype) != wc).sum()
            continue
        g64, w64 = gc.to(wide), wc.to(wide)
        diff = (g64 - w64).abs()
        largest = torch.maximum(largest, diff.masked_fill(torch.isnan(diff), -1.0).max())
        bad += (~torch.isclose(g64, w64, atol=tol, rtol=tol, equal_nan=True)).sum()
    bad = int(bad)
    max_err = float(largest)
    any_finite = max_err >= 0
    max_err = max(max_err, 0.0)
    if exact:
        if bad:
            raise EvalFailure("incorrect", "%s: %d of %d values differ (exact type %s)" %
                              (where, bad, w.numel(), w.dtype))
        return 0.0
    if w.numel() > 0 and not any_finite:
        max_err = float("nan")
    if bad:
        raise EvalFailure("incorrect", "%s: %d of %d values outside tolerance %g (max abs "
                          "error %g)" % (where, bad, w.numel(), tol, max_err))
    return max_err


def compare_outputs(torch, got, want, args):
    """Raise EvalFailure(shapeMismatch|incorrect) unless got matches want. Returns the largest
    absolute difference seen (0 for exact types)."""
    got_flat, want_flat = flatten_outputs(got), flatten_outputs(want)
    if len(got_flat) != len(want_flat):
        raise EvalFailure("shapeMismatch", "the candidate returned %d outputs, the reference %d"
                          % (len(got_flat), len(want_flat)))
    max_err = 0.0
    for i, (g, w) in enumerate(zip(got_flat, want_flat)):
        where = "output %d" % i if len(want_flat) > 1 else "output"
        if not isinstance(w, torch.Tensor):
            if isinstance(g, torch.Tensor):
                g = g.item() if g.numel() == 1 else g
            if isinstance(w, float) and isinstance(g, (int, float)):
                tol = args.tol_fp32
                if not math.isclose(g, w, rel_tol=tol, abs_tol=tol):
                    raise EvalFailure("incorrect", "%s: %r vs reference %r" % (where, g, w))
            elif g != w:
                raise EvalFailure("incorrect", "%s: %r vs reference %r" % (where, g, w))
            continue
        if not isinstance(g, torch.Tensor):
            raise EvalFailure("shapeMismatch", "%s: a %s instead of a tensor" %
                              (where, type(g).__name__))
        if tuple(g.shape) != tuple(w.shape):
            raise EvalFailure("shapeMismatch", "%s: shape %s, reference %s" %
                              (where, tuple(g.shape), tuple(w.shape)))
        err = compare_tensor(torch, g, w, tolerance_for(str(w.dtype), args), where)
        max_err = max(max_err, err) if not math.isnan(err) else float("nan")
    return max_err


def same_values(torch, a, b):
    """Bit-for-bit equality of two input tensors (NaN equal to NaN)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool(torch.equal(a, b))


def kernel_names_ran(event_names, kernels):
    """Which of the candidate's __global__ names appear in the profiler's kernel names."""
    found = set()
    for name in event_names:
        for k in kernels:
            if re.search(r"(^|[^A-Za-z0-9_])%s([^A-Za-z0-9_]|$)" % re.escape(k), name):
                found.add(k)
    return found


def mean_std(values):
    if not values:
        return 0.0, 0.0
    m = sum(values) / len(values)
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / len(values))


def is_constant(torch, t):
    return isinstance(t, torch.Tensor) and t.numel() > 1 and t.is_floating_point() and \
        bool((t == t.flatten()[0]).all())


# ---- loading -------------------------------------------------------------------------------

def import_module_from(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise EvalFailure("importError", "cannot import module %s from %s" % (name, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def exec_source(name, source, filename):
    module = types.ModuleType(name)
    module.__file__ = filename
    sys.modules[name] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def load_candidate(cpp_extension, source, prebuilt):
    """Exec the candidate with load_inline answering from the prebuilt modules."""
    def load_inline_shim(name, *args, **kwargs):
        if name not in prebuilt:
            raise EvalFailure("importError", "load_inline(name=%r): no prebuilt module" % name)
        return prebuilt[name]

    def refuse(*args, **kwargs):
        raise EvalFailure("importError", "only load_inline is supported")

    saved = (cpp_extension.load_inline, cpp_extension.load)
    cpp_extension.load_inline, cpp_extension.load = load_inline_shim, refuse
    try:
        return exec_source("candidate", source, "candidate.py")
    finally:
        cpp_extension.load_inline, cpp_extension.load = saved


# ---- the evaluation ------------------------------------------------------------------------

class Harness:
    def __init__(self, torch, args, launch_probe=None):
        self.torch = torch
        self.args = args
        # A LaunchProbe, a LaunchProbeError (it did not load: noted here, and the kernel check
        # uses the profiler) or None (the profiler).
        self.launch_probe = launch_probe
        self.device = torch.device(args.device)
        self.cuda = self.device.type == "cuda"
        self.findings = []
        # Bound before any candidate code runs.
        self.clone = torch.Tensor.clone
        self.manual_seed = torch.manual_seed
        self.randint = torch.randint
        self.synchronize = torch.cuda.synchronize if self.cuda else (lambda *a: None)
        # Seconds inside check_correctness by what they went to, for the phases in the log.
        self.spent = {"inputs": 0.0, "to_host": 0.0, "compare": 0.0}
        if isinstance(launch_probe, LaunchProbeError):
            self.finding("launch-probe-unavailable", str(launch_probe), False)

    def timed(self, what, fn, *args):
        start = time.monotonic()
        try:
            return fn(*args)
        finally:
            self.spent[what] += time.monotonic() - start

    def finding(self, check, detail, fatal):
        self.findings.append({"check": check, "detail": detail, "fatal": fatal})

    def make_inputs(self, get_inputs, seed):
        self.manual_seed(seed)
        inputs = get_inputs()
        # Every tensor goes to the device with its own dtype: integer inputs (indices, masks)
        # stay integer.
        return [x.to(self.device) if isinstance(x, self.torch.Tensor) else x for x in inputs]

    def cloned(self, inputs):
        return [self.clone(x) if isinstance(x, self.torch.Tensor) else x for x in inputs]

    def to_host(self, out):
        """A host copy of a reference output, in pinned memory when it is on a GPU: the pageable
        copy of dev id 3497's 4 GiB output took 3.2 s each time (19 s of its 28 s of
        correctness on the H200), most of it faulting in fresh pages; torch caches freed pinned
        blocks, so the next trial reuses them. Pinned host memory stays out of a kernel's reach
        unless it is handed the address, which only the harness has. Refused (no pinned memory
        left): a pageable copy."""
        if isinstance(out, (tuple, list)):
            return type(out)(self.to_host(o) for o in out)
        if isinstance(out, self.torch.Tensor):
            src = out.detach()
            if src.is_cuda:
                try:
                    pinned = self.torch.empty(src.shape, dtype=src.dtype, pin_memory=True)
                    pinned.copy_(src)
                    return pinned
                except RuntimeError:
                    pass
            return src.to("cpu", copy=True)
        return out

    def snapshot(self, out):
        """A copy on the same device: an output the candidate keeps and rewrites on its next call
        (one buffer for every call) must not change under the comparison with that call."""
        if isinstance(out, (tuple, list)):
            return type(out)(self.snapshot(o) for o in out)
        if isinstance(out, self.torch.Tensor):
            return self.clone(out.detach())
        return out

    def poison_free_memory(self, at_least_bytes=0):
        """Overwrite memory freed by earlier runs so that a candidate reading uninitialised
        memory finds NaN, neither the reference's answer nor zeros.

        The cache is emptied first (its blocks may hold the reference's outputs), then a filler
        of NaN is allocated and freed *into* PyTorch's cache, where it stays: the candidate's
        next allocations (torch.empty for its outputs) are carved out of it. Handed back to the
        driver instead, the memory came back zeroed on the next cudaMalloc, and an output the
        kernel never wrote read as 0: within DICE's atol of 1e-2 for outputs near 1e-3 (dev id
        2616, a kernel that writes only its first row, passed that way)."""
        if not self.cuda:
            return
        torch = self.torch
        self.synchronize()
        torch.cuda.empty_cache()
        free, _ = torch.cuda.mem_get_info(self.device)
        wanted = max(self.args.poison_mb << 20, 2 * at_least_bytes)
        size = min(int(free * 0.5), wanted) // 4 * 4
        if size > 0:
            filler = torch.empty(size // 4, dtype=torch.float32, device=self.device)
            filler.fill_(float("nan"))
            self.synchronize()
            del filler

    def run(self, model, inputs):
        with self.torch.no_grad():
            out = model(*inputs)
        self.synchronize()
        return out

    def check_correctness(self, ref_model, new_model, get_inputs):
        torch, args = self.torch, self.args
        max_err = 0.0
        for trial, seed in enumerate(self.trial_seeds()):
            pristine = self.timed("inputs", self.make_inputs, get_inputs, seed)
            # Reference first, on clones; its result leaves the GPU before the candidate runs.
            want = self.timed("to_host", self.to_host, self.run(ref_model, self.cloned(pristine)))
            self.poison_free_memory(tensor_bytes(self.torch, want))
            inputs = self.cloned(pristine)
            try:
                # The candidate's outputs stay on the device: compared there, chunk by chunk.
                got = self.run(new_model, inputs)
            except EvalFailure:
                raise
            except Exception as e:  # noqa: BLE001 - any error in candidate code
                raise EvalFailure("runtimeError", "forward raised %s: %s" %
                                  (type(e).__name__, str(e)[:2000]))
            for i, (a, b) in enumerate(zip(inputs, pristine)):
                if isinstance(b, torch.Tensor) and not same_values(torch, a, b):
                    self.finding("inputs-modified", "trial %d: input %d changed by forward" %
                                 (trial, i), True)
                    raise EvalFailure("antiCheat", "the candidate modified input %d" % i)
            max_err = max(max_err, self.timed("compare", compare_outputs, torch, got, want, args))
            got = self.snapshot(got)
            # Kernel, reference, kernel: a second run on fresh copies must agree with the first.
            self.run(ref_model, self.cloned(pristine))
            self.poison_free_memory(tensor_bytes(self.torch, want))
            again = self.run(new_model, self.cloned(pristine))
            try:
                self.timed("compare", compare_outputs, torch, again, got, args)
            except EvalFailure as e:
                self.finding("kernel-outputs-differ", "trial %d: %s" % (trial, e.detail), True)
                raise EvalFailure("antiCheat", "two runs on equal inputs disagree: " + e.detail)
            for g, w in zip(flatten_outputs(got), flatten_outputs(want)):
                if is_constant(torch, g) and not is_constant(torch, w):
                    self.finding("constant-output", "trial %d: the output is one constant value"
                                 % trial, False)
            del got, again
        # One more call on inputs from an unused seed: with one trial, a candidate that caches its
        # first output (keyed by shape or pointer) and answers later calls from the cache would
        # otherwise pass, since every other run above reuses that trial's inputs.
        fresh = self.timed("inputs", self.make_inputs, get_inputs, args.seed + 7919)
        want = self.timed("to_host", self.to_host, self.run(ref_model, self.cloned(fresh)))
        self.poison_free_memory(tensor_bytes(self.torch, want))
        got = self.run(new_model, self.cloned(fresh))
        try:
            self.timed("compare", compare_outputs, torch, got, want, args)
        except EvalFailure as e:
            self.finding("stale-output", "fresh inputs: " + e.detail, True)
            raise EvalFailure("antiCheat", "wrong on fresh inputs after passing the trials "
                              "(an output cached across calls?): " + e.detail)
        # Kept for the kernel check: get_inputs() on the host is seconds for large inputs.
        self.spare_inputs = fresh
        return max_err

    def trial_seeds(self):
        """The input seed of each correctness trial, drawn as KernelBench draws them (from the
        CPU generator seeded with --seed), so both harnesses test the same inputs."""
        self.manual_seed(self.args.seed)
        return [int(self.randint(0, 2 ** 32 - 1, (1,)).item()) for _ in range(self.args.trials)]

    def check_kernels_ran(self, new_model, get_inputs):
        if not self.cuda or not self.args.kernels:
            return
        spare = getattr(self, "spare_inputs", None)
        base = spare if spare is not None else self.make_inputs(get_inputs, self.args.seed)
        names = self.kernels_launched(new_model, base)
        if names is None:
            if isinstance(self.launch_probe, LaunchProbe):
                self.launch_probe.detach()  # the profiler needs CUPTI's subscriber
            names = self.kernels_profiled(new_model, self.cloned(base))
        if names is None:
            return
        ours = kernel_names_ran(names, self.args.kernels)
        if not ours:
            self.finding("kernel-not-run", "none of %s ran during forward (saw: %s)" %
                         (", ".join(self.args.kernels), ", ".join(sorted(set(names)))[:500]),
                         True)
            raise EvalFailure("antiCheat", "no kernel of the candidate ran during forward")
        others = sorted({n for n in names if not kernel_names_ran([n], self.args.kernels)})
        if others:
            self.finding("torch-kernels-ran", "other kernels in forward: " +
                         "; ".join(others)[:500], False)

    def kernels_launched(self, new_model, base):
        """Names of the kernels one forward launched, by the launch probe; None when there is
        no probe, it cannot run (noted), or a CUDA graph launch hides what ran."""
        probe = self.launch_probe
        if not isinstance(probe, LaunchProbe):
            return None
        inputs = self.cloned(base)
        try:
            names, graph = probe.launches(lambda: self.run(new_model, inputs))
        except LaunchProbeError as e:
            self.finding("launch-probe-unavailable", str(e), False)
            return None
        if graph and not kernel_names_ran(names, self.args.kernels):
            return None
        return names

    def kernels_profiled(self, new_model, inputs):
        """Names of the CUDA kernels the profiler saw in one forward; None when it cannot run
        (noted)."""
        try:
            from torch.profiler import profile, ProfilerActivity
            # Its warnings (a second session's "Profiler clears events...") would fill the log
            # excerpt of a failed verdict.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    self.run(new_model, inputs)
                names = [e.name for e in prof.events()
                         if str(getattr(e, "device_type", "")).endswith("CUDA")]
        except Exception as e:  # noqa: BLE001 - CUPTI missing or busy
            self.finding("profiler-unavailable", "%s: %s" % (type(e).__name__, e), False)
            return None
        return names

    def time_model(self, model, get_inputs):
        torch, args = self.torch, self.args
        flush = torch.empty(256 << 20, dtype=torch.uint8, device=self.device)
        # Two input sets, made once (get_inputs runs on the CPU and can take a second for large
        # inputs: once per timed call it dominated the evaluation); every call gets its own
        # device copy of one of them, alternating.
        sets = [self.make_inputs(get_inputs, args.seed + 2000 + k) for k in range(2)]
        for w in range(args.warmups):
            self.run(model, self.cloned(sets[w % 2]))
        times = []
        for t in range(args.timing_trials + 1):
            inputs = self.cloned(sets[t % 2])
            flush.zero_()
            self.synchronize()
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            with torch.no_grad():
                out = model(*inputs)
            torch.cuda.synchronize()  # the whole device: work on any stream counts
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
            del out
        return times[1:]  # the first timed run is discarded

    def output_bytes(self, model, get_inputs):
        return tensor_bytes(self.torch, self.run(model, self.make_inputs(get_inputs, self.args.seed)))


class PhaseClock:
    """Seconds per phase into result["phases"], each phase ending where the next starts."""

    def __init__(self, phases, start):
        self.phases, self.last = phases, start

    def lap(self, name):
        now = time.monotonic()
        self.phases[name] = round(now - self.last, 4)
        self.last = now


def evaluate(torch, cpp_extension, args, result, clock, launch_probe=None, timing_turn=None):
    harness = Harness(torch, args, launch_probe)
    result["findings"] = harness.findings
    with open(args.reference, encoding="utf-8") as f:
        reference_source = f.read()
    with open(args.candidate, encoding="utf-8") as f:
        candidate_source = f.read()
    try:
        ref = exec_source("reference", reference_source, "reference.py")
    except Exception as e:  # noqa: BLE001
        raise EvalFailure("internalError", "the reference does not load: %s: %s" %
                          (type(e).__name__, e))
    try:
        prebuilt = {name: import_module_from(name, path) for name, path in args.module}
        cand = load_candidate(cpp_extension, candidate_source, prebuilt)
        model_new_cls = getattr(cand, "ModelNew")
    except EvalFailure:
        raise
    except Exception as e:  # noqa: BLE001
        raise EvalFailure("importError", "loading the candidate: %s: %s\n%s" % (
            type(e).__name__, str(e)[:1000], traceback.format_exc(limit=3)[-1500:]))

    init_inputs = ref.get_init_inputs()
    harness.manual_seed(args.seed)
    ref_model = ref.Model(*init_inputs).to(harness.device)
    try:
        harness.manual_seed(args.seed)
        new_model = model_new_cls(*init_inputs).to(harness.device)
    except Exception as e:  # noqa: BLE001
        raise EvalFailure("importError", "constructing ModelNew: %s: %s" %
                          (type(e).__name__, str(e)[:1000]))

    clock.lap("load")
    result["max_abs_error"] = harness.check_correctness(ref_model, new_model, ref.get_inputs)
    result["trials"] = args.trials
    clock.lap("correctness")
    for what, seconds in harness.spent.items():
        result["phases"]["correctness_" + what] = round(seconds, 4)
    harness.check_kernels_ran(new_model, ref.get_inputs)
    clock.lap("kernel_check")
    result["correct"] = True
    if args.timing and timing_turn is not None:
        timing_turn()  # on the CPU too, where nothing is timed: the worker's side is the same
        clock.lap("timing_turn")
    if args.timing and harness.cuda:
        kernel = harness.time_model(new_model, ref.get_inputs)
        reference = harness.time_model(ref_model, ref.get_inputs)
        result["kernel_ms_mean"], result["kernel_ms_std"] = mean_std(kernel)
        result["reference_ms_mean"], result["reference_ms_std"] = mean_std(reference)
        result["timing_trials"] = len(kernel)
        if result["kernel_ms_mean"] > 0:
            result["speedup"] = result["reference_ms_mean"] / result["kernel_ms_mean"]
        # Writing the outputs once at peak bandwidth is a floor no honest kernel beats.
        floor_ms = harness.output_bytes(new_model, ref.get_inputs) / (args.peak_gbps * 1e6)
        if result["kernel_ms_mean"] < 0.5 * floor_ms:
            harness.finding("faster-than-memory", "%.4f ms for outputs that take %.4f ms to "
                            "write at %g GB/s" % (result["kernel_ms_mean"], floor_ms,
                                                  args.peak_gbps), True)
            raise EvalFailure("antiCheat", "timed faster than writing its outputs allows")
        clock.lap("timing")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reference", required=True)
    p.add_argument("--candidate", required=True)
    p.add_argument("--module", action="append", default=[], type=lambda s: tuple(s.split("=", 1)),
                   help="NAME=PATH of a prebuilt extension module")
    p.add_argument("--kernels", default="", type=lambda s: [k for k in s.split(",") if k])
    p.add_argument("--trials", type=int, default=1)
    p.add_argument("--tol-fp32", type=float, default=1e-2)
    p.add_argument("--tol-fp16", type=float, default=1e-2)
    p.add_argument("--tol-bf16", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--timing", action="store_true")
    p.add_argument("--timing-trials", type=int, default=100)
    p.add_argument("--warmups", type=int, default=3)
    p.add_argument("--peak-gbps", type=float, default=4800.0,
                   help="peak memory bandwidth for the physical-bound check (H200: ~4800)")
    p.add_argument("--poison-mb", type=int, default=1024)
    p.add_argument("--device", default="cuda")
    p.add_argument("--nonce-file", default="")
    p.add_argument("--launch-probe", default="",
                   help="dice_launch_probe.so for the kernel check (default: the profiler)")
    p.add_argument("--timing-turn", action="store_true",
                   help="wait for the worker's go (a line on stdin) before timing")
    return p.parse_args(argv)


def import_torch(device):
    """torch and its extension loader; with a CUDA device, also the context (the costly part of
    a process's first CUDA call), so a process started ahead has it before its work arrives."""
    import torch
    import torch.utils.cpp_extension as cpp_extension
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise EvalFailure("internalError", "no CUDA device visible to the evaluator")
        torch.empty(1, device=device)
    return torch, cpp_extension


def warm_profiler(torch, device):
    """One tiny profiled op: the profiler's first session (loading CUPTI, setting up its
    activity buffers) costs seconds, which the kernel check would otherwise pay per candidate.
    Errors are left for the kernel check to report."""
    try:
        from torch.profiler import profile, ProfilerActivity
        with warnings.catch_warnings():  # "Profiler clears events at the end of each cycle"
            warnings.simplefilter("ignore")
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                torch.ones(1, device=device).add_(1)
                torch.cuda.synchronize(device)
            prof.events()
    except Exception:  # noqa: BLE001
        pass


def load_launch_probe(path, device):
    """A LaunchProbe for `path` (attached on a CUDA device), or the LaunchProbeError that the
    harness will note."""
    try:
        return LaunchProbe(path, attach=device.startswith("cuda"))
    except LaunchProbeError as e:
        return e


def wait_for_job(argv):
    """--job-from-stdin [--device D] [--launch-probe F]: imports first (and loads the probe, or
    else warms the profiler), then returns the arguments from stdin."""
    options = dict(zip(argv[1::2], argv[2::2]))
    device = options.get("--device", "cuda")
    probe_path = options.get("--launch-probe", "")
    start = time.monotonic()
    try:
        torch, cpp_extension = import_torch(device)
        probe = load_launch_probe(probe_path, device) if probe_path else None
        if device.startswith("cuda") and not isinstance(probe, LaunchProbe):
            warm_profiler(torch, device)
        warm = (torch, cpp_extension, probe)
    except Exception as e:  # noqa: BLE001 - reported with the job's nonce, below
        warm = e
    import_seconds = round(time.monotonic() - start, 4)
    sys.stdout.write(READY_LINE + "\n")
    sys.stdout.flush()
    job = sys.stdin.buffer.readline().decode("utf-8", "replace").rstrip("\n")
    return [a for a in job.split("\0") if a], warm, import_seconds


def main(argv):
    warm, import_seconds = None, 0.0
    if argv[:1] == ["--job-from-stdin"]:
        argv, warm, import_seconds = wait_for_job(argv)
    args = parse_args(argv)
    nonce = ""
    if args.nonce_file:
        with open(args.nonce_file) as f:
            nonce = f.read().strip()
        os.unlink(args.nonce_file)
    out = sys.stdout.buffer  # bound before the candidate can replace sys.stdout
    stdin = sys.stdin.buffer  # likewise (and the buffer the job was read through)

    def take_timing_turn():
        """Asks the worker for the GPU to itself; the reply (or the end of stdin) is the go."""
        # After a newline of its own: the worker reads the line only at a line's start, and the
        # candidate may have left its own output without one.
        out.write(("\n%s %s\n" % (TIMING_TURN_PREFIX, nonce)).encode("ascii", "replace"))
        out.flush()
        stdin.readline()

    result = {"failure": "internalError", "detail": "", "correct": False, "trials": 0,
              "max_abs_error": 0.0, "findings": [], "kernel_ms_mean": 0.0, "kernel_ms_std": 0.0,
              "reference_ms_mean": 0.0, "reference_ms_std": 0.0, "timing_trials": 0,
              "speedup": 0.0, "eval_seconds": 0.0, "phases": {}}
    start = time.monotonic()
    clock = PhaseClock(result["phases"], start)
    try:
        if warm is None:
            torch, cpp_extension = import_torch(args.device)
            probe = (load_launch_probe(args.launch_probe, args.device) if args.launch_probe
                     else None)
            clock.lap("import")
        elif isinstance(warm, Exception):
            raise warm
        else:
            torch, cpp_extension, probe = warm
            result["phases"]["import"] = import_seconds
        evaluate(torch, cpp_extension, args, result, clock, probe,
                 take_timing_turn if args.timing_turn else None)
        result["failure"] = "none"
    except EvalFailure as e:
        result["failure"], result["detail"] = e.failure, e.detail
    except Exception as e:  # noqa: BLE001 - CUDA errors surface here as RuntimeError
        result["failure"] = "runtimeError"
        result["detail"] = "%s: %s" % (type(e).__name__, str(e)[:2000])
    result["eval_seconds"] = time.monotonic() - start
    for key in ("max_abs_error",):
        if isinstance(result[key], float) and not math.isfinite(result[key]):
            result[key] = -1.0
    line = "\n%s %s %s\n" % (RESULT_PREFIX, nonce, json.dumps(result, ensure_ascii=False))
    out.write(line.encode("utf-8", "replace"))
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
