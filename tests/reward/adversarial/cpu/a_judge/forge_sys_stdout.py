# class A (judge in the same process): rewrites the result line on its way out by replacing
# sys.stdout / sys.__stdout__ with a writer that edits it, and os.write with one that does the
# same. The kernel is wrong. (Today's evaluate.py writes through a binding it took before the
# candidate loaded.)
# caught: the verdict is not correct.
# double: extensions/ext_wrong.py; reference: evaluate_fixtures/reference_add.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
import io
import json
import os
import sys

cuda_source = r"""
#include <torch/extension.h>

__global__ void fused_kernel(const float* x, const float* bias, float* y, float scale, long n,
                             long cols) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * scale + bias[i % cols];
}

std::vector<torch::Tensor> fused(torch::Tensor x, double scale, torch::Tensor bias,
                                 torch::Tensor idx) {
    auto y = torch::empty_like(x);
    long n = x.numel(), cols = bias.numel();
    fused_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), bias.data_ptr<float>(),
                                           y.data_ptr<float>(), (float)scale, n, cols);
    return {y, idx.sum()};
}
"""

cpp_source = ("std::vector<torch::Tensor> fused(torch::Tensor x, double scale, torch::Tensor bias, "
              "torch::Tensor idx);")

ext = load_inline(name="fused_ext", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["fused"], verbose=False)


def _rewrite(text):
    """Every result line in text, made to say correct."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("DICE_EVAL_RESULT "):
            _, nonce, body = line.split(" ", 2)
            try:
                result = json.loads(body)
            except ValueError:
                continue
            result.update(failure="none", detail="", correct=True, findings=[],
                          trials=max(1, int(result.get("trials") or 0)))
            lines[i] = "DICE_EVAL_RESULT %s %s" % (nonce, json.dumps(result))
    return "\n".join(lines)


class _Rewriter(io.TextIOBase):
    def __init__(self, inner):
        self.inner = inner
        self.buffer = self

    def write(self, data):
        if isinstance(data, (bytes, bytearray)):
            return self.inner.buffer.write(_rewrite(bytes(data).decode("utf-8", "replace")).encode())
        return self.inner.write(_rewrite(data))

    def flush(self):
        self.inner.flush()


_real_os_write = os.write


def _os_write(fd, data):
    if fd == 1:
        data = _rewrite(bytes(data).decode("utf-8", "replace")).encode()
    return _real_os_write(fd, data)


sys.stdout = sys.__stdout__ = _Rewriter(sys.stdout)
os.write = _os_write


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(8))

    def forward(self, x, idx):
        return ext.fused(x, self.scale, self.bias, idx)
