// dice_model_compare: dice's Qwen3 model against transformers' logits (make_reference.py).
//
//   dice_model_compare --reference DIR [--device cuda|cpu] [--dtypes float32,bfloat16]
//
// Loads DIR/model in each dtype, prints one table row per check (block-causal vs transformers
// with a custom 4-D mask, causal vs transformers' default, cached decode vs block-causal) and
// exits 0 when every row is within tolerance, 1 when one is not, 2 on bad arguments or files.
#include <ATen/ATen.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "model/torch_compat.h"
#include "model/weights.h"
#include "tools/verify-model/reference_check.h"

namespace {

int usage(const char* message) {
  std::fprintf(stderr, "dice_model_compare: %s\n", message);
  std::fprintf(stderr,
               "usage: dice_model_compare --reference DIR [--device cuda|cpu] "
               "[--dtypes float32,bfloat16]\n");
  return 2;
}

bool parse_dtype(const std::string& name, at::ScalarType* type) {
  if (name == "float32")
    *type = at::kFloat;
  else if (name == "bfloat16")
    *type = at::kBFloat16;
  else if (name == "float16")
    *type = at::kHalf;
  else
    return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string reference_dir, device_name, dtype_list;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) return usage(("missing value for " + arg).c_str());
    if (arg == "--reference")
      reference_dir = argv[++i];
    else if (arg == "--device")
      device_name = argv[++i];
    else if (arg == "--dtypes")
      dtype_list = argv[++i];
    else
      return usage(("unknown argument " + arg).c_str());
  }
  if (reference_dir.empty()) return usage("--reference is required");
  if (device_name.empty()) device_name = dice::compat::cuda_available() ? "cuda" : "cpu";
  if (device_name != "cpu" && device_name != "cuda") return usage("--device must be cuda or cpu");
  if (device_name == "cuda" && !dice::compat::cuda_available()) {
    std::fprintf(stderr, "dice_model_compare: --device cuda, but %s\n",
                 dice::compat::describe_torch().c_str());
    return 2;
  }
  const c10::Device device(device_name == "cuda" ? c10::kCUDA : c10::kCPU);

  auto reference = dice::read_reference_logits(reference_dir + "/reference.safetensors");
  if (!reference.ok()) return usage(reference.status().to_string().c_str());
  std::vector<std::string> dtypes = reference->dtypes();
  if (!dtype_list.empty()) {
    dtypes.clear();
    std::stringstream in(dtype_list);
    for (std::string d; std::getline(in, d, ',');) dtypes.push_back(d);
  }
  std::printf("dice_model_compare: %s; reference from torch %s, transformers %s on %s\n",
              dice::compat::describe_torch().c_str(), reference->metadata["torch"].c_str(),
              reference->metadata["transformers"].c_str(), reference->metadata["device"].c_str());
  std::printf("tolerance: max|diff| <= tol * max(1, max|ref|)\n");

  std::vector<dice::LogitsComparison> rows;
  for (const std::string& dtype : dtypes) {
    at::ScalarType type;
    if (!parse_dtype(dtype, &type)) return usage(("unknown dtype " + dtype).c_str());
    if (reference->logits.count("causal." + dtype) == 0) {
      return usage(("the reference has no " + dtype + " logits").c_str());
    }
    auto lm = dice::load_qwen3_lm(reference_dir + "/model",
                                  at::TensorOptions().dtype(type).device(device));
    if (!lm.ok()) return usage(lm.status().to_string().c_str());
    auto compared = dice::compare_with_reference(**lm, *reference, dtype);
    rows.insert(rows.end(), compared.begin(), compared.end());
  }
  std::printf("%s", dice::format_comparisons(rows).c_str());
  bool ok = true;
  for (const auto& r : rows) ok = ok && r.passed();
  std::printf("dice_model_compare: %s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}
