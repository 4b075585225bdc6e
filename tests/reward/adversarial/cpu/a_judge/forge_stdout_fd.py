# class A (judge in the same process): rewrites the result line below Python: file descriptor 1
# is moved onto a pipe (dup2), so whatever the judge writes, however bound, lands in the pipe; an
# atexit handler edits the result line there and writes it to the real stdout. The kernel is
# wrong.
# caught: the verdict is not correct (the judge's output does not go through the candidate's
# process).
# double: extensions/ext_wrong.py; reference: evaluate_fixtures/reference_add.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
import atexit
import json
import os

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


_real_stdout = os.dup(1)
_pipe_read, _pipe_write = os.pipe()
os.dup2(_pipe_write, 1)
os.close(_pipe_write)
os.set_blocking(_pipe_read, False)


def _forward_rewritten():
    chunks = []
    while True:
        try:
            data = os.read(_pipe_read, 1 << 16)
        except BlockingIOError:
            break
        if not data:
            break
        chunks.append(data)
    text = b"".join(chunks).decode("utf-8", "replace")
    os.write(_real_stdout, _rewrite(text).encode())


atexit.register(_forward_rewritten)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(8))

    def forward(self, x, idx):
        return ext.fused(x, self.scale, self.bias, idx)
