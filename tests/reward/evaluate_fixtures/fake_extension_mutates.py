# Test double for a compiled extension that writes into its input (hack 4).
def fused(x, scale, bias, idx):
    out = x * scale + bias
    x.zero_()
    return out, idx.sum()
