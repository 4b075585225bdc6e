# Test double for a compiled extension that computes honestly while it is checked and, once it
# has been called more often than the checks call it, answers every call with the output it
# computed last (a cache that a timing loop on fixed or predictable inputs would not see).
calls = [0]
last = []


def fused(x, scale, bias, idx):
    calls[0] += 1
    if calls[0] > 12 and last:
        return last[0]
    last[:] = [(x * scale + bias, idx.sum())]
    return last[0]
