"""The timing loop, one code for both sides: the judge runs it over the reference in its own
process, the runner over the candidate in the candidate's process. Neither side's clock is read
from inside the loop: the judge clocks the runner's whole request from outside, and its own loops
the same way (judge.py, Judge.time_both). Nothing the candidate's process reports about time is
used.

A request gives its calls back to back, with one synchronisation at the end:
- Call k's inputs are made inside the loop from the staged base sets (get_inputs()'s own values)
  and the request's seed (CallInputs): a roll by a seeded shift and, for floating tensors, a
  contraction toward their centre by a seeded share per element. The seed is drawn by the judge
  from os.urandom for each request, so no call's inputs are known before its request arrives,
  and the per-element shares leave no algebra between two calls' inputs to exploit (a roll and
  one common scale would: (cA)(cB) = c^2 AB).
- Each call's output is reduced on the device to a digest (Digests): DIGEST_WEIGHTINGS weighted
  sums, each under its own weights drawn per call from the seed, uniform in [-1/2, 1/2), beside
  the sum of absolute values, the sum of squares and the element count. The judge recomputes the reference's digests for the
  same seed and checks the candidate's against them (digests_agree), so a call that returned a
  stale, cached, unfinished or partly computed output is caught although the judge never sees it.
  Per-call weights leave nothing to precompute: with one weight vector per request, the digest
  of a fixed-weight linear layer would be one dot product a call.
The inputs' making and the digests are the loop's overhead; the judge clocks the same loop with
a stand-in of the reference's outputs in place of any forward and subtracts it from both sides
(its per-call share is the verdict's stated timing margin).
"""

import math
import random

# How many standard deviations of an honest output's digest difference a call may show: the
# honest difference is a sum of errors, each within tolerance, under weights drawn independently
# of them (uniform in [-1/2, 1/2): variance 1/12 each).
DIGEST_SIGMAS = 6.0
DIGEST_WEIGHT_VARIANCE = 1.0 / 12.0
# Weighted sums per output, each under weights of its own: a wrong output that one weighting
# misses with probability p (its difference happens to fall inside the honest band) passes all
# of them with p^DIGEST_WEIGHTINGS. Computed as one matrix-vector product, so a second weighting
# adds no launch to the timing loop's overhead.
DIGEST_WEIGHTINGS = 2
# Float32 dot products over up to 2^31 elements: their rounding, relative to the sum of |x|.
DIGEST_ROUNDING = 1e-5

# How far a call's floating inputs are drawn toward their centre: a share in
# [0, CONTRACTION_MAX) of each value's distance to it.
CONTRACTION_MAX = 0.125
# The device generator's seed is the request's seed within this range (torch's manual_seed).
SEED_RANGE = 1 << 63


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


class TensorPlan:
    """How one base tensor becomes each call's input, decided once per request:
    - rolled along its largest dimension unless sorted along it: a roll moves values and never
      changes one (index ranges, dtypes, masks' counts per slice, every value's sign stay those
      get_inputs made); tensors of one shape are rolled alike, so elementwise relations between
      them hold too;
    - a floating tensor with finite values is drawn toward its centre (0 when its values span 0,
      else the middle of [lo, hi]) by a share per element, the same shares for tensors of one
      shape, or one share for the whole tensor when it is sorted (its order kept). Every value
      stays within [lo, hi], the range get_inputs drew (positive for log or sqrt, [0, 1] for
      probabilities, [0, n) for float indices), and keeps its sign.
    Integer, bool and complex tensors keep their values; a tensor with a NaN or an infinity is
    only rolled."""

    def __init__(self, torch, x):
        self.dim = max(range(x.dim()), key=lambda d: x.shape[d]) if x.dim() else None
        self.ordered = self.dim is None or is_ordered(torch, x, self.dim)
        self.rolls = not self.ordered
        self.contracts = False
        if x.is_floating_point():
            lo, hi = float(x.min()), float(x.max())  # NaN where x holds one
            if math.isfinite(lo) and math.isfinite(hi):
                self.contracts = True
                self.lo, self.hi = lo, hi
                # Made once per request: every call's lerp reads it (no fill a call).
                self.centre = torch.full((), 0.0 if lo <= 0.0 <= hi else (lo + hi) / 2,
                                         dtype=self.wide_dtype(torch, x), device=x.device)

    @staticmethod
    def wide_dtype(torch, x):
        """The dtype x is contracted in: its own for float32 and float64, else float32."""
        return x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float32

    def contracted(self, torch, x, share):
        """x drawn toward the centre by `share` (a float, or a tensor of x's shape in
        wide_dtype) of each value's distance to it: one lerp and one clamp, the fewest passes
        over x the loop's own overhead can have."""
        wide = x.to(self.wide_dtype(torch, x))
        # Clamped where rounding stepped past an end; lo and hi are values of x's dtype, so
        # rounding back to it keeps y inside them.
        return torch.lerp(wide, self.centre, share).clamp_(self.lo, self.hi).to(x.dtype)


class CallInputs:
    """The inputs of a request's calls: call k's are made from base set k % len(base_sets) under
    the request's seed (TensorPlan says how). Calls must be asked for in order 0, 1, ...: both
    sides then draw the same values, the host's (shifts, shares of sorted tensors) from
    random.Random(seed) and the device's (shares per element) from a torch.Generator."""

    def __init__(self, torch, base_sets, seed, device):
        self.torch, self.base_sets = torch, base_sets
        self.host = random.Random(seed)
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed % SEED_RANGE)
        self.plans = [[TensorPlan(torch, x) if isinstance(x, torch.Tensor) and x.numel() else None
                       for x in base] for base in base_sets]

    def inputs(self, k):
        torch = self.torch
        base, plans = self.base_sets[k % len(self.base_sets)], self.plans[k % len(self.plans)]
        shift = self.host.randrange(1, 1 << 30)
        sorted_share = CONTRACTION_MAX * self.host.random()
        shares = {}
        out = []
        for x, plan in zip(base, plans):
            if plan is None:
                out.append(x)
                continue
            y = x
            if plan.rolls:
                size = x.shape[plan.dim]
                y = torch.roll(x, shifts=shift % (size - 1) + 1, dims=plan.dim)
            if plan.contracts:
                if plan.ordered:
                    share = sorted_share
                else:
                    shape = tuple(x.shape)
                    if shape not in shares:
                        shares[shape] = torch.empty(shape, device=x.device).uniform_(
                            0.0, CONTRACTION_MAX, generator=self.generator)
                    share = shares[shape].to(TensorPlan.wide_dtype(torch, x))
                y = plan.contracted(torch, y, share)
            # Fresh memory every call, so a cache keyed on pointers misses too.
            out.append(y.contiguous() if y is not x else x.clone())
        return out


def flat_outputs(out):
    if isinstance(out, (tuple, list)):
        flat = []
        for item in out:
            flat.extend(flat_outputs(item))
        return flat
    return [out]


class Digests:
    """Each call's outputs reduced on the device, without a synchronisation: per tensor output
    [DIGEST_WEIGHTINGS weighted sums, sum of |x|, sum of x^2] (float64) and its element count, the
    weights drawn for every call from the request's seed; a plain value v gives [v, ..., v, |v|,
    v^2] and 1. NaN stays NaN."""

    def __init__(self, torch, seed, device):
        self.torch = torch
        self.generator = torch.Generator(device=device)
        # Not the inputs' stream of draws: weights and shares are independent.
        self.generator.manual_seed((seed ^ 0x5DEECE66D) % SEED_RANGE)
        self.weights = {}  # one buffer per (count, dtype, device), redrawn every call

    def of(self, out):
        torch = self.torch
        entries = []
        for t in flat_outputs(out):
            if not isinstance(t, torch.Tensor):
                v = float(t) if isinstance(t, (int, float, bool)) else float("nan")
                entries.append(([v] * DIGEST_WEIGHTINGS + [abs(v), v * v], 1))
                continue
            flat = t.detach().reshape(-1)
            if flat.is_complex():
                flat = flat.abs()
            if flat.dtype not in (torch.float32, torch.float64):
                flat = flat.to(torch.float32)
            key = (flat.numel(), flat.dtype, flat.device)
            if key not in self.weights:
                self.weights[key] = torch.empty(DIGEST_WEIGHTINGS, flat.numel(),
                                                dtype=flat.dtype, device=flat.device)
            w = self.weights[key].uniform_(-0.5, 0.5, generator=self.generator)
            entries.append((torch.cat([torch.mv(w, flat), torch.stack([
                flat.abs().sum(), torch.dot(flat, flat)])]).to(torch.float64), flat.numel()))
        return entries


def on_host(torch, pending):
    """[[[weighted sums..., sum |x|, sum x^2, count] per output] per call] of Digests.of's
    entries, with one copy from the device."""
    tensors = [d for call in pending for d, _ in call if isinstance(d, torch.Tensor)]
    values = iter(torch.stack(tensors).cpu().tolist() if tensors else [])
    return [[(next(values) if isinstance(d, torch.Tensor) else d) + [n] for d, n in call]
            for call in pending]


def run_calls(torch, model, inputs, digests, calls, synchronize):
    """The digests of `calls` calls of model, back to back on inputs.inputs(0..calls-1), with one
    synchronisation at the end (work on any stream counts)."""
    pending = []
    for k in range(calls):
        with torch.no_grad():
            out = model(*inputs.inputs(k))
        pending.append(digests.of(out))
        del out
    synchronize()
    return on_host(torch, pending)


def time_request(torch, model, base_sets, calls, seed, device, synchronize):
    """One timing request's loop (the runner's answer, and the judge's loops): its digests."""
    return run_calls(torch, model, CallInputs(torch, base_sets, seed, device),
                     Digests(torch, seed, device), calls, synchronize)


def digests_agree(got, want, atol, rtol):
    """Whether a call's digests agree with the reference's. Elementwise closeness allows each
    element an error e_i within atol + rtol |w_i|:
    - each weighted sum's difference of an honest output is a sum of such errors under weights
      of variance 1/12 drawn independently of them, so it stays within DIGEST_SIGMAS standard
      deviations, sqrt(sum (atol + rtol |w_i|)^2 / 12); an output of other inputs (stale,
      cached) or of nothing differs by about sqrt(sum d_i^2 / 12) for its differences d_i, under
      each of the DIGEST_WEIGHTINGS independent weightings, and a request of stale calls is
      caught by the first few;
    - the sums of squares differ by at most sum e_i (2 |w_i| + e_i), whatever the weights.
    `atol` may be a list, one per output (the correctness check's tolerance for it)."""
    if not isinstance(got, list) or len(got) != len(want):
        return False
    width = DIGEST_WEIGHTINGS + 3
    for i, (g, w) in enumerate(zip(got, want)):
        if not isinstance(g, list) or len(g) != width or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in g):
            return False
        sums, (_, g_sq, g_n) = g[:DIGEST_WEIGHTINGS], g[DIGEST_WEIGHTINGS:]
        want_sums, (sum_abs, sum_sq, n) = w[:DIGEST_WEIGHTINGS], w[DIGEST_WEIGHTINGS:]
        if g_n != n:
            return False
        a = atol[i] if isinstance(atol, list) else atol
        if any(math.isnan(v) for v in sums + want_sums + [g_sq, sum_sq]):
            if not all(math.isnan(v) for v in sums + want_sums):
                return False
            continue
        if any(math.isinf(v) for v in sums + want_sums + [g_sq, sum_sq]):
            if sums != want_sums:
                return False
            continue
        rounding = DIGEST_ROUNDING * (1 + sum_abs + sum_sq)
        spread = math.sqrt(max(0.0, DIGEST_WEIGHT_VARIANCE * (
            n * a * a + 2 * a * rtol * sum_abs + rtol * rtol * sum_sq)))
        if any(abs(s - t) > DIGEST_SIGMAS * spread + rounding for s, t in zip(sums, want_sums)):
            return False
        squares_bound = (n * a * a + (2 * a + 2 * a * rtol) * sum_abs +
                         (2 * rtol + rtol * rtol) * sum_sq)
        if abs(g_sq - sum_sq) > squares_bound + rounding:
            return False
    return True
