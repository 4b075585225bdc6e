#include "model/checkpoint/model_config.h"

#include <boost/json.hpp>
#include <cmath>

#include "common/read_file.h"

namespace dice {
namespace {

const char* kind_name(const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null:
      return "null";
    case boost::json::kind::bool_:
      return "bool";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
      return "integer";
    case boost::json::kind::double_:
      return "number";
    case boost::json::kind::string:
      return "string";
    case boost::json::kind::array:
      return "array";
    case boost::json::kind::object:
      return "object";
  }
  return "value";
}

// Reads typed keys of one JSON object, naming file and key in every error.
class Fields {
 public:
  Fields(const boost::json::object& object, std::string file, std::string prefix = "")
      : object_(object), file_(std::move(file)), prefix_(std::move(prefix)) {}

  Status error(const std::string& key, const std::string& what) const {
    return Status::invalid_argument(file_ + ": key '" + prefix_ + key + "': " + what);
  }
  const boost::json::value* find(const std::string& key) const {
    const boost::json::value* v = object_.if_contains(key);
    return v == nullptr || v->is_null() ? nullptr : v;
  }

  // An integer; `required` makes absence an error, else `out` keeps its default.
  Status get_int(const std::string& key, bool required, int64_t* out) const {
    const boost::json::value* v = find(key);
    if (v == nullptr) return required ? error(key, "missing (required)") : Status::ok_status();
    if (const auto* i = v->if_int64()) {
      *out = *i;
    } else if (const auto* u = v->if_uint64()) {
      if (*u > static_cast<uint64_t>(INT64_MAX)) return error(key, "integer out of range");
      *out = static_cast<int64_t>(*u);
    } else {
      return error(key, std::string("expected an integer, got ") + kind_name(*v));
    }
    return Status::ok_status();
  }
  Status get_double(const std::string& key, double* out) const {
    const boost::json::value* v = find(key);
    if (v == nullptr) return Status::ok_status();
    if (!v->is_number()) return error(key, std::string("expected a number, got ") + kind_name(*v));
    *out = v->to_number<double>();
    return Status::ok_status();
  }
  Status get_bool(const std::string& key, bool* out) const {
    const boost::json::value* v = find(key);
    if (v == nullptr) return Status::ok_status();
    if (!v->is_bool()) return error(key, std::string("expected true/false, got ") + kind_name(*v));
    *out = v->get_bool();
    return Status::ok_status();
  }
  Status get_string(const std::string& key, std::string* out) const {
    const boost::json::value* v = find(key);
    if (v == nullptr) return Status::ok_status();
    if (!v->is_string()) return error(key, std::string("expected a string, got ") + kind_name(*v));
    *out = std::string(v->get_string());
    return Status::ok_status();
  }

 private:
  const boost::json::object& object_;
  std::string file_;
  std::string prefix_;
};

// RoPE variants other than the plain one change positions' math; refuse them instead of
// silently computing something else.
Status check_rope_type(const Fields& fields, const std::string& key) {
  std::string type = "default";
  DICE_RETURN_IF_ERROR(fields.get_string(key, &type));
  if (type != "default") return fields.error(key, "rope type '" + type + "' is not supported");
  return Status::ok_status();
}

// The key path of the first number in `value` that overflowed to infinity ("" when none):
// JSON has no infinity, so a file holding one could not be written back. Recursion is bounded by
// Boost.JSON's parse depth limit.
std::string first_infinite_number(const boost::json::value& value, const std::string& path) {
  if (const double* number = value.if_double()) return std::isfinite(*number) ? "" : path;
  std::string found;
  if (const boost::json::object* object = value.if_object()) {
    for (auto it = object->begin(); it != object->end() && found.empty(); ++it) {
      const std::string key(it->key());
      found = first_infinite_number(it->value(), path.empty() ? key : path + "." + key);
    }
  } else if (const boost::json::array* array = value.if_array()) {
    for (std::size_t i = 0; i < array->size() && found.empty(); ++i) {
      found = first_infinite_number((*array)[i], path + "[" + std::to_string(i) + "]");
    }
  }
  return found;
}

}  // namespace

Status ModelConfig::validate(const std::string& where) const {
  auto positive = [&](const char* key, int64_t v) {
    return v > 0 ? Status::ok_status()
                 : Status::invalid_argument(where + ": key '" + key + "': must be > 0, got " +
                                            std::to_string(v));
  };
  DICE_RETURN_IF_ERROR(positive("vocab_size", vocab_size));
  DICE_RETURN_IF_ERROR(positive("hidden_size", hidden_size));
  DICE_RETURN_IF_ERROR(positive("intermediate_size", intermediate_size));
  DICE_RETURN_IF_ERROR(positive("num_hidden_layers", num_hidden_layers));
  DICE_RETURN_IF_ERROR(positive("num_attention_heads", num_attention_heads));
  DICE_RETURN_IF_ERROR(positive("num_key_value_heads", num_key_value_heads));
  DICE_RETURN_IF_ERROR(positive("head_dim", head_dim));
  DICE_RETURN_IF_ERROR(positive("block_size", block_size));
  DICE_RETURN_IF_ERROR(positive("max_position_embeddings", max_position_embeddings));
  if (num_attention_heads % num_key_value_heads != 0) {
    return Status::invalid_argument(
        where + ": key 'num_key_value_heads': " + std::to_string(num_key_value_heads) +
        " does not divide num_attention_heads " + std::to_string(num_attention_heads));
  }
  if (head_dim % 2 != 0) {
    return Status::invalid_argument(where + ": key 'head_dim': RoPE needs an even head_dim, got " +
                                    std::to_string(head_dim));
  }
  if (mask_token_id < 0 || mask_token_id >= vocab_size) {
    return Status::invalid_argument(
        where + ": key 'mask_token_id': " + std::to_string(mask_token_id) +
        " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
  }
  // Finite too: a JSON number past the double range reads as infinity.
  auto finite_positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (!finite_positive(rms_norm_eps) || !finite_positive(rope_theta)) {
    return Status::invalid_argument(
        where + ": keys 'rms_norm_eps' and 'rope_theta' must be finite and > 0");
  }
  return Status::ok_status();
}

Result<ModelConfig> parse_model_config(const std::string& json_text, const std::string& file_name) {
  boost::json::error_code ec;
  boost::json::value root = boost::json::parse(json_text, ec);
  if (ec) return Status::invalid_argument(file_name + ": not valid JSON: " + ec.message());
  const boost::json::object* object = root.if_object();
  if (object == nullptr) return Status::invalid_argument(file_name + ": not a JSON object");
  Fields f(*object, file_name);
  const std::string infinite = first_infinite_number(root, "");
  if (!infinite.empty()) return f.error(infinite, "number out of range");

  ModelConfig c;
  c.source_json = json_text;
  DICE_RETURN_IF_ERROR(f.get_int("vocab_size", true, &c.vocab_size));
  DICE_RETURN_IF_ERROR(f.get_int("hidden_size", true, &c.hidden_size));
  DICE_RETURN_IF_ERROR(f.get_int("intermediate_size", true, &c.intermediate_size));
  DICE_RETURN_IF_ERROR(f.get_int("num_hidden_layers", true, &c.num_hidden_layers));
  DICE_RETURN_IF_ERROR(f.get_int("num_attention_heads", true, &c.num_attention_heads));
  c.num_key_value_heads = c.num_attention_heads;
  DICE_RETURN_IF_ERROR(f.get_int("num_key_value_heads", false, &c.num_key_value_heads));
  if (c.num_attention_heads > 0) c.head_dim = c.hidden_size / c.num_attention_heads;
  DICE_RETURN_IF_ERROR(f.get_int("head_dim", false, &c.head_dim));
  DICE_RETURN_IF_ERROR(f.get_double("rms_norm_eps", &c.rms_norm_eps));
  DICE_RETURN_IF_ERROR(f.get_int("max_position_embeddings", false, &c.max_position_embeddings));
  DICE_RETURN_IF_ERROR(f.get_bool("tie_word_embeddings", &c.tie_word_embeddings));
  DICE_RETURN_IF_ERROR(f.get_int("block_size", true, &c.block_size));
  DICE_RETURN_IF_ERROR(f.get_int("mask_token_id", true, &c.mask_token_id));
  // transformers 4 writes torch_dtype, transformers 5 writes dtype.
  DICE_RETURN_IF_ERROR(f.get_string("torch_dtype", &c.dtype));
  DICE_RETURN_IF_ERROR(f.get_string("dtype", &c.dtype));

  // RoPE base: top-level rope_theta (transformers 4) or rope_parameters.rope_theta (5).
  DICE_RETURN_IF_ERROR(f.get_double("rope_theta", &c.rope_theta));
  if (const boost::json::value* rp = f.find("rope_parameters")) {
    if (!rp->is_object()) return f.error("rope_parameters", "expected an object");
    Fields rope(rp->get_object(), file_name, "rope_parameters.");
    DICE_RETURN_IF_ERROR(rope.get_double("rope_theta", &c.rope_theta));
    DICE_RETURN_IF_ERROR(check_rope_type(rope, "rope_type"));
  }
  if (const boost::json::value* rs = f.find("rope_scaling")) {
    if (!rs->is_object()) return f.error("rope_scaling", "expected an object or null");
    Fields scaling(rs->get_object(), file_name, "rope_scaling.");
    DICE_RETURN_IF_ERROR(check_rope_type(scaling, "rope_type"));
    DICE_RETURN_IF_ERROR(check_rope_type(scaling, "type"));
  }

  // Architecture switches this model does not implement.
  bool flag = false;
  DICE_RETURN_IF_ERROR(f.get_bool("attention_bias", &flag));
  if (flag) return f.error("attention_bias", "true is not supported (Qwen3 has no biases)");
  flag = false;
  DICE_RETURN_IF_ERROR(f.get_bool("use_sliding_window", &flag));
  if (flag) return f.error("use_sliding_window", "true is not supported");
  std::string act = "silu";
  DICE_RETURN_IF_ERROR(f.get_string("hidden_act", &act));
  if (act != "silu") return f.error("hidden_act", "'" + act + "' is not supported (only silu)");

  DICE_RETURN_IF_ERROR(c.validate(file_name));
  return c;
}

Result<ModelConfig> read_model_config(const std::string& path) {
  DICE_ASSIGN_OR_RETURN(std::string text, read_file(path));
  return parse_model_config(text, path);
}

std::string model_config_to_json(const ModelConfig& config) {
  boost::json::object out;
  if (!config.source_json.empty()) {
    boost::json::error_code ec;
    boost::json::value source = boost::json::parse(config.source_json, ec);
    if (!ec && source.is_object()) out = source.get_object();
  }
  if (!out.contains("model_type")) out["model_type"] = "qwen3";
  if (!out.contains("architectures")) out["architectures"] = boost::json::array{"Qwen3ForCausalLM"};
  out["vocab_size"] = config.vocab_size;
  out["hidden_size"] = config.hidden_size;
  out["intermediate_size"] = config.intermediate_size;
  out["num_hidden_layers"] = config.num_hidden_layers;
  out["num_attention_heads"] = config.num_attention_heads;
  out["num_key_value_heads"] = config.num_key_value_heads;
  out["head_dim"] = config.head_dim;
  out["rms_norm_eps"] = config.rms_norm_eps;
  out["max_position_embeddings"] = config.max_position_embeddings;
  out["tie_word_embeddings"] = config.tie_word_embeddings;
  out["block_size"] = config.block_size;
  out["mask_token_id"] = config.mask_token_id;
  out["hidden_act"] = "silu";
  out["attention_bias"] = false;
  out["use_sliding_window"] = false;
  out["rope_theta"] = config.rope_theta;
  // Both spellings, so transformers 4 (rope_theta) and 5 (rope_parameters) read the same base.
  out["rope_parameters"] =
      boost::json::object{{"rope_type", "default"}, {"rope_theta", config.rope_theta}};
  out["rope_scaling"] = nullptr;
  out["torch_dtype"] = config.dtype;
  out["dtype"] = config.dtype;
  return boost::json::serialize(out);
}

}  // namespace dice
