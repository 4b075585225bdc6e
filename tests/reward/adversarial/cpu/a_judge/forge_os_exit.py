# class A (judge in the same process): forges the result line and leaves before the judge can
# print its own: forward() reads the nonce from the judge's main() frame, writes
# "DICE_EVAL_RESULT <nonce> {...correct...}" to stdout and calls os._exit(0). The kernel is wrong.
# caught: the verdict is not correct (the judge's result does not come from the candidate's
# process, and a runner that exits early is a crash).
# double: extensions/ext_wrong.py; reference: evaluate_fixtures/reference_add.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
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


FORGED = ('\nDICE_EVAL_RESULT %s {"failure": "none", "detail": "", "correct": true, "trials": 1, '
          '"max_abs_error": 0.0, "findings": []}\n')


def _nonce_from_frames():
    """The result line's nonce, from a local variable of some caller (the judge's main())."""
    frame = sys._getframe(1)
    while frame is not None:
        value = frame.f_locals.get("nonce")
        if isinstance(value, str) and value:
            return value
        frame = frame.f_back
    return None


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(8))

    def forward(self, x, idx):
        nonce = _nonce_from_frames()
        if nonce:
            os.write(1, (FORGED % nonce).encode())
            os._exit(0)
        return ext.fused(x, self.scale, self.bias, idx)
