// Reading safetensors files: the weight format of Hugging Face checkpoints.
//
//   +-------------------+---------------------------------+------------------------------+
//   | N: uint64 LE (8B) | header: N bytes of UTF-8 JSON    | data: the tensors' raw bytes |
//   +-------------------+---------------------------------+------------------------------+
//   header = {"__metadata__": {"format": "pt", ...},            (optional, string -> string)
//             "<tensor name>": {"dtype": "BF16", "shape": [d0, d1, ...],
//                               "data_offsets": [begin, end]}, ...}
//   Offsets are relative to the start of the data section; tensors are row-major, little-endian.
//   The header may be padded with trailing spaces (writers align the data to 8 bytes).
//
// Everything is validated before a tensor is handed out, as the reference implementation does:
// the header fits in the file, every dtype is known, end - begin == prod(shape) * dtype size,
// and the tensors tile the data section exactly (no overlap, no gap, no trailing bytes), so a
// truncated file or a header that lies is a Status::corruption naming the file and the tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/checkpoint/mapped_file.h"

namespace dice {

// Element types a safetensors header can name.
enum class DType {
  kBool,
  kU8,
  kI8,
  kU16,
  kI16,
  kU32,
  kI32,
  kU64,
  kI64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kF8E4M3,
  kF8E5M2
};

// "BF16" -> kBF16; false for names safetensors does not define.
bool parse_dtype(const std::string& name, DType* dtype);
// kBF16 -> "BF16", the spelling in headers.
const char* dtype_name(DType dtype);
// Bytes per element.
size_t dtype_size(DType dtype);

// One tensor of a safetensors file; `data` points into the file's memory map.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
  size_t numel() const;
};

// Largest header accepted, as in the reference implementation (100 MB); a bigger length field
// means a damaged or hostile file, not a real checkpoint.
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// Parses and validates a whole safetensors image (the 8-byte length, header and data) held in
// memory; `file_name` names it in errors. Tensors come back sorted by name, pointing into
// `bytes`. Exposed so tests can feed crafted images without touching the disk.
Status parse_safetensors(const uint8_t* bytes, size_t size, const std::string& file_name,
                         std::vector<TensorInfo>* tensors,
                         std::map<std::string, std::string>* metadata);

// A memory-mapped, validated safetensors file. Tensor data stays valid while the object lives.
class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // nullptr when the file has no tensor of that name.
  const TensorInfo* find(const std::string& name) const;

 private:
  MappedFile file_;
  std::vector<TensorInfo> tensors_;  // sorted by name
  std::map<std::string, std::string> metadata_;
};

}  // namespace dice
