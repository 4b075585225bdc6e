# expect: pass
# kernel_infilling_dev.json id 4383 (cuda_code), a published correct candidate.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# CUDA code for fused linear, relu, div, and bias_add operations
source = """
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/extension.h>

__global__ void fused_relu_div_add_bias_kernel(const float *input, float *output, const float *bias, float divisor, int num_elements, int hidden_size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < num_elements) {
        int h = idx % hidden_size;
        float val = input[idx];
        val = fmaxf(0.0f, val);
        val = val / divisor;
        val += bias[h];
        output[idx] = val;
    }
}

torch::Tensor fused_relu_div_add_bias_cuda(torch::Tensor input, torch::Tensor bias, float divisor) {
    auto output = torch::empty_like(input);
    int num_elements = input.numel();
    int hidden_size = input.size(1);
    const int block_size = 256;
    int grid_size = (num_elements + block_size - 1) / block_size;
    fused_relu_div_add_bias_kernel<<<grid_size, block_size>>>(
        input.data_ptr<float>(), output.data_ptr<float>(), bias.data_ptr<float>(), divisor, num_elements, hidden_size);
    return output;
}

torch::Tensor linear_cuda(torch::Tensor x, torch::Tensor weight, std::optional<torch::Tensor> bias) {
    int M = x.size(0);
    int K = x.size(1);
    int N = weight.size(0);

    auto output = torch::empty({M, N}, x.options());
    const float alpha = 1.f;
    const float beta = 0.f;

    auto handle = at::cuda::getCurrentCUDABlasLtHandle();

    cublasLtMatmulDesc_t matmul_desc;
    cublasLtMatmulDescCreate(&matmul_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);

    cublasOperation_t trans_A = CUBLAS_OP_T;
    cublasLtMatmulDescSetAttribute(matmul_desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_A, sizeof(trans_A));
    cublasOperation_t trans_B = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(matmul_desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_B, sizeof(trans_B));

    auto epilogue = bias.has_value() ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    cublasLtMatmulDescSetAttribute(matmul_desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));

    if (bias.has_value()) {
        const float *bias_ptr = bias->data_ptr<float>();
        cublasLtMatmulDescSetAttribute(matmul_desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof(bias_ptr));
    }

    cublasLtMatrixLayout_t A_desc, B_desc, C_desc;
    cublasLtMatrixLayoutCreate(&A_desc, CUDA_R_32F, K, N, K);
    cublasLtMatrixLayoutCreate(&B_desc, CUDA_R_32F, K, M, K);
    cublasLtMatrixLayoutCreate(&C_desc, CUDA_R_32F, N, M, N);

    size_t workspace_size = 1024 * 1024;
    auto workspace = c10::cuda::CUDACachingAllocator::get()->allocate(workspace_size);

    cublasLtMatmul(handle, matmul_desc, &alpha,
        weight.data_ptr<float>(), A_desc,
        x.data_ptr<float>(), B_desc,
        &beta, output.data_ptr<float>(), C_desc,
        output.data_ptr<float>(), C_desc,
        nullptr, workspace.get(), workspace_size, at::cuda::getCurrentCUDAStream());

    cublasLtMatmulDescDestroy(matmul_desc);
    cublasLtMatrixLayoutDestroy(A_desc);
    cublasLtMatrixLayoutDestroy(B_desc);
    cublasLtMatrixLayoutDestroy(C_desc);

    return output;
}
"""

cpp_src = """
torch::Tensor linear_cuda(torch::Tensor x, torch::Tensor weight, std::optional<torch::Tensor> bias);
torch::Tensor fused_relu_div_add_bias_cuda(torch::Tensor input, torch::Tensor bias, float divisor);
"""

# Compile and load CUDA extension
custom_extension = load_inline(
    name='custom_extension',
    cpp_sources=cpp_src,
    cuda_sources=source,
    functions=['linear_cuda', 'fused_relu_div_add_bias_cuda'],
    verbose=True,
)

class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, bias_shape, divisor):
        super().__init__()
        self.fc = nn.Linear(input_size, hidden_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.divisor = divisor

    def forward(self, x):
        x = custom_extension.linear_cuda(x, self.fc.weight, self.fc.bias)
        x = custom_extension.fused_relu_div_add_bias_cuda(x, self.bias, self.divisor)
        return x
