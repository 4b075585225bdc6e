#include "learner/sft_data.h"

#include "common/tokenizer/chat_template.h"
#include "learner/json_file.h"

namespace dice {
namespace {

struct Limits {
  std::int64_t vocab_size;
  std::int64_t mask_token_id;
};

Result<std::vector<std::int64_t>> id_list(const json::object& entry, const char* key,
                                          const Limits& limits, const std::string& where) {
  const json::value* value = entry.if_contains(key);
  if (value == nullptr || !value->is_array()) {
    return Status::invalid_argument(where + ": \"" + key + "\" must be an array of token ids");
  }
  std::vector<std::int64_t> ids;
  for (const json::value& v : value->get_array()) {
    const std::int64_t id = v.is_uint64()  ? static_cast<std::int64_t>(v.get_uint64())
                            : v.is_int64() ? v.get_int64()
                                           : -1;
    if (id < 0 || id >= limits.vocab_size || id == limits.mask_token_id) {
      return Status::invalid_argument(
          where + ": \"" + key + "\"[" + std::to_string(ids.size()) +
          "] = " + json::serialize(v).substr(0, 20) + " is not a token id of the model (0.." +
          std::to_string(limits.vocab_size - 1) + ", not the mask token)");
    }
    ids.push_back(id);
  }
  return ids;
}

}  // namespace

Result<SftData> load_sft_data(const std::string& path, const tokenizer::Tokenizer* tokenizer,
                              const PromptTemplate& end_to_end, std::int64_t max_length,
                              std::int64_t vocab_size, std::int64_t mask_token_id) {
  DICE_ASSIGN_OR_RETURN(json::value root, parse_json_file(path, "SFT data"));
  if (!root.is_array()) {
    return Status::invalid_argument("SFT data " + path + ": expected a JSON array of items");
  }
  const Limits limits{vocab_size, mask_token_id};
  SftData data;
  const json::array& items = root.get_array();
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::string where = "SFT data " + path + ": item " + std::to_string(i);
    if (!items[i].is_object()) return Status::invalid_argument(where + ": not an object");
    const json::object& entry = items[i].get_object();
    SftSample sample;
    sample.id = std::to_string(i);
    for (const char* key : {"id", "idx"}) {
      if (const json::value* id = entry.if_contains(key)) {
        sample.id = id->is_string() ? std::string(id->get_string().c_str()) : json::serialize(*id);
        where += " (" + std::string(key) + " " + sample.id + ")";
        break;
      }
    }
    if (entry.contains("prompt_ids")) {
      DICE_ASSIGN_OR_RETURN(sample.prompt, id_list(entry, "prompt_ids", limits, where));
      DICE_ASSIGN_OR_RETURN(sample.response, id_list(entry, "response_ids", limits, where));
    } else {
      std::string prompt, response;
      if (entry.contains("pytorch_code")) {
        DICE_ASSIGN_OR_RETURN(std::string reference,
                              string_field(entry, "pytorch_code", true, where));
        DICE_ASSIGN_OR_RETURN(std::string code, string_field(entry, "cuda_code", true, where));
        if (code.empty()) return Status::invalid_argument(where + ": \"cuda_code\" is empty");
        PromptFields fields;
        fields.reference = reference;
        fields.task_id = sample.id;
        prompt = end_to_end.render(fields);
        response = "```python\n" + code + (code.back() == '\n' ? "" : "\n") + "```";
      } else if (entry.contains("prompt")) {
        DICE_ASSIGN_OR_RETURN(prompt, string_field(entry, "prompt", true, where));
        DICE_ASSIGN_OR_RETURN(response, string_field(entry, "response", true, where));
      } else {
        return Status::invalid_argument(
            where +
            ": expected pytorch_code + cuda_code, prompt + response, or prompt_ids + "
            "response_ids");
      }
      if (tokenizer == nullptr) {
        return Status::invalid_argument(where + ": a text item needs the model's tokenizer.json");
      }
      DICE_ASSIGN_OR_RETURN(sample.prompt, tokenizer::encode_user_turn(*tokenizer, prompt));
      std::vector<std::int32_t> ids = tokenizer->encode(response + "<|im_end|>");
      sample.response.assign(ids.begin(), ids.end());
      for (const std::int64_t id : sample.response) {
        if (id >= vocab_size || id == mask_token_id) {
          return Status::invalid_argument(where + ": the tokenizer gave id " + std::to_string(id) +
                                          ", which the model does not have");
        }
      }
    }
    if (sample.prompt.empty() || sample.response.empty()) {
      return Status::invalid_argument(where + ": empty prompt or response");
    }
    if (static_cast<std::int64_t>(sample.prompt.size() + sample.response.size()) > max_length) {
      ++data.too_long;
      continue;
    }
    data.samples.push_back(std::move(sample));
  }
  return data;
}

}  // namespace dice
