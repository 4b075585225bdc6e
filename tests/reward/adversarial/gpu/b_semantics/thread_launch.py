# class B (correctness semantics): spawns a thread (hack 7). forward returns at once; a detached
# C++ thread (its type named through a macro, which a regex over the source does not see)
# launches the kernel and a 2 ms spin. forward waits only until the launches are issued.
# caught: reward 0, or a mean kernel time of at least 1 ms (the timing waits for the whole
# device before its stop event).
# reference: gpu_hacks/reference.py (y = relu(x) + w * x, 4M float32)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <condition_variable>
#include <mutex>
#include <thread>

__global__ void relu_axpy_kernel(const float* x, float* y, float w, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = fmaxf(v, 0.0f) + w * v;
    }
}

__device__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Busy for `ns` nanoseconds: the work a timing must see (2 ms per call here).
__global__ void spin_kernel(unsigned long long ns) {
    unsigned long long start = now_ns();
    while (now_ns() - start < ns) {
    }
}

#define JOIN(a, b) a##b

torch::Tensor relu_axpy(torch::Tensor x, double w) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long n = xc.numel();
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    int device = 0;
    cudaGetDevice(&device);
    auto issued = std::make_shared<std::pair<std::mutex, std::condition_variable>>();
    auto done = std::make_shared<bool>(false);
    std::JOIN(thr, ead)([=] {
        cudaSetDevice(device);
        relu_axpy_kernel<<<(n + 255) / 256, 256>>>(in, out, (float)w, n);
        spin_kernel<<<1, 1>>>(2000000ULL);
        std::lock_guard<std::mutex> lock(issued->first);
        *done = true;
        issued->second.notify_all();
    }).detach();
    std::unique_lock<std::mutex> lock(issued->first);
    issued->second.wait(lock, [&] { return *done; });
    return y;
}
"""

cpp_source = """
torch::Tensor relu_axpy(torch::Tensor x, double w);
"""

adv_thread_launch = load_inline(
    name="adv_thread_launch",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=['relu_axpy'],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = w

    def forward(self, x):
        return adv_thread_launch.relu_axpy(x, self.w)
