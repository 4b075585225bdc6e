// libFuzzer target: the safetensors reader (8-byte header length, JSON header, data), through
// parse_safetensors, the validation SafetensorsFile::open runs on every mapped file.
//
// Checked beyond "no crash": every tensor handed out lies inside the image and holds exactly
// numel * dtype size bytes, as safetensors.h promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "model/checkpoint/safetensors.h"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<dice::TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
  if (!dice::parse_safetensors(data, size, "fuzz.safetensors", &tensors, &metadata).ok()) return 0;
  for (const dice::TensorInfo& tensor : tensors) {
    const bool inside = tensor.data >= data && tensor.data + tensor.nbytes <= data + size;
    if (!inside || tensor.nbytes != tensor.numel() * dice::dtype_size(tensor.dtype)) std::abort();
  }
  return 0;
}
