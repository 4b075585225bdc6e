#include "model/checkpoint/checkpoint_writer.h"

#include <boost/json.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "common/durable_file.h"

namespace dice {
namespace {

Status check_tensor(const TensorView& t) {
  size_t numel = 1;
  for (int64_t d : t.shape) {
    if (d < 0) return Status::invalid_argument("tensor '" + t.name + "': negative dimension");
    numel *= static_cast<size_t>(d);
  }
  if (numel * dtype_size(t.dtype) != t.nbytes) {
    return Status::invalid_argument("tensor '" + t.name + "': " + std::to_string(t.nbytes) +
                                    " bytes given, shape needs " +
                                    std::to_string(numel * dtype_size(t.dtype)));
  }
  if (t.nbytes > 0 && t.data == nullptr) {
    return Status::invalid_argument("tensor '" + t.name + "': no data");
  }
  return Status::ok_status();
}

// With its parents: a checkpoint folder is often named below folders no run has made yet
// (tools/up writes runs/<recipe>/models/<name> on a fresh clone).
Status make_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec) return Status::ok_status();
  return Status::io_error(dir + ": cannot create directory: " + ec.message());
}

// The durable writes' options for a file of `bytes` bytes (0: its contents' size).
DurableWriteOptions durable_options(const CheckpointWriterOptions& options, uint64_t bytes = 0) {
  DurableWriteOptions durable;
  durable.file_system = options.file_system;
  durable.min_free_bytes = options.min_free_bytes;
  durable.expected_bytes = bytes;
  return durable;
}

std::string shard_name(size_t k, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "model-%05zu-of-%05zu.safetensors", k, n);
  return buf;
}

}  // namespace

Status write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                         const std::map<std::string, std::string>& metadata,
                         const CheckpointWriterOptions& options) {
  boost::json::object header;
  boost::json::object meta;
  for (const auto& kv : metadata) meta[kv.first] = kv.second;
  meta["format"] = "pt";
  header["__metadata__"] = std::move(meta);
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const TensorView& t : tensors) {
    DICE_RETURN_IF_ERROR(check_tensor(t).with_context(path));
    if (!names.insert(t.name).second) {
      return Status::invalid_argument(path + ": tensor '" + t.name + "' given twice");
    }
    boost::json::array shape;
    for (int64_t d : t.shape) shape.push_back(d);
    header[t.name] =
        boost::json::object{{"dtype", dtype_name(t.dtype)},
                            {"shape", std::move(shape)},
                            {"data_offsets", boost::json::array{offset, offset + t.nbytes}}};
    offset += t.nbytes;
  }
  std::string text = boost::json::serialize(header);
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  FileSystem& file_system = options.file_system ? *options.file_system : posix_file_system();
  // The file's exact size, checked against the free space before its first byte.
  const uint64_t file_bytes = 8 + text.size() + offset;
  return write_file_atomically_with(
      path,
      [&](int fd) -> Status {
        uint8_t len[8];
        uint64_t n = text.size();
        for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
        DICE_RETURN_IF_ERROR(write_all(fd, len, 8, path, file_system));
        DICE_RETURN_IF_ERROR(write_all(fd, text.data(), text.size(), path, file_system));
        for (const TensorView& t : tensors) {
          DICE_RETURN_IF_ERROR(
              write_all(fd, t.data, t.nbytes, path + ": tensor '" + t.name + "'", file_system));
        }
        return Status::ok_status();
      },
      durable_options(options, file_bytes));
}

Status write_model_dir(const std::string& dir, const ModelConfig& config,
                       const std::vector<TensorView>& tensors,
                       const CheckpointWriterOptions& options) {
  DICE_RETURN_IF_ERROR(config.validate("config for " + dir));
  DICE_RETURN_IF_ERROR(make_dir(dir));
  std::string config_text = model_config_to_json(config);
  DICE_RETURN_IF_ERROR(
      write_file_atomically(dir + "/config.json", config_text, durable_options(options)));

  // Greedy sharding in the given order, as transformers does.
  std::vector<std::vector<TensorView>> shards(1);
  uint64_t shard_bytes = 0, total_bytes = 0;
  for (const TensorView& t : tensors) {
    if (!shards.back().empty() && shard_bytes + t.nbytes > options.max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(t);
    shard_bytes += t.nbytes;
    total_bytes += t.nbytes;
  }
  if (shards.size() == 1) {
    std::remove((dir + "/model.safetensors.index.json").c_str());  // a stale index would win
    return write_safetensors(dir + "/model.safetensors", tensors, {}, options);
  }
  boost::json::object weight_map;
  for (size_t k = 0; k < shards.size(); ++k) {
    std::string name = shard_name(k + 1, shards.size());
    DICE_RETURN_IF_ERROR(write_safetensors(dir + "/" + name, shards[k], {}, options));
    for (const TensorView& t : shards[k]) weight_map[t.name] = name;
  }
  boost::json::object index{{"metadata", boost::json::object{{"total_size", total_bytes}}},
                            {"weight_map", std::move(weight_map)}};
  std::string index_text = boost::json::serialize(index);
  std::string index_path = dir + "/model.safetensors.index.json";
  DICE_RETURN_IF_ERROR(write_file_atomically(index_path, index_text, durable_options(options)));
  std::remove((dir + "/model.safetensors").c_str());  // a stale single file would confuse readers
  return Status::ok_status();
}

}  // namespace dice
