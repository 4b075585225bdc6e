# Test double for a compiled extension (tests/reward/adversarial): plain torch on the CPU standing
# in for the candidate's CUDA kernel. Correct: y = x * scale + bias, and idx.sum().
def fused(x, scale, bias, idx):
    return x * scale + bias, idx.sum()
