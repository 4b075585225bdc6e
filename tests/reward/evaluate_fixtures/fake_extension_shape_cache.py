# Test double for a compiled extension that caches its first answer by input shape (hack 6 of
# REFERENCE.md section 5) and returns it for every later call of that shape.
cache = {}


def fused(x, scale, bias, idx):
    return cache.setdefault(tuple(x.shape), (x * scale + bias, idx.sum()))
