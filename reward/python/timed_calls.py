"""The timing loop, one code for both sides: the judge times the reference with it in its own
process, the runner times the candidate with it in the candidate's process. The same inputs,
flushes and synchronisation on both sides make the two times comparable.

Every timed call gets input contents no call has had before (fresh_inputs): a cache keyed on
input contents (or pointers, or shapes) misses on every call, so replaying answers saves
nothing. After each call's stop event, outside the timed window, the output is reduced to a
digest (output_digest: a sum under pseudo-random signs); the judge recomputes the reference's
digest for the same call and checks the runner's against it, so a call that returned a stale or
unfinished output is caught even though the judge never sees that output itself. The check is
statistical: an output within tolerance passes (six standard deviations), one whose elements are
off by several times the tolerance on average fails.

The runner's times are the candidate's own claim (its process could patch anything in it): the
judge also clocks the runner's whole timing request from outside and refuses a claim that the
outside clock cannot account for (judge.py, check_timing_claim).
"""

import math

# Elements reduced at a time (bounded float64 temporaries for outputs of any size).
DIGEST_CHUNK = 16 << 20
# How many standard deviations of an honest output's digest difference a call may show: the
# honest difference is a sum of errors, each within tolerance, under signs they do not depend on.
DIGEST_SIGMAS = 6.0


# How far call k's floating inputs are drawn toward their centre: a share of
# CONTRACTION_MAX * frac((k + 1) * GOLDEN) of each value's distance to it. The fractions of
# multiples of the golden ratio are distinct for distinct integers (it is irrational), so every
# call's share differs from every other call's, warm-ups and WARM_UP_FIRST's calls included; k = -1
# (the first warm-up) gets 0: the base itself.
CONTRACTION_MAX = 0.125
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def contraction(k):
    """Call k's share, in [0, CONTRACTION_MAX)."""
    return CONTRACTION_MAX * (((k + 1) * GOLDEN) % 1.0)


def is_ordered(torch, x, dim):
    """Whether x is sorted along dim (ascending or descending in every slice, ties allowed):
    offsets, lengths sorted for packing, bucket boundaries, a causal mask's columns. A roll would
    break that order."""
    n = x.shape[dim]
    if n < 2:
        return True
    if x.is_complex():
        return False  # complex numbers have no order
    later, earlier = x.narrow(dim, 1, n - 1), x.narrow(dim, 0, n - 1)
    if later.dtype == torch.bool:
        later, earlier = later.to(torch.uint8), earlier.to(torch.uint8)
    return bool((later >= earlier).all()) or bool((later <= earlier).all())


def rolled(torch, x, k):
    """x rolled by k + 1 along its largest dimension, unless x is sorted along it. A roll moves
    values and never changes one: index ranges, dtypes, masks' counts per slice and every value's
    sign stay those get_inputs made. Tensors of one shape are rolled alike, so elementwise
    relations between them (lengths to lengths, values to their indices) hold too."""
    if x.dim() == 0:
        return x
    dim = max(range(x.dim()), key=lambda d: x.shape[d])
    shift = (k + 1) % x.shape[dim]
    if shift == 0 or is_ordered(torch, x, dim):
        return x
    return torch.roll(x, shifts=shift, dims=dim)


def contracted(torch, x, k):
    """Floating x drawn toward its centre by contraction(k): toward 0 when its values span 0
    (lo <= 0 <= hi), else toward the middle of [lo, hi]. Every value stays within [lo, hi], the
    range get_inputs drew (so inside any interval it draws from: positive for log or sqrt, [0, 1]
    for probabilities, [-1, 1] for acos, [0, n) for float indices), keeps its sign and its order
    among the others, and zeros stay zero where values span 0. A tensor with a NaN or an infinity
    is left as it is."""
    share = contraction(k)
    if share == 0.0:
        return x
    lo, hi = float(x.min()), float(x.max())  # NaN where x holds one
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return x
    centre = 0.0 if lo <= 0.0 <= hi else (lo + hi) / 2
    wide = x if x.dtype in (torch.float32, torch.float64) else x.to(torch.float32)
    y = wide.mul(1.0 - share)
    if centre != 0.0:
        y.add_(centre * share)
    # Clamped where rounding stepped past an end; lo and hi are values of x's dtype, so rounding
    # back to it keeps y inside them.
    return y.clamp_(lo, hi).to(x.dtype)


def fresh_inputs(torch, base, k):
    """Call k's inputs, made from the base set (get_inputs' own values) so that their contents
    differ from call to call and from the base, yet stay in the domain get_inputs made:
    - a tensor is rolled by k + 1 along its largest dimension (rolled: values move, none
      changes; a tensor sorted along that dimension is not rolled);
    - a floating tensor is also drawn toward its centre by contraction(k) (contracted: every
      value stays inside the range the base spans, with its sign and order);
    - integer, bool and complex tensors keep their values (indices, masks, sizes, counts);
      non-tensor inputs are passed as they are."""
    out = []
    for x in base:
        if not isinstance(x, torch.Tensor) or x.numel() == 0:
            out.append(x)
            continue
        y = rolled(torch, x, k)
        if y.is_floating_point():
            y = contracted(torch, y, k)
        out.append(y.contiguous() if y is not x else x.clone())
    return out


def flat_outputs(out):
    if isinstance(out, (tuple, list)):
        flat = []
        for item in out:
            flat.extend(flat_outputs(item))
        return flat
    return [out]


def digest_signs(torch, start, count, device):
    """+1 or -1 for elements start..start+count, from a multiplicative hash of the index."""
    index = torch.arange(start, start + count, device=device, dtype=torch.int64)
    bit = ((index * 2654435761) % (1 << 32)) // (1 << 16) % 2
    return bit.to(torch.float64) * 2 - 1


def output_digest(torch, out):
    """[[signed sum, sum of |x|, sum of x^2, numel] per output], the signs from digest_signs. A
    plain value v gives [v, |v|, v^2, 1]. NaN stays NaN."""
    digests = []
    for t in flat_outputs(out):
        if not isinstance(t, torch.Tensor):
            v = float(t) if isinstance(t, (int, float, bool)) else float("nan")
            digests.append([v, abs(v), v * v, 1])
            continue
        flat = t.detach().reshape(-1)
        signed = torch.zeros((), dtype=torch.float64, device=flat.device)
        absolute = torch.zeros((), dtype=torch.float64, device=flat.device)
        square = torch.zeros((), dtype=torch.float64, device=flat.device)
        for start in range(0, flat.numel(), DIGEST_CHUNK):
            chunk = flat[start:start + DIGEST_CHUNK]
            chunk = (chunk.abs() if chunk.is_complex() else chunk).to(torch.float64)
            signed = signed + (chunk * digest_signs(torch, start, chunk.numel(),
                                                    flat.device)).sum()
            absolute = absolute + chunk.abs().sum()
            square = square + (chunk * chunk).sum()
        digests.append([signed.item(), absolute.item(), square.item(), flat.numel()])
    return digests


def digests_agree(got, want, atol, rtol):
    """Whether a call's digests agree with the reference's. Elementwise closeness allows each
    element an error e_i within atol + rtol |w_i|; under the pseudo-random signs the signed sums'
    difference of an honest output then stays within DIGEST_SIGMAS standard deviations,
    sqrt(sum (atol + rtol |w_i|)^2), while an output of other inputs (stale, cached) or of
    nothing differs by about the root of its squared differences. `atol` may be a list, one per
    output (the correctness check's tolerance for it)."""
    if not isinstance(got, list) or len(got) != len(want):
        return False
    for i, (g, w) in enumerate(zip(got, want)):
        if not isinstance(g, list) or len(g) != 4 or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in g):
            return False
        a = atol[i] if isinstance(atol, list) else atol
        if math.isnan(w[0]) or math.isnan(g[0]):
            if not (math.isnan(w[0]) and math.isnan(g[0])):
                return False
            continue
        if math.isinf(w[0]) or math.isinf(g[0]):
            if g[0] != w[0]:
                return False
            continue
        n, sum_abs, sum_sq = w[3], w[1], w[2]
        spread = math.sqrt(max(0.0, n * a * a + 2 * a * rtol * sum_abs + rtol * rtol * sum_sq))
        if abs(g[0] - w[0]) > DIGEST_SIGMAS * spread + 1e-9 * (1 + sum_abs):
            return False
    return True


class Timers:
    """The CUDA timing functions, bound once (the runner binds them before candidate code loads):
    a candidate that later replaces torch.cuda.Event's methods or torch.cuda.synchronize in
    Python changes nothing here."""

    def __init__(self, torch):
        event = torch.cuda.Event
        self.event, self.record = event, event.record
        self.elapsed, self.wait = event.elapsed_time, event.synchronize
        self.synchronize = torch.cuda.synchronize


BOUND = []  # [Timers] once bind() ran


def bind(torch):
    if not BOUND:
        BOUND.append(Timers(torch))


def time_calls(torch, model, base_sets, calls, warmups, device, first=0):
    """(milliseconds per call, digest per call). Call k (from `first`) runs on
    fresh_inputs(base_sets[k % n], k).
    Per call: fresh inputs made, L2 flushed (a 256 MiB write, as KernelBench does), the device
    synchronised, start event, forward, device-wide synchronize (work on any stream counts),
    stop event; then the digest, outside the timed window."""
    bind(torch)
    t = BOUND[0]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=device)
    for w in range(warmups):
        with torch.no_grad():
            model(*fresh_inputs(torch, base_sets[w % len(base_sets)], -1 - w))
    t.synchronize()
    times, digests = [], []
    for k in range(first, first + calls):
        inputs = fresh_inputs(torch, base_sets[k % len(base_sets)], k)
        flush.zero_()
        t.synchronize()
        start = t.event(enable_timing=True)
        stop = t.event(enable_timing=True)
        t.record(start)
        with torch.no_grad():
            out = model(*inputs)
        t.synchronize()
        t.record(stop)
        t.wait(stop)
        times.append(t.elapsed(start, stop))
        digests.append(output_digest(torch, out))
        del out, inputs
    return times, digests
