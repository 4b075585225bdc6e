#include "tools/dice-data/sft_pairs.h"

#include <boost/json.hpp>
#include <cmath>
#include <map>

#include "common/hash/content_hash.h"
#include "tools/dice-data/item_file.h"

namespace dice::data {
namespace {

namespace json = boost::json;

// Errors listed in one message before the rest are only counted.
constexpr std::size_t kMaxListed = 20;

// An integral JSON number as decimal text; "" for anything else.
std::string integer_text(const json::value& v) {
  if (v.is_int64()) return std::to_string(v.get_int64());
  if (v.is_uint64()) return std::to_string(v.get_uint64());
  if (v.is_double() && std::floor(v.get_double()) == v.get_double() &&
      std::fabs(v.get_double()) < 1e15)
    return std::to_string(static_cast<long long>(v.get_double()));
  return "";
}

// "id" or "idx" as text; "" with `*error` set for one of another type, "" alone for neither.
std::string item_id(const json::object& o, std::string* error) {
  for (const char* key : {"id", "idx"}) {
    const json::value* v = o.if_contains(key);
    if (v == nullptr) continue;
    if (v->is_string() && !v->get_string().empty()) return std::string(v->get_string());
    std::string text = integer_text(*v);
    if (text.empty())
      *error = std::string("\"") + key + "\" must be a non-empty string or an integer";
    return text;
  }
  return "";
}

// The string member `key`, non-empty; "" with `*error` set otherwise.
std::string code_field(const json::object& o, const char* key, std::string* error) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) {
    *error = std::string("\"") + key + "\" is missing";
  } else if (!v->is_string()) {
    *error = std::string("\"") + key + "\" is not a string";
  } else if (v->get_string().empty()) {
    *error = std::string("\"") + key + "\" is empty";
  } else {
    return std::string(v->get_string());
  }
  return "";
}

std::string pair_hash(const SftPair& pair) {
  std::string shapes;
  for (const ShapeVariant& variant : pair.shape_variants) {
    for (const auto& [name, value] : variant) shapes += name + "=" + std::to_string(value) + ",";
    shapes += ";";
  }
  return content_hash_hex_parts({pair.pytorch_code, pair.cuda_code, shapes});
}

}  // namespace

Result<std::vector<SftPair>> parse_sft_pairs(std::string_view text, const std::string& where) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return Status::invalid_argument(where + ": empty file: no pairs");
  DICE_ASSIGN_OR_RETURN(const ItemFile file, read_item_file(text, where));
  if (file.items.empty()) return Status::invalid_argument(where + ": no pairs in the file");
  std::vector<SftPair> pairs;
  std::vector<std::string> errors;
  std::map<std::string, std::size_t> seen_ids;
  for (std::size_t index = 0; index < file.items.size(); ++index) {
    const FileItem& item = file.items[index];
    std::string name = item.at + ": item " + std::to_string(index);
    if (!item.value.is_object()) {
      errors.push_back(name + ": not a JSON object");
      continue;
    }
    const json::object& o = item.value.get_object();
    std::string error;
    SftPair pair;
    pair.id = item_id(o, &error);
    if (!error.empty()) {
      errors.push_back(name + ": " + error);
      continue;
    }
    if (!pair.id.empty()) name += " (id " + pair.id + ")";
    if (pair.id.empty()) pair.id = "item-" + std::to_string(index);
    if (const json::value* level = o.if_contains("level")) {
      pair.level = level->is_string() ? std::string(level->get_string()) : integer_text(*level);
      if (pair.level.empty() && !level->is_string()) {
        errors.push_back(name + ": \"level\" must be a string or an integer");
        continue;
      }
    }
    for (auto [key, field] :
         {std::pair{"pytorch_code", &pair.pytorch_code}, std::pair{"cuda_code", &pair.cuda_code}}) {
      if (error.empty()) *field = code_field(o, key, &error);
    }
    if (!error.empty()) {
      errors.push_back(name + ": " + error);
      continue;
    }
    auto shapes = read_shape_variants(o, name);
    if (!shapes.ok()) {
      errors.push_back(shapes.status().message());
      continue;
    }
    pair.shape_variants = std::move(shapes).value();
    const auto [earlier, fresh] = seen_ids.emplace(pair.id, index);
    if (!fresh) {
      errors.push_back(name + ": the id of item " + std::to_string(earlier->second) +
                       " again (ids name verdicts, so each must be unique)");
      continue;
    }
    pair.hash = pair_hash(pair);
    pairs.push_back(std::move(pair));
  }
  if (!errors.empty()) {
    std::string message = where + ": " + std::to_string(errors.size()) + " of " +
                          std::to_string(file.items.size()) + " items are not pairs:";
    for (std::size_t i = 0; i < errors.size() && i < kMaxListed; ++i) message += "\n  " + errors[i];
    if (errors.size() > kMaxListed)
      message += "\n  ... and " + std::to_string(errors.size() - kMaxListed) + " more";
    return Status::invalid_argument(message);
  }
  return pairs;
}

JudgeItem judge_item(const SftPair& pair) {
  JudgeItem item;
  item.id = pair.id;
  item.reference = pair.pytorch_code;
  item.full_source = pair.cuda_code;
  item.shape_variants = pair.shape_variants;
  return item;
}

}  // namespace dice::data
