# expect: pass
# kernel_infilling_dev.json id 6995 (cuda_code), a published correct candidate.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>

__global__ void upsample_nearest3d_kernel(const float* input, float* output, 
    int N, int C, 
    int D_in, int H_in, int W_in, 
    int D_out, int H_out, int W_out,
    int scale_d, int scale_h, int scale_w) {

    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= N * C * D_out * H_out * W_out) return;

    // Calculate 5D indices for output
    int n = index / (C * D_out * H_out * W_out);
    int c = (index % (C * D_out * H_out * W_out)) / (D_out * H_out * W_out);
    int d_out = (index % (D_out * H_out * W_out)) / (H_out * W_out);
    int h_out = (index % (H_out * W_out)) / W_out;
    int w_out = index % W_out;

    // Compute input indices
    int d_in = d_out / scale_d;
    int h_in = h_out / scale_h;
    int w_in = w_out / scale_w;

    // Compute input index
    int input_index = n * C * D_in * H_in * W_in 
                    + c * D_in * H_in * W_in 
                    + d_in * H_in * W_in 
                    + h_in * W_in 
                    + w_in;

    output[index] = input[input_index];
}

__global__ void batchnorm3d_kernel(const float* input, float* output, 
    const float* weight, const float* bias, 
    const float* running_mean, const float* running_var, 
    float eps, 
    int numel, int channels, int channel_stride) {

    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= numel) return;

    // Compute channel index
    int c = (idx / channel_stride) % channels;

    float inv_std = rsqrtf(running_var[c] + eps);
    float val = (input[idx] - running_mean[c]) * inv_std;
    val = val * weight[c] + bias[c];
    output[idx] = val;
}

torch::Tensor upsample_nearest3d_cuda(torch::Tensor input, const std::vector<double>& scale_factor) {
    int N = input.size(0);
    int C = input.size(1);
    int D_in = input.size(2);
    int H_in = input.size(3);
    int W_in = input.size(4);
    
    int D_out = static_cast<int>(D_in * scale_factor[0]);
    int H_out = static_cast<int>(H_in * scale_factor[1]);
    int W_out = static_cast<int>(W_in * scale_factor[2]);
    
    auto output = torch::empty({N, C, D_out, H_out, W_out}, input.options());
    int numel = output.numel();
    
    const int block_size = 256;
    int grid_size = (numel + block_size - 1) / block_size;
    
    upsample_nearest3d_kernel<<<grid_size, block_size>>>(
        input.contiguous().data_ptr<float>(),
        output.data_ptr<float>(),
        N, C,
        D_in, H_in, W_in,
        D_out, H_out, W_out,
        static_cast<int>(scale_factor[0]),
        static_cast<int>(scale_factor[1]),
        static_cast<int>(scale_factor[2])
    );
    
    return output;
}

torch::Tensor batchnorm3d_cuda(torch::Tensor input, torch::Tensor weight, torch::Tensor bias, 
                               torch::Tensor running_mean, torch::Tensor running_var, float eps, int channel_stride) {
    auto output = torch::empty_like(input);
    int numel = input.numel();
    int channels = weight.size(0);
    
    const int block_size = 256;
    int grid_size = (numel + block_size - 1) / block_size;
    
    batchnorm3d_kernel<<<grid_size, block_size>>>(
        input.contiguous().data_ptr<float>(),
        output.data_ptr<float>(),
        weight.contiguous().data_ptr<float>(),
        bias.contiguous().data_ptr<float>(),
        running_mean.contiguous().data_ptr<float>(),
        running_var.contiguous().data_ptr<float>(),
        eps,
        numel,
        channels,
        channel_stride
    );
    
    return output;
}
"""

cpp_src = """
torch::Tensor upsample_nearest3d_cuda(torch::Tensor input, const std::vector<double>& scale_factor);
torch::Tensor batchnorm3d_cuda(torch::Tensor input, torch::Tensor weight, torch::Tensor bias, 
                               torch::Tensor running_mean, torch::Tensor running_var, float eps, int channel_stride);
"""

custom_ops = load_inline(
    name='custom_ops',
    cpp_sources=cpp_src,
    cuda_sources=source,
    functions=['upsample_nearest3d_cuda', 'batchnorm3d_cuda'],
    verbose=True,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, scale_factor, num_features):
        super().__init__()
        self.upsample = nn.Upsample(scale_factor=scale_factor, mode="nearest")
        self.batch_norm = nn.BatchNorm3d(num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Upsample
        sf = list(self.upsample.scale_factor)
        x = custom_ops.upsample_nearest3d_cuda(x, sf)
        # BatchNorm
        channel_stride = x.size(2) * x.size(3) * x.size(4)
        x = custom_ops.batchnorm3d_cuda(
            x,
            self.batch_norm.weight,
            self.batch_norm.bias,
            self.batch_norm.running_mean,
            self.batch_norm.running_var,
            self.batch_norm.eps,
            channel_stride
        )
        return x
