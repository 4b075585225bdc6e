# Test double for a compiled extension that answers in half precision for a float32 reference:
# the values are close, the output is not the reference's.
def fused(x, scale, bias, idx):
    return (x * scale + bias).half(), idx.sum()
