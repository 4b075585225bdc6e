# Test double for a compiled extension that computes its answer and then zeroes its input in place
# (hack 4: the reference, run afterwards on those inputs, would agree with anything).
def fused(x, scale, bias, idx):
    out = x * scale + bias
    x.zero_()
    return out, idx.sum()
