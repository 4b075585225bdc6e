#include "tools/dice-data/dtype.h"

namespace dice::data {

const char* dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFloat16:
      return "float16";
    case Dtype::kBFloat16:
      return "bfloat16";
    default:
      return "float32";
  }
}

const char* cuda_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFloat16:
      return "__half";
    case Dtype::kBFloat16:
      return "__nv_bfloat16";
    default:
      return "float";
  }
}

std::string cuda_header(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFloat16:
      return "#include <cuda_fp16.h>\n";
    case Dtype::kBFloat16:
      return "#include <cuda_bf16.h>\n";
    default:
      return "";
  }
}

std::string load_element(Dtype dtype, const std::string& expr) {
  switch (dtype) {
    case Dtype::kFloat16:
      return "__half2float(" + expr + ")";
    case Dtype::kBFloat16:
      return "__bfloat162float(" + expr + ")";
    default:
      return expr;
  }
}

std::string store_element(Dtype dtype, const std::string& expr) {
  switch (dtype) {
    case Dtype::kFloat16:
      return "__float2half(" + expr + ")";
    case Dtype::kBFloat16:
      return "__float2bfloat16(" + expr + ")";
    default:
      return expr;
  }
}

std::string data_pointer(Dtype dtype, const std::string& tensor) {
  switch (dtype) {
    case Dtype::kFloat16:
      return "reinterpret_cast<__half*>(" + tensor + ".data_ptr<at::Half>())";
    case Dtype::kBFloat16:
      return "reinterpret_cast<__nv_bfloat16*>(" + tensor + ".data_ptr<at::BFloat16>())";
    default:
      return tensor + ".data_ptr<float>()";
  }
}

std::string python_cast(Dtype dtype, const std::string& expr, bool alt) {
  switch (dtype) {
    case Dtype::kFloat16:
      return expr + (alt ? ".to(torch.float16)" : ".half()");
    case Dtype::kBFloat16:
      return expr + (alt ? ".bfloat16()" : ".to(torch.bfloat16)");
    default:
      return expr;
  }
}

}  // namespace dice::data
