// The three element types of the curriculum and how each one reads in the reference (PyTorch)
// and in the kernel (plain CUDA types only: the reward pipeline compiles device code without
// torch's headers, reward/split_sources.h). Kernels load every element into a float, compute in
// float and store back, as PyTorch's own CUDA kernels do for half types.
#pragma once

#include <string>

namespace dice::data {

enum class Dtype { kFloat32, kFloat16, kBFloat16 };

// "float32", "float16", "bfloat16": the name used in keys, counts and the manifest.
const char* dtype_name(Dtype dtype);

// The element type in device code: float, __half, __nv_bfloat16.
const char* cuda_type(Dtype dtype);

// The #include line a kernel of this type needs ("" for float), with its newline.
std::string cuda_header(Dtype dtype);

// `expr` (an element in memory) as a float, and a float `expr` as an element.
std::string load_element(Dtype dtype, const std::string& expr);
std::string store_element(Dtype dtype, const std::string& expr);

// Host code: the device pointer of tensor `tensor`, typed for the kernel's parameter.
std::string data_pointer(Dtype dtype, const std::string& tensor);

// Reference code: `expr` (a float32 tensor expression) turned into this type, e.g.
// "torch.randn(batch_size, dim).half()". `alt` picks the other spelling (.to(torch.float16)).
std::string python_cast(Dtype dtype, const std::string& expr, bool alt);

}  // namespace dice::data
