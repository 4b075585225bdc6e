#include "tasks/shape_variants.h"

#include <cctype>

namespace dice {
namespace {

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

Result<std::vector<ShapeVariant>> read_shape_variants(const boost::json::object& task,
                                                      const std::string& where) {
  std::vector<ShapeVariant> variants;
  const boost::json::value* list = task.if_contains("shape_variants");
  if (list == nullptr) return variants;
  if (!list->is_array()) {
    return Status::invalid_argument(where + ": \"shape_variants\" must be an array of objects");
  }
  for (std::size_t i = 0; i < list->get_array().size(); ++i) {
    const boost::json::value& item = list->get_array()[i];
    const std::string at = where + ": shape_variants[" + std::to_string(i) + "]";
    if (!item.is_object() || item.get_object().empty()) {
      return Status::invalid_argument(at + ": must be a non-empty object of size -> integer");
    }
    ShapeVariant variant;
    for (const auto& member : item.get_object()) {
      const std::string name(member.key());
      if (!is_identifier(name)) {
        return Status::invalid_argument(at + ": \"" + name + "\" is not a Python identifier");
      }
      const boost::json::value& v = member.value();
      if (v.is_int64()) {
        variant.emplace_back(name, v.get_int64());
      } else if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
        variant.emplace_back(name, static_cast<std::int64_t>(v.get_uint64()));
      } else {
        return Status::invalid_argument(at + ": \"" + name + "\" must be an integer, got " +
                                        boost::json::serialize(v).substr(0, 40));
      }
    }
    variants.push_back(std::move(variant));
  }
  return variants;
}

boost::json::value shape_variants_json(const std::vector<ShapeVariant>& variants) {
  if (variants.empty()) return nullptr;
  boost::json::array list;
  for (const ShapeVariant& variant : variants) {
    boost::json::object sizes;
    for (const auto& [name, value] : variant) sizes[name] = value;
    list.push_back(std::move(sizes));
  }
  return list;
}

void set_shape_variants(const std::vector<ShapeVariant>& variants, schema::Task::Builder task) {
  auto list = task.initShapeVariants(static_cast<unsigned>(variants.size()));
  for (unsigned i = 0; i < variants.size(); ++i) {
    auto sizes = list[i].initSizes(static_cast<unsigned>(variants[i].size()));
    for (unsigned j = 0; j < variants[i].size(); ++j) {
      sizes[j].setName(variants[i][j].first);
      sizes[j].setValue(variants[i][j].second);
    }
  }
}

std::vector<std::string> shape_variant_args(schema::Task::Reader task) {
  std::vector<std::string> args;
  for (auto variant : task.getShapeVariants()) {
    std::string arg;
    for (auto size : variant.getSizes()) {
      arg += (arg.empty() ? "" : ",") + std::string(size.getName().cStr()) + "=" +
             std::to_string(size.getValue());
    }
    if (!arg.empty()) args.push_back(std::move(arg));
  }
  return args;
}

}  // namespace dice
