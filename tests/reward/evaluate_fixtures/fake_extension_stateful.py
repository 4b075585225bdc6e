# Test double for a compiled extension that returns a different answer on its second call.
calls = [0]


def fused(x, scale, bias, idx):
    calls[0] += 1
    return x * scale + bias + (0 if calls[0] == 1 else 1.0), idx.sum()
