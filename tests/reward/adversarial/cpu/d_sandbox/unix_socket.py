# class D (sandbox): connects to a Unix socket of the host by path (/run/dice-adv/host.sock, which
# the test listens on) and in the abstract namespace (@dice-adv-host), and sends bytes.
# caught: the host shows no effect (checked from outside after the run): nothing connected to either listener. The kernel is wrong.
# double: extensions/ext_wrong.py; reference: evaluate_fixtures/reference_add.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
import socket

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


for _address in ("/run/dice-adv/host.sock", "\0dice-adv-host"):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as _s:
            _s.settimeout(2)
            _s.connect(_address)
            _s.sendall(b"dice-adv: from a sandboxed candidate\n")
    except OSError:
        pass


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(8))

    def forward(self, x, idx):
        return ext.fused(x, self.scale, self.bias, idx)
