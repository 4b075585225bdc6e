# Test double for a compiled extension: x * 2 + 1, as reference_big.py computes it.
def affine(x):
    return x * 2.0 + 1.0
