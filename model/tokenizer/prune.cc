#include "model/tokenizer/prune.h"

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "model/tokenizer/tokenizer.h"

namespace dice::tokenizer {
namespace {

namespace json = boost::json;

// The two parts of a merge entry: "a b" (older files) or ["a", "b"].
bool merge_parts(const json::value& entry, std::string* a, std::string* b) {
  if (entry.is_array() && entry.get_array().size() == 2 && entry.get_array()[0].is_string() &&
      entry.get_array()[1].is_string()) {
    *a = std::string(entry.get_array()[0].get_string());
    *b = std::string(entry.get_array()[1].get_string());
    return true;
  }
  if (entry.is_string()) {
    const std::string text(entry.get_string());
    const auto space = text.find(' ');
    if (space == std::string::npos) return false;
    *a = text.substr(0, space);
    *b = text.substr(space + 1);
    return true;
  }
  return false;
}

// One UTF-8 code point: a byte-level BPE's base tokens are exactly those.
bool one_code_point(const std::string& s) {
  if (s.empty()) return false;
  const auto c = static_cast<unsigned char>(s[0]);
  const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
  return s.size() == n;
}

// The BPE model of a tokenizer.json: its vocabulary both ways and what each merge makes.
struct BpeTables {
  std::unordered_map<std::string, std::int64_t> vocab;
  std::vector<const std::string*> token_of;  // by id; points into vocab
  std::unordered_map<std::string, std::pair<std::string, std::string>> made_from;
};

Status read_bpe(json::object& model, const std::string& origin, BpeTables* out) {
  for (const auto& [token, id] : model["vocab"].get_object()) {
    if (!id.is_int64() || id.get_int64() < 0 || id.get_int64() > kMaxTokenId) {
      return Status::invalid_argument(origin + ": model.vocab ids must be integers in [0, " +
                                      std::to_string(kMaxTokenId) + "]");
    }
    out->vocab.emplace(std::string(token), id.get_int64());
  }
  for (const auto& [token, id] : out->vocab) {
    if (out->token_of.size() <= static_cast<std::size_t>(id)) out->token_of.resize(id + 1, nullptr);
    out->token_of[static_cast<std::size_t>(id)] = &token;
  }
  for (const json::value& entry : model["merges"].get_array()) {
    std::string a, b;
    if (!merge_parts(entry, &a, &b)) return Status::invalid_argument(origin + ": a bad merge");
    out->made_from.emplace(a + b, std::make_pair(a, b));
  }
  return Status::ok_status();
}

// The tokens to keep: used by the texts, the base bytes, and the parts they are merged from
// (a merge that makes a kept token must still apply, so its parts must exist).
std::set<std::string> kept_tokens(const BpeTables& bpe, const Tokenizer& source,
                                  const std::vector<std::string>& texts) {
  std::vector<std::string> stack;
  for (const auto& [token, id] : bpe.vocab) {
    if (one_code_point(token)) stack.push_back(token);
  }
  for (const std::string& text : texts) {
    for (std::int32_t id : source.encode(text)) {
      const auto i = static_cast<std::size_t>(id);
      if (i < bpe.token_of.size() && bpe.token_of[i] != nullptr) stack.push_back(*bpe.token_of[i]);
    }
  }
  std::set<std::string> kept;
  while (!stack.empty()) {
    std::string token = std::move(stack.back());
    stack.pop_back();
    if (!bpe.vocab.count(token) || !kept.insert(token).second) continue;
    auto parts = bpe.made_from.find(token);
    if (parts != bpe.made_from.end()) {
      stack.push_back(parts->second.first);
      stack.push_back(parts->second.second);
    }
  }
  return kept;
}

// Replaces model.vocab and model.merges by the kept tokens, numbered from 0 in their old order,
// and the merges among them; out->source_ids gets each new id's old one.
void rewrite_bpe(const BpeTables& bpe, const std::set<std::string>& kept, json::object& model,
                 PrunedTokenizer* out) {
  std::vector<std::pair<std::int64_t, std::string>> by_id;
  for (const std::string& token : kept) by_id.emplace_back(bpe.vocab.at(token), token);
  std::sort(by_id.begin(), by_id.end());
  json::object new_vocab;
  for (const auto& [old_id, token] : by_id) {
    new_vocab[token] = static_cast<std::int64_t>(out->source_ids.size());
    out->source_ids.push_back(static_cast<std::int32_t>(old_id));
  }
  json::array new_merges;
  for (const json::value& entry : model["merges"].get_array()) {
    std::string a, b;
    merge_parts(entry, &a, &b);
    if (kept.count(a) && kept.count(b) && kept.count(a + b)) new_merges.push_back(entry);
  }
  model["vocab"] = std::move(new_vocab);
  model["merges"] = std::move(new_merges);
}

// The source's added token with this content; nullptr when it has none.
const json::value* added_token(const json::object& root, const std::string& content) {
  const json::value* list = root.if_contains("added_tokens");
  if (list == nullptr || !list->is_array()) return nullptr;
  const json::value* found = nullptr;
  for (const json::value& t : list->get_array()) {
    if (t.is_object() && t.get_object().contains("content") &&
        t.get_object().at("content") == json::value(content)) {
      found = &t;
    }
  }
  return found;
}

// The added tokens asked for, numbered after the vocabulary, and <|MASK|> last where the source
// lacks it.
Result<json::array> renumbered_added_tokens(const json::object& root, const std::string& origin,
                                            const std::vector<std::string>& specials,
                                            PrunedTokenizer* out) {
  json::array added;
  std::vector<std::string> wanted = specials;
  if (std::find(wanted.begin(), wanted.end(), kMaskToken) == wanted.end()) {
    wanted.emplace_back(kMaskToken);
  }
  for (const std::string& content : wanted) {
    json::object token;
    const json::value* from = added_token(root, content);
    if (from == nullptr && content != kMaskToken) {
      return Status::invalid_argument(origin + ": has no added token " + content);
    }
    if (from != nullptr) {
      token = from->get_object();
      out->source_ids.push_back(static_cast<std::int32_t>(token["id"].to_number<std::int64_t>()));
    } else {
      token = {{"content", content}, {"single_word", false}, {"lstrip", false},
               {"rstrip", false},    {"normalized", false},  {"special", true}};
      out->source_ids.push_back(kMaskTokenId);
    }
    token["id"] = static_cast<std::int64_t>(out->source_ids.size() - 1);
    added.push_back(std::move(token));
  }
  return added;
}

}  // namespace

Result<PrunedTokenizer> prune_tokenizer(const std::string& source_json, const std::string& origin,
                                        const std::vector<std::string>& texts,
                                        const std::vector<std::string>& specials) {
  DICE_ASSIGN_OR_RETURN(Tokenizer source, Tokenizer::from_json(source_json, origin));
  boost::system::error_code error;
  json::value root = json::parse(source_json, error);
  if (error || !root.is_object()) return Status::invalid_argument(origin + ": not a JSON object");
  json::object* model =
      root.get_object().if_contains("model") ? root.get_object()["model"].if_object() : nullptr;
  if (model == nullptr || !model->contains("vocab") || !(*model)["vocab"].is_object() ||
      !model->contains("merges") || !(*model)["merges"].is_array()) {
    return Status::invalid_argument(origin + ": model.vocab and model.merges are required");
  }
  BpeTables bpe;
  DICE_RETURN_IF_ERROR(read_bpe(*model, origin, &bpe));
  PrunedTokenizer out;
  rewrite_bpe(bpe, kept_tokens(bpe, source, texts), *model, &out);
  DICE_ASSIGN_OR_RETURN(json::array added,
                        renumbered_added_tokens(root.get_object(), origin, specials, &out));
  root.get_object()["added_tokens"] = std::move(added);
  out.json = json::serialize(root);
  return out;
}

}  // namespace dice::tokenizer
