"""What correct means: the comparison of a candidate's outputs with the reference's (KernelBench
semantics, DICE's tolerance atol = rtol, made informative where the reference is tiny) and the
checks on their kinds (dtype, shape, device) and on constant or input-independent answers. Pure
functions of tensors the judge holds (judge.py); tested on the CPU (tests/reward/judge_test.py).
"""

import math

# Elements compared per step (bounded float64 temporaries for outputs of any size).
COMPARE_CHUNK = 16 << 20

class EvalFailure(Exception):
    """Ends the evaluation with a failure class (FailureClass name) and a detail."""

    def __init__(self, failure, detail):
        super().__init__(detail)
        self.failure = failure
        self.detail = detail


def tolerance_for(dtype, args):
    name = str(dtype)
    if "bfloat16" in name:
        return args.tol_bf16
    if "float16" in name or "half" in name:
        return args.tol_fp16
    return args.tol_fp32


def informative_atol(torch, want, tol):
    """The absolute tolerance at which comparing with `want` tells something: DICE's atol, unless
    every reference value is within it of zero (an all-zero output would pass: a softmax over a
    very wide row, values ~1e-6). Then atol is scaled to the reference's own magnitude:
    tol * max|want|. Returns (atol, scaled?)."""
    if not want.is_floating_point() and not want.is_complex():
        return tol, False
    finite = want[torch.isfinite(want)] if not want.is_complex() else want.abs()
    if finite.numel() == 0:
        return tol, False
    largest = float(finite.abs().max())
    if largest * (1 - tol) <= tol and largest > 0:
        return tol * largest, True
    return tol, False


def compare_tensor(torch, g, w, atol, rtol, where):
    """Compare two tensors of equal shape and dtype, chunk by chunk, on w's device. Raises
    EvalFailure(incorrect); returns the largest absolute difference (0 for exact types, NaN when
    every difference is NaN)."""
    g_flat, w_flat = g.detach().reshape(-1), w.detach().reshape(-1)
    exact = not w.is_floating_point() and not w.is_complex()
    wide = torch.complex128 if w.is_complex() else torch.float64
    bad = torch.zeros((), dtype=torch.int64, device=w.device)
    largest = torch.full((), -1.0, dtype=torch.float64, device=w.device)
    for start in range(0, w_flat.numel(), COMPARE_CHUNK):
        gc = g_flat[start:start + COMPARE_CHUNK].to(w.device)
        wc = w_flat[start:start + COMPARE_CHUNK]
        if exact:
            bad += (gc != wc).sum()
            continue
        g64, w64 = gc.to(wide), wc.to(wide)
        diff = (g64 - w64).abs()
        largest = torch.maximum(largest, diff.masked_fill(torch.isnan(diff), -1.0).max())
        bad += (~torch.isclose(g64, w64, atol=atol, rtol=rtol, equal_nan=True)).sum()
    bad, max_err = int(bad), float(largest)
    if exact:
        if bad:
            raise EvalFailure("incorrect", "%s: %d of %d values differ (exact type %s)" %
                              (where, bad, w.numel(), w.dtype))
        return 0.0
    if w.numel() > 0 and max_err < 0:
        max_err = float("nan")
    max_err = max(max_err, 0.0) if not math.isnan(max_err) else max_err
    if bad:
        raise EvalFailure("incorrect", "%s: %d of %d values outside tolerance (atol %g, rtol %g; "
                          "max abs error %g)" % (where, bad, w.numel(), atol, rtol, max_err))
    return max_err


def check_output_kinds(torch, got, want, got_devices):
    """Raise EvalFailure(shapeMismatch) unless every output has the reference's kind: a tensor of
    the same dtype, shape and device type (a half-precision output for a float32 reference is not
    the reference's output), or a plain value where the reference gives one."""
    if len(got) != len(want):
        raise EvalFailure("shapeMismatch", "the candidate returned %d outputs, the reference %d"
                          % (len(got), len(want)))
    for i, (g, w, device) in enumerate(zip(got, want, got_devices)):
        where = "output %d" % i if len(want) > 1 else "output"
        if not isinstance(w, torch.Tensor):
            continue
        if not isinstance(g, torch.Tensor):
            raise EvalFailure("shapeMismatch", "%s: a plain value instead of a tensor" % where)
        if g.dtype != w.dtype:
            raise EvalFailure("shapeMismatch", "%s: dtype %s, reference %s" %
                              (where, str(g.dtype).replace("torch.", ""),
                               str(w.dtype).replace("torch.", "")))
        if tuple(g.shape) != tuple(w.shape):
            raise EvalFailure("shapeMismatch", "%s: shape %s, reference %s" %
                              (where, tuple(g.shape), tuple(w.shape)))
        if device != w.device.type:
            raise EvalFailure("shapeMismatch", "%s: on %s, reference on %s" %
                              (where, device, w.device.type))


def compare_outputs(torch, got, want, args, scaled=None):
    """Values of outputs of the right kinds. Returns (largest absolute difference, [atol per
    output]). `scaled` collects the outputs whose atol was scaled (informative_atol)."""
    max_err, atols = 0.0, []
    for i, (g, w) in enumerate(zip(got, want)):
        where = "output %d" % i if len(want) > 1 else "output"
        if not isinstance(w, torch.Tensor):
            atols.append(args.tol_fp32)
            if isinstance(g, torch.Tensor):
                g = g.item() if g.numel() == 1 else None
            if isinstance(w, float) and isinstance(g, (int, float)) and not isinstance(g, bool):
                if not math.isclose(g, w, rel_tol=args.tol_fp32, abs_tol=args.tol_fp32):
                    raise EvalFailure("incorrect", "%s: %r vs reference %r" % (where, g, w))
            elif g != w or type(g) is bool != (type(w) is bool):
                raise EvalFailure("incorrect", "%s: %r vs reference %r" % (where, g, w))
            continue
        tol = tolerance_for(w.dtype, args)
        atol, was_scaled = informative_atol(torch, w, tol)
        if was_scaled and scaled is not None:
            scaled.add(i)
        atols.append(atol)
        err = compare_tensor(torch, g, w, atol, tol, where)
        max_err = float("nan") if math.isnan(err) else max(max_err, err)
    return max_err, atols


def output_atols(torch, want, args):
    """The atol compare_outputs uses for each output of `want` (the timing digests' bound)."""
    return [informative_atol(torch, w, tolerance_for(w.dtype, args))[0]
            if isinstance(w, torch.Tensor) else args.tol_fp32 for w in want]


def is_constant(torch, t):
    return isinstance(t, torch.Tensor) and t.numel() > 1 and (
        t.is_floating_point() or t.is_complex()) and bool((t == t.reshape(-1)[0]).all())


def same_tensors(torch, a, b):
    """Bit-for-bit equal lists of outputs (NaN equal to NaN)."""
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if not isinstance(x, torch.Tensor):
            if x != y:
                return False
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if not torch.equal(x.reshape(-1).view(torch.uint8) if x.numel() else x,
                           y.reshape(-1).view(torch.uint8) if y.numel() else y):
            return False
    return True


def same_values(torch, a, b):
    """Equal lists of constructor values (tensors bit for bit)."""
    return len(a) == len(b) and same_tensors(torch, a, b)
