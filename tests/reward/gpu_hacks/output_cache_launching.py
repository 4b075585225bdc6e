# hack 6 (REFERENCE.md section 5), the stealthy form: a module-level Python dict keyed by shape
# holds the first output; on a hit forward returns it and launches its own kernel on a single
# element only, so the profiler still sees a kernel of this module (and a timed call would cost
# one tiny launch). The dict is filled with setdefault, which the static check's state-in-forward
# rule (self.* stores and `global`) does not cover.
# Defence in evaluate.py: after the trials, one call on inputs from a seed not used before
# (stale-output). The kernel-reference-kernel check reruns on copies of the SAME inputs and the
# profiler run uses the first trial's seed, so without that call one trial would not catch it.
# Expected: antiCheat (stale-output) with 1 trial; incorrect with 2 or more.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>

__global__ void relu_axpy_kernel(const float* x, float* y, float w, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = fmaxf(v, 0.0f) + w * v;
    }
}

torch::Tensor relu_axpy(torch::Tensor x, double w) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    const int threads = 256;
    long blocks = (n + threads - 1) / threads;
    relu_axpy_kernel<<<blocks, threads>>>(xc.data_ptr<float>(), y.data_ptr<float>(), (float)w, n);
    return y;
}
"""

cpp_source = "torch::Tensor relu_axpy(torch::Tensor x, double w);"

hacks_output_cache_launching = load_inline(
    name="hacks_output_cache_launching",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["relu_axpy"],
    verbose=False,
)

# Outputs by (shape, dtype): filled on the first call, returned on every later one.
_outputs = {}


class ModelNew(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = w

    def forward(self, x):
        key = (tuple(x.shape), str(x.dtype))
        hit = _outputs.get(key)
        if hit is not None:
            hacks_output_cache_launching.relu_axpy(x.narrow(0, 0, 1), self.w)
            return hit
        return _outputs.setdefault(key, hacks_output_cache_launching.relu_axpy(x, self.w))
