# expect: pass
# kernel_infilling_dev.json id 444 (cuda_code), a published correct candidate.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Define fused BatchNorm2d + Hardtanh CUDA kernel
source = """
#include <torch/extension.h>
#include <math.h>

__global__ void fused_bn_hardtanh_kernel(
    const float* input,
    float* output,
    const float* gamma,
    const float* beta,
    const float* running_mean,
    const float* running_var,
    float eps,
    float min_val,
    float max_val,
    int num_elements,
    int C, int H, int W
) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= num_elements) return;
    
    int channel_idx = (idx / (H * W)) % C;
    
    float x = input[idx];
    float mean = running_mean[channel_idx];
    float var = running_var[channel_idx];
    
    // BatchNorm calculation
    x = (x - mean) / sqrtf(var + eps);
    x = x * gamma[channel_idx] + beta[channel_idx];
    
    // Hardtanh activation
    x = fmaxf(min_val, fminf(x, max_val));
    
    output[idx] = x;
}

torch::Tensor fused_bn_hardtanh_cuda(
    torch::Tensor input,
    torch::Tensor gamma,
    torch::Tensor beta,
    torch::Tensor running_mean,
    torch::Tensor running_var,
    float eps,
    float min_val,
    float max_val
) {
    auto output = torch::empty_like(input);
    int num_elements = input.numel();
    
    int C = input.size(1);
    int H = input.size(2);
    int W = input.size(3);
    
    const int block_size = 256;
    int grid_size = (num_elements + block_size - 1) / block_size;
    
    fused_bn_hardtanh_kernel<<<grid_size, block_size>>>(
        input.data_ptr<float>(),
        output.data_ptr<float>(),
        gamma.data_ptr<float>(),
        beta.data_ptr<float>(),
        running_mean.data_ptr<float>(),
        running_var.data_ptr<float>(),
        eps,
        min_val,
        max_val,
        num_elements,
        C, H, W
    );
    
    return output;
}
"""

cpp_src = """
torch::Tensor fused_bn_hardtanh_cuda(
    torch::Tensor input,
    torch::Tensor gamma,
    torch::Tensor beta,
    torch::Tensor running_mean,
    torch::Tensor running_var,
    float eps,
    float min_val,
    float max_val
);
"""

# Compile and load the CUDA extension
fused_ops = load_inline(
    name='fused_ops',
    cpp_sources=cpp_src,
    cuda_sources=source,
    functions=['fused_bn_hardtanh_cuda'],
    verbose=True,
)

class ModelNew(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.bnorm = nn.BatchNorm2d(num_features)
        self.hardtanh = nn.Hardtanh()

    def forward(self, x):
        x = x.contiguous()
        return fused_ops.fused_bn_hardtanh_cuda(
            x,
            self.bnorm.weight,
            self.bnorm.bias,
            self.bnorm.running_mean,
            self.bnorm.running_var,
            self.bnorm.eps,
            self.hardtanh.min_val,
            self.hardtanh.max_val
        )
