#include "model/checkpoint/checkpoint.h"

#include <sys/stat.h>

#include <boost/json.hpp>
#include <set>

#include "common/read_file.h"

namespace dice {
namespace {

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// weight_map of an index file: tensor name -> shard file name (relative to the directory).
Result<std::map<std::string, std::string>> read_index(const std::string& path) {
  DICE_ASSIGN_OR_RETURN(std::string text, read_file(path));
  boost::json::error_code ec;
  boost::json::value root = boost::json::parse(text, ec);
  if (ec) return Status::corruption(path + ": not valid JSON: " + ec.message());
  const boost::json::object* object = root.if_object();
  const boost::json::value* map = object ? object->if_contains("weight_map") : nullptr;
  if (map == nullptr || !map->is_object()) {
    return Status::corruption(path + ": key 'weight_map': missing or not an object");
  }
  std::map<std::string, std::string> weight_map;
  for (const auto& kv : map->get_object()) {
    const boost::json::string* shard = kv.value().if_string();
    if (shard == nullptr) {
      return Status::corruption(path + ": key 'weight_map." + std::string(kv.key()) +
                                "': expected a file name");
    }
    std::string name(*shard);
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      return Status::corruption(path + ": key 'weight_map." + std::string(kv.key()) + "': '" +
                                name + "' is not a file in the model directory");
    }
    weight_map[std::string(kv.key())] = name;
  }
  if (weight_map.empty()) return Status::corruption(path + ": weight_map is empty");
  return weight_map;
}

}  // namespace

Result<Checkpoint> Checkpoint::open(const std::string& dir) {
  Checkpoint ckpt;
  ckpt.dir_ = dir;
  DICE_ASSIGN_OR_RETURN(ckpt.config_, read_model_config(dir + "/config.json"));

  const std::string index_path = dir + "/model.safetensors.index.json";
  const std::string single_path = dir + "/model.safetensors";
  if (file_exists(index_path)) {
    DICE_ASSIGN_OR_RETURN(auto weight_map, read_index(index_path));
    std::set<std::string> shards;
    for (const auto& kv : weight_map) shards.insert(kv.second);
    for (const std::string& shard : shards) {
      DICE_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(dir + "/" + shard));
      ckpt.files_.push_back(std::make_unique<SafetensorsFile>(std::move(file)));
      const SafetensorsFile& f = *ckpt.files_.back();
      for (const TensorInfo& t : f.tensors()) {
        auto it = weight_map.find(t.name);
        if (it == weight_map.end() || it->second != shard) {
          return Status::corruption(f.path() + ": tensor '" + t.name + "' is not mapped to this " +
                                    "shard by " + index_path);
        }
        ckpt.tensors_[t.name] = &t;
        ckpt.file_of_[t.name] = f.path();
      }
    }
    for (const auto& kv : weight_map) {
      if (ckpt.tensors_.count(kv.first) == 0) {
        return Status::corruption(index_path + ": tensor '" + kv.first + "' is mapped to " +
                                  kv.second + ", which does not contain it");
      }
    }
  } else if (file_exists(single_path)) {
    DICE_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(single_path));
    ckpt.files_.push_back(std::make_unique<SafetensorsFile>(std::move(file)));
    for (const TensorInfo& t : ckpt.files_.back()->tensors()) {
      ckpt.tensors_[t.name] = &t;
      ckpt.file_of_[t.name] = single_path;
    }
  } else {
    return Status::not_found(dir + ": neither model.safetensors nor model.safetensors.index.json");
  }
  return ckpt;
}

const TensorInfo* Checkpoint::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : it->second;
}

std::string Checkpoint::file_of(const std::string& name) const {
  auto it = file_of_.find(name);
  return it == file_of_.end() ? dir_ : it->second;
}

}  // namespace dice
