#include "learner/curriculum/sft_data.h"

#include "common/json/json_file.h"
#include "model/tokenizer/chat_template.h"

namespace dice {
namespace {

namespace json = boost::json;

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

// A fenced code block as the model answers (the reward service extracts the first one).
std::string fenced(const std::string& code) {
  return "```python\n" + code + (!code.empty() && code.back() == '\n' ? "" : "\n") + "```";
}

// The prompt and response texts of a text item: a phase-2 pair, a phase-1 task with its core,
// or a prompt and response as they are.
Result<std::pair<std::string, std::string>> text_item(
    const json::object& entry, const std::map<TaskKind, PromptTemplate>& templates,
    const std::string& id, const std::string& where) {
  if (entry.contains("pytorch_code")) {
    PromptFields fields;
    DICE_ASSIGN_OR_RETURN(fields.reference, json_string_member(entry, "pytorch_code", true, where));
    fields.task_id = id;
    const bool infill = entry.contains("middle");
    std::string code;
    if (infill) {
      DICE_ASSIGN_OR_RETURN(fields.prefix, json_string_member(entry, "prefix", true, where));
      DICE_ASSIGN_OR_RETURN(fields.suffix, json_string_member(entry, "suffix", true, where));
      DICE_ASSIGN_OR_RETURN(code, json_string_member(entry, "middle", true, where));
      if (code.empty()) return Status::invalid_argument(where + ": \"middle\" is empty");
    } else {
      DICE_ASSIGN_OR_RETURN(code, json_string_member(entry, "cuda_code", true, where));
      if (code.empty()) return Status::invalid_argument(where + ": \"cuda_code\" is empty");
    }
    auto kind = templates.find(infill ? TaskKind::kInfill : TaskKind::kEndToEnd);
    if (kind == templates.end()) {
      return Status::internal(where + ": no prompt template for the item's kind");
    }
    return std::make_pair(kind->second.render(fields), fenced(code));
  }
  if (entry.contains("prompt")) {
    DICE_ASSIGN_OR_RETURN(std::string prompt, json_string_member(entry, "prompt", true, where));
    DICE_ASSIGN_OR_RETURN(std::string response, json_string_member(entry, "response", true, where));
    return std::make_pair(std::move(prompt), std::move(response));
  }
  return Status::invalid_argument(where +
                                  ": expected pytorch_code + cuda_code, pytorch_code + prefix + "
                                  "middle + suffix, prompt + response, or prompt_ids + "
                                  "response_ids");
}

}  // namespace

Result<SftData> load_sft_data(const std::string& path, const tokenizer::Tokenizer* tokenizer,
                              const std::map<TaskKind, PromptTemplate>& templates,
                              std::int64_t max_length, std::int64_t vocab_size,
                              std::int64_t mask_token_id) {
  Result<json::value> parsed = read_json_file(path);
  if (!parsed.ok()) return parsed.status().with_context("SFT data");
  const json::value root = std::move(parsed).value();
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
      DICE_ASSIGN_OR_RETURN(auto text, text_item(entry, templates, sample.id, where));
      const auto& [prompt, response] = text;
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
