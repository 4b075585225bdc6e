#include "model/checkpoint/safetensors.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cstring>
#include <utility>

namespace dice {
namespace {

struct DTypeEntry {
  DType dtype;
  const char* name;
  size_t size;
};

constexpr DTypeEntry kDTypes[] = {
    {DType::kBool, "BOOL", 1}, {DType::kU8, "U8", 1},          {DType::kI8, "I8", 1},
    {DType::kU16, "U16", 2},   {DType::kI16, "I16", 2},        {DType::kU32, "U32", 4},
    {DType::kI32, "I32", 4},   {DType::kU64, "U64", 8},        {DType::kI64, "I64", 8},
    {DType::kF16, "F16", 2},   {DType::kBF16, "BF16", 2},      {DType::kF32, "F32", 4},
    {DType::kF64, "F64", 8},   {DType::kF8E4M3, "F8_E4M3", 1}, {DType::kF8E5M2, "F8_E5M2", 1},
};

const DTypeEntry& entry(DType dtype) {
  for (const auto& e : kDTypes) {
    if (e.dtype == dtype) return e;
  }
  return kDTypes[0];  // unreachable: every enumerator is in the table
}

// A non-negative JSON integer, or false.
bool as_u64(const boost::json::value& v, uint64_t* out) {
  if (const auto* i = v.if_int64()) {
    if (*i < 0) return false;
    *out = static_cast<uint64_t>(*i);
    return true;
  }
  if (const auto* u = v.if_uint64()) {
    *out = *u;
    return true;
  }
  return false;
}

struct Span {
  uint64_t begin;
  uint64_t end;
  size_t index;
};

Status corrupt(const std::string& file_name, const std::string& what) {
  return Status::corruption(file_name + ": " + what);
}

// Reads the 8-byte little-endian header length and parses the JSON header after it.
Status parse_header(const uint8_t* bytes, size_t size, const std::string& file_name,
                    uint64_t* header_len, boost::json::value* header) {
  if (size < 8) {
    return corrupt(file_name, "file is " + std::to_string(size) +
                                  " bytes, shorter than the 8-byte header length");
  }
  *header_len = 0;
  for (int i = 7; i >= 0; --i) *header_len = (*header_len << 8) | bytes[i];
  if (*header_len > kMaxSafetensorsHeaderBytes) {
    return corrupt(file_name, "header length " + std::to_string(*header_len) +
                                  " exceeds the limit of " +
                                  std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  }
  if (*header_len > size - 8) {
    return corrupt(file_name, "header length " + std::to_string(*header_len) +
                                  " runs past the end of the " + std::to_string(size) +
                                  "-byte file (truncated?)");
  }
  const char* header_text = reinterpret_cast<const char*>(bytes + 8);
  boost::json::error_code ec;
  *header = boost::json::parse(boost::json::string_view(header_text, *header_len), ec);
  if (ec) return corrupt(file_name, "header is not valid JSON: " + ec.message());
  return Status::ok_status();
}

// The "__metadata__" entry: an object of strings.
Status parse_metadata(const boost::json::value& value, const std::string& file_name,
                      std::map<std::string, std::string>* metadata) {
  const boost::json::object* meta = value.if_object();
  if (meta == nullptr) return corrupt(file_name, "__metadata__ is not an object");
  for (const auto& m : *meta) {
    const boost::json::string* s = m.value().if_string();
    if (s == nullptr) {
      return corrupt(file_name, "__metadata__." + std::string(m.key()) + " is not a string");
    }
    (*metadata)[std::string(m.key())] = std::string(*s);
  }
  return Status::ok_status();
}

// One tensor's entry: dtype, shape and data_offsets, checked against each other and against the
// `data_size`-byte data section at `data`. Sets `info` and the tensor's byte span.
Status parse_tensor_entry(const std::string& name, const boost::json::value& value,
                          const uint8_t* data, uint64_t data_size, const std::string& file_name,
                          TensorInfo* info, Span* span) {
  auto bad = [&](const std::string& what) {
    return corrupt(file_name, "tensor '" + name + "': " + what);
  };
  const boost::json::object* t = value.if_object();
  if (t == nullptr) return bad("entry is not an object");
  info->name = name;

  const boost::json::value* dtype = t->if_contains("dtype");
  if (dtype == nullptr || !dtype->is_string()) return bad("missing string field 'dtype'");
  std::string dtype_text(dtype->get_string());
  if (!parse_dtype(dtype_text, &info->dtype)) return bad("unknown dtype '" + dtype_text + "'");

  const boost::json::value* shape = t->if_contains("shape");
  if (shape == nullptr || !shape->is_array()) return bad("missing array field 'shape'");
  uint64_t numel = 1;
  for (const auto& d : shape->get_array()) {
    uint64_t dim = 0;
    if (!as_u64(d, &dim) || dim > static_cast<uint64_t>(INT64_MAX)) {
      return bad("shape entries must be non-negative integers");
    }
    if (__builtin_mul_overflow(numel, dim, &numel)) return bad("shape overflows 64 bits");
    info->shape.push_back(static_cast<int64_t>(dim));
  }
  uint64_t expected_bytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_size(info->dtype)),
                             &expected_bytes)) {
    return bad("shape overflows 64 bits");
  }

  const boost::json::value* offsets = t->if_contains("data_offsets");
  if (offsets == nullptr || !offsets->is_array() || offsets->get_array().size() != 2) {
    return bad("missing field 'data_offsets' = [begin, end]");
  }
  uint64_t begin = 0, end = 0;
  if (!as_u64(offsets->get_array()[0], &begin) || !as_u64(offsets->get_array()[1], &end)) {
    return bad("data_offsets must be non-negative integers");
  }
  if (begin > end) {
    return bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
               "] end before begin");
  }
  if (end > data_size) {
    return bad("data_offsets end " + std::to_string(end) + " is past the " +
               std::to_string(data_size) + "-byte data section (truncated file?)");
  }
  if (end - begin != expected_bytes) {
    return bad("data_offsets span " + std::to_string(end - begin) + " bytes but " + dtype_text +
               " shape needs " + std::to_string(expected_bytes));
  }
  info->data = data + begin;
  info->nbytes = static_cast<size_t>(end - begin);
  span->begin = begin;
  span->end = end;
  return Status::ok_status();
}

// The tensors must tile the data section: sorted by offset, each starts where the last ended.
Status check_tiling(std::vector<Span>& spans, const std::vector<TensorInfo>& tensors,
                    uint64_t data_size, const std::string& file_name) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t cursor = 0;
  for (const Span& s : spans) {
    const std::string& name = tensors[s.index].name;
    if (s.begin < cursor) {
      return corrupt(file_name, "tensor '" + name + "': data_offsets [" + std::to_string(s.begin) +
                                    ", " + std::to_string(s.end) + "] overlap the previous tensor");
    }
    if (s.begin > cursor) {
      return corrupt(file_name, "tensor '" + name + "': gap of " +
                                    std::to_string(s.begin - cursor) + " bytes before its data");
    }
    cursor = s.end;
  }
  if (cursor != data_size) {
    return corrupt(file_name, std::to_string(data_size - cursor) +
                                  " bytes after the last tensor belong to no tensor");
  }
  return Status::ok_status();
}

// Sorts the tensors by name and rejects a name that appears twice.
Status sort_by_unique_name(std::vector<TensorInfo>* tensors, const std::string& file_name) {
  std::sort(tensors->begin(), tensors->end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  for (size_t i = 1; i < tensors->size(); ++i) {
    if ((*tensors)[i].name == (*tensors)[i - 1].name) {
      return corrupt(file_name, "tensor '" + (*tensors)[i].name + "' appears twice in the header");
    }
  }
  return Status::ok_status();
}

}  // namespace

bool parse_dtype(const std::string& name, DType* dtype) {
  for (const auto& e : kDTypes) {
    if (name == e.name) {
      *dtype = e.dtype;
      return true;
    }
  }
  return false;
}

const char* dtype_name(DType dtype) {
  return entry(dtype).name;
}
size_t dtype_size(DType dtype) {
  return entry(dtype).size;
}

size_t TensorInfo::numel() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

Status parse_safetensors(const uint8_t* bytes, size_t size, const std::string& file_name,
                         std::vector<TensorInfo>* tensors,
                         std::map<std::string, std::string>* metadata) {
  tensors->clear();
  metadata->clear();
  uint64_t header_len = 0;
  boost::json::value header;
  DICE_RETURN_IF_ERROR(parse_header(bytes, size, file_name, &header_len, &header));
  const boost::json::object* root = header.if_object();
  if (root == nullptr) return corrupt(file_name, "header is not a JSON object");

  const uint8_t* data = bytes + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  std::vector<Span> spans;
  for (const auto& kv : *root) {
    std::string name(kv.key());
    if (name == "__metadata__") {
      DICE_RETURN_IF_ERROR(parse_metadata(kv.value(), file_name, metadata));
      continue;
    }
    TensorInfo info;
    Span span{0, 0, tensors->size()};
    DICE_RETURN_IF_ERROR(
        parse_tensor_entry(name, kv.value(), data, data_size, file_name, &info, &span));
    spans.push_back(span);
    tensors->push_back(std::move(info));
  }
  DICE_RETURN_IF_ERROR(check_tiling(spans, *tensors, data_size, file_name));
  return sort_by_unique_name(tensors, file_name);
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  SafetensorsFile file;
  DICE_ASSIGN_OR_RETURN(file.file_, MappedFile::open(path));
  DICE_RETURN_IF_ERROR(parse_safetensors(file.file_.data(), file.file_.size(), path, &file.tensors_,
                                         &file.metadata_));
  return file;
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorInfo& t, const std::string& n) { return t.name < n; });
  if (it == tensors_.end() || it->name != name) return nullptr;
  return &*it;
}

}  // namespace dice
