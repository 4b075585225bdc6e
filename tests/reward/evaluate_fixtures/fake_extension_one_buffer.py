# Test double for a compiled extension that writes every answer into one buffer it keeps and
# returns that buffer, right on odd calls and wrong on even ones: a kernel-reference-kernel check
# that compared the two runs' outputs without copying the first would compare the buffer with
# itself and pass it.
calls = [0]
buffer = {}


def fused(x, scale, bias, idx):
    calls[0] += 1
    out = buffer.setdefault("out", x * 0)
    out.copy_(x * scale + bias + (0.0 if calls[0] % 2 else 1.0))
    return out, idx.sum()
