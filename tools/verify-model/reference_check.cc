#include "tools/verify-model/reference_check.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <cstdio>

#include "model/checkpoint/safetensors.h"

namespace dice {
namespace {

Result<at::Tensor> to_tensor(const TensorInfo& t, const std::string& path) {
  at::ScalarType type;
  switch (t.dtype) {
    case DType::kI64:
      type = at::kLong;
      break;
    case DType::kF32:
      type = at::kFloat;
      break;
    default:
      return Status::invalid_argument(path + ": tensor '" + t.name +
                                      "': expected I64 or F32, got " + dtype_name(t.dtype));
  }
  return at::from_blob(const_cast<uint8_t*>(t.data), t.shape, at::TensorOptions().dtype(type))
      .clone();
}

LogitsComparison compare(const std::string& check, const std::string& dtype, const at::Tensor& ours,
                         const at::Tensor& ref) {
  LogitsComparison row;
  row.check = check;
  row.dtype = dtype;
  at::Tensor a = ours.to(at::kCPU, at::kFloat), b = ref.to(at::kCPU, at::kFloat);
  TORCH_CHECK(a.sizes() == b.sizes(), check, ": shapes ", a.sizes(), " and ", b.sizes());
  row.max_abs_diff = (a - b).abs().max().item<double>();
  row.max_abs_ref = b.abs().max().item<double>();
  row.tolerance = logits_tolerance(dtype);
  return row;
}

}  // namespace

std::vector<std::string> ReferenceLogits::dtypes() const {
  std::vector<std::string> out;
  for (const auto& kv : logits) {
    const std::string prefix = "causal.";
    if (kv.first.rfind(prefix, 0) != 0) continue;
    std::string dtype = kv.first.substr(prefix.size());
    if (logits.count("block_causal." + dtype) != 0) out.push_back(dtype);
  }
  return out;
}

Result<ReferenceLogits> read_reference_logits(const std::string& path) {
  DICE_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
  ReferenceLogits ref;
  ref.metadata = file.metadata();
  for (const TensorInfo& t : file.tensors()) {
    DICE_ASSIGN_OR_RETURN(at::Tensor tensor, to_tensor(t, path));
    if (t.name == "input_ids") {
      ref.input_ids = tensor;
    } else if (t.name == "logit_columns") {
      ref.logit_columns = tensor;
    } else {
      ref.logits[t.name] = tensor;
    }
  }
  if (!ref.input_ids.defined() || !ref.logit_columns.defined() || ref.dtypes().empty()) {
    return Status::invalid_argument(path +
                                    ": needs input_ids, logit_columns and a pair of "
                                    "causal.<dtype> / block_causal.<dtype> tensors");
  }
  return ref;
}

bool LogitsComparison::passed() const {
  return max_abs_diff <= tolerance * std::max(1.0, max_abs_ref);
}

double logits_tolerance(const std::string& dtype) {
  return dtype == "float32" ? 1e-4 : 3e-2;
}

at::Tensor cached_decode_logits(Qwen3LMImpl& lm, const at::Tensor& ids) {
  torch::NoGradGuard no_grad;
  const int64_t batch = ids.size(0), len = ids.size(1), bs = lm.config().block_size;
  const int64_t blocks = (len + bs - 1) / bs;
  const c10::TensorOptions options = lm.lm_head.options();
  KvCache cache(lm.config(), batch, blocks * bs + bs, options);
  at::Tensor out = at::zeros({batch, len, lm.config().vocab_size}, options.dtype(at::kFloat));

  // Prefill: a different number of whole blocks per row, padded to the longest.
  std::vector<int64_t> prefill(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    prefill[static_cast<size_t>(b)] = std::min(b % 4 + 1, len / bs) * bs;
  }
  const int64_t chunk = *std::max_element(prefill.begin(), prefill.end());
  if (chunk > 0) {
    at::Tensor logits = lm.forward_cached(ids.narrow(1, 0, chunk), prefill, cache, true);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t n = prefill[static_cast<size_t>(b)];
      if (n > 0) out[b].narrow(0, 0, n).copy_(logits[b].narrow(0, 0, n));
    }
  }
  // Decode: one block per row per forward; finished rows ride along with nothing valid.
  while (true) {
    std::vector<int64_t> valid(static_cast<size_t>(batch));
    at::Tensor block = at::zeros({batch, bs}, ids.options());
    bool any = false;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t start = cache.lengths()[static_cast<size_t>(b)];
      const int64_t n = std::max<int64_t>(0, std::min(bs, len - start));
      valid[static_cast<size_t>(b)] = n;
      if (n > 0) block[b].narrow(0, 0, n).copy_(ids[b].narrow(0, start, n));
      any = any || n > 0;
    }
    if (!any) break;
    const std::vector<int64_t> starts = cache.lengths();
    at::Tensor logits = lm.forward_cached(block, valid, cache, true);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t n = valid[static_cast<size_t>(b)];
      if (n > 0)
        out[b].narrow(0, starts[static_cast<size_t>(b)], n).copy_(logits[b].narrow(0, 0, n));
    }
  }
  return out;
}

std::vector<LogitsComparison> compare_with_reference(Qwen3LMImpl& lm,
                                                     const ReferenceLogits& reference,
                                                     const std::string& dtype) {
  torch::NoGradGuard no_grad;
  const c10::Device device = lm.lm_head.device();
  at::Tensor ids = reference.input_ids.to(device);
  at::Tensor columns = reference.logit_columns.to(device);
  const int64_t len = ids.size(1);
  auto kept = [&](const at::Tensor& logits) { return logits.index_select(-1, columns); };

  at::Tensor block = lm.forward_block_causal(ids);
  at::Tensor causal_mask = at::ones({len, len}, at::TensorOptions(device).dtype(at::kBool))
                               .tril()
                               .view({1, 1, len, len});
  at::Tensor causal =
      lm.forward(ids, at::arange(len, at::TensorOptions(device).dtype(at::kLong)), causal_mask);
  at::Tensor cached = cached_decode_logits(lm, ids);

  std::vector<LogitsComparison> rows;
  rows.push_back(compare("block_causal vs transformers 4-D mask", dtype, kept(block),
                         reference.logits.at("block_causal." + dtype)));
  rows.push_back(compare("causal vs transformers default", dtype, kept(causal),
                         reference.logits.at("causal." + dtype)));
  rows.push_back(compare("cached decode vs dice block_causal", dtype, cached, block));
  return rows;
}

std::string format_comparisons(const std::vector<LogitsComparison>& rows) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof(line), "%-40s %-9s %12s %10s %10s %8s  %s\n", "check", "dtype",
                "max|diff|", "max|ref|", "rel", "tol", "result");
  out += line;
  for (const LogitsComparison& r : rows) {
    std::snprintf(line, sizeof(line), "%-40s %-9s %12.3e %10.3f %10.2e %8.0e  %s\n",
                  r.check.c_str(), r.dtype.c_str(), r.max_abs_diff, r.max_abs_ref,
                  r.max_abs_diff / std::max(1.0, r.max_abs_ref), r.tolerance,
                  r.passed() ? "PASS" : "FAIL");
    out += line;
  }
  return out;
}

}  // namespace dice
