// Loading a Hugging Face tokenizer.json into TokenizerState, with errors that name the file and
// the field ("model.merges[12]: ...").
//
// The parts read, and what is accepted:
//   model           {"type": "BPE", "vocab": {token: id}, "merges": ["a b" | ["a", "b"]]};
//                   tokens spelled in the byte-level alphabet (byte_level.h), all 256 byte
//                   tokens present; no continuing_subword_prefix / end_of_word_suffix /
//                   ignore_merges / dropout (Qwen uses none of them)
//   added_tokens    [{"id", "content", "special"}]; optional
//   normalizer      null or {"type": "NFC"} (also inside a "Sequence")
//   pre_tokenizer   the Qwen2 split regex (pre_tokenizer.h) followed by ByteLevel with
//                   use_regex false; anything else is reported as unsupported rather than
//                   tokenized differently from the file's intent
// Other top-level keys (decoder, post_processor, truncation, padding) do not change ids here.
#include <boost/json.hpp>

#include "common/json/parse_text.h"
#include "common/read_file.h"
#include "model/tokenizer/byte_level.h"
#include "model/tokenizer/pre_tokenizer.h"
#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/tokenizer_impl.h"

namespace dice::tokenizer {
namespace {

namespace json = boost::json;

const char* kind_name(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
      return "an integer";
    case json::kind::double_:
      return "a number";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
  }
  return "?";
}

// Errors carry the file name; each helper takes the JSON path of what it reads.
class Reader {
 public:
  explicit Reader(const std::string& origin) : origin_(origin) {}

  Status error(const std::string& path, const std::string& what) const {
    return Status::corruption(origin_ + ": " + path + ": " + what);
  }
  Status unsupported(const std::string& path, const std::string& what) const {
    return Status::invalid_argument(origin_ + ": " + path + ": unsupported: " + what);
  }
  Status expected(const std::string& path, const char* want, const json::value& got) const {
    return error(path, std::string("expected ") + want + ", found " + kind_name(got));
  }

  Result<const json::object*> object_at(const json::object& parent, const std::string& parent_path,
                                        const char* key) const {
    const std::string path = join(parent_path, key);
    const json::value* v = parent.if_contains(key);
    if (!v) return error(path, "missing");
    if (!v->is_object()) return expected(path, "an object", *v);
    return &v->get_object();
  }

  Result<const json::array*> array_at(const json::object& parent, const std::string& parent_path,
                                      const char* key) const {
    const std::string path = join(parent_path, key);
    const json::value* v = parent.if_contains(key);
    if (!v) return error(path, "missing");
    if (!v->is_array()) return expected(path, "an array", *v);
    return &v->get_array();
  }

  Result<std::int32_t> id_of(const json::value& v, const std::string& path) const {
    if (!v.is_int64() && !v.is_uint64()) return expected(path, "a token id (integer)", v);
    if (v.is_uint64() || v.get_int64() < 0 || v.get_int64() > kMaxTokenId) {
      return error(path, "token id out of range 0.." + std::to_string(kMaxTokenId));
    }
    return static_cast<std::int32_t>(v.get_int64());
  }

  static std::string join(const std::string& parent, const char* key) {
    return parent.empty() ? key : parent + "." + key;
  }
  static std::string index(const std::string& path, std::size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

 private:
  const std::string& origin_;
};

// Byte-level spelling -> id while loading: an open-addressing table over string_views into the
// parsed document (the merges look up three spellings each, 450k lookups for Qwen).
class SpellingIndex {
 public:
  explicit SpellingIndex(std::size_t expected) {
    std::size_t n = 16;
    while (n < expected * 2) n <<= 1;
    slots_.resize(n);
  }
  void insert(std::string_view key, std::int32_t id) {
    const std::size_t h = std::hash<std::string_view>()(key);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.id < 0 || (s.hash == h && s.key == key)) {
        s = {key, h, id};
        return;
      }
    }
  }
  // The id of `key`, or -1.
  std::int32_t find(std::string_view key) const {
    const std::size_t h = std::hash<std::string_view>()(key);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.hash == h && s.key == key) return s.id;
    }
  }

 private:
  struct Slot {
    std::string_view key;
    std::size_t hash = 0;
    std::int32_t id = -1;
  };
  std::vector<Slot> slots_;
};

Status check_normalizer(const Reader& r, const json::value* v, bool* nfc) {
  *nfc = false;
  if (!v || v->is_null()) return Status::ok_status();
  if (!v->is_object()) return r.expected("normalizer", "an object or null", *v);
  const json::object& o = v->get_object();
  const json::value* type = o.if_contains("type");
  if (!type || !type->is_string()) return r.error("normalizer.type", "missing or not a string");
  if (*type == "NFC") {
    *nfc = true;
    return Status::ok_status();
  }
  if (*type == "Sequence") {
    const json::value* list = o.if_contains("normalizers");
    if (!list || !list->is_array()) return r.error("normalizer.normalizers", "missing array");
    for (std::size_t i = 0; i < list->get_array().size(); ++i) {
      bool inner = false;
      DICE_RETURN_IF_ERROR(check_normalizer(r, &list->get_array()[i], &inner));
      *nfc = *nfc || inner;
    }
    return Status::ok_status();
  }
  return r.unsupported("normalizer.type", std::string(type->get_string()) + " (only NFC)");
}

// Accepts exactly the Qwen2 pipeline: Split(Qwen2 regex, Isolated) then ByteLevel(no regex).
Status check_pre_tokenizer(const Reader& r, const json::value* v) {
  const std::string want = std::string("Sequence[Split(Qwen2 regex), ByteLevel(use_regex=false)]");
  if (!v || v->is_null()) return r.unsupported("pre_tokenizer", "missing; expected " + want);
  if (!v->is_object()) return r.expected("pre_tokenizer", "an object", *v);
  const json::object& o = v->get_object();
  const json::value* list = o.if_contains("pretokenizers");
  if (o.if_contains("type") == nullptr || o.at("type") != "Sequence" || !list ||
      !list->is_array() || list->get_array().size() != 2) {
    return r.unsupported("pre_tokenizer", "expected " + want);
  }
  const json::value& split = list->get_array()[0];
  const json::value& byte_level = list->get_array()[1];
  if (!split.is_object() || split.get_object().if_contains("type") == nullptr ||
      split.get_object().at("type") != "Split") {
    return r.unsupported("pre_tokenizer.pretokenizers[0]", "expected a Split");
  }
  const json::object& s = split.get_object();
  const json::value* pattern = s.if_contains("pattern");
  const json::value* regex =
      pattern && pattern->is_object() ? pattern->get_object().if_contains("Regex") : nullptr;
  if (!regex || !regex->is_string() || regex->get_string() != kQwen2SplitPattern) {
    return r.unsupported("pre_tokenizer.pretokenizers[0].pattern",
                         "only the Qwen2 split regex is implemented");
  }
  const json::value* invert = s.if_contains("invert");
  if (invert && invert->is_bool() && invert->get_bool()) {
    return r.unsupported("pre_tokenizer.pretokenizers[0].invert", "true");
  }
  const json::value* behavior = s.if_contains("behavior");
  if (behavior && (!behavior->is_string() || *behavior != "Isolated")) {
    return r.unsupported("pre_tokenizer.pretokenizers[0].behavior", "only Isolated");
  }
  if (!byte_level.is_object() || byte_level.get_object().if_contains("type") == nullptr ||
      byte_level.get_object().at("type") != "ByteLevel") {
    return r.unsupported("pre_tokenizer.pretokenizers[1]", "expected ByteLevel");
  }
  const json::object& b = byte_level.get_object();
  for (const char* key : {"add_prefix_space", "use_regex"}) {
    const json::value* flag = b.if_contains(key);
    if (flag && flag->is_bool() && flag->get_bool()) {
      return r.unsupported(std::string("pre_tokenizer.pretokenizers[1].") + key, "true");
    }
  }
  return Status::ok_status();
}

Status check_bpe_options(const Reader& r, const json::object& model) {
  const json::value* type = model.if_contains("type");
  if (type && (!type->is_string() || *type != "BPE")) {
    return r.unsupported("model.type", "only BPE");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json::value* v = model.if_contains(key);
    if (v && v->is_string() && !v->get_string().empty()) {
      return r.unsupported(Reader::join("model", key), "non-empty");
    }
  }
  const json::value* ignore = model.if_contains("ignore_merges");
  if (ignore && ignore->is_bool() && ignore->get_bool()) {
    return r.unsupported("model.ignore_merges", "true");
  }
  const json::value* dropout = model.if_contains("dropout");
  if (dropout && dropout->is_number() && dropout->to_number<double>() > 0) {
    return r.unsupported("model.dropout", "BPE dropout");
  }
  return Status::ok_status();
}

// The two halves of merge i, from "a b" or ["a", "b"].
Status merge_parts(const Reader& r, const json::value& v, std::size_t i, std::string_view* a,
                   std::string_view* b) {
  const std::string path = Reader::index("model.merges", i);
  if (v.is_string()) {
    std::string_view s = v.get_string();
    std::size_t space = s.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 >= s.size() ||
        s.find(' ', space + 1) != std::string_view::npos) {
      return r.error(path, "expected \"left right\" (two tokens, one space), found \"" +
                               std::string(s) + "\"");
    }
    *a = s.substr(0, space);
    *b = s.substr(space + 1);
    return Status::ok_status();
  }
  if (v.is_array() && v.get_array().size() == 2 && v.get_array()[0].is_string() &&
      v.get_array()[1].is_string()) {
    *a = v.get_array()[0].get_string();
    *b = v.get_array()[1].get_string();
    return Status::ok_status();
  }
  return r.error(
      path, std::string("expected \"left right\" or [\"left\", \"right\"], found ") + kind_name(v));
}

Result<json::value> parse_json(std::string_view text, const std::string& origin) {
  boost::system::error_code ec;
  std::string position;
  json::value root = parse_json_text(text, &ec, &position);
  if (ec) return Status::corruption(origin + ":" + position + ": invalid JSON: " + ec.message());
  return root;
}

// Vocabulary: byte-level spelling -> id (for the merges), and id -> raw bytes.
Status read_vocab(const Reader& r, const json::object& vocab, SpellingIndex* spelled_ids,
                  TokenizerState* impl) {
  impl->vocab_ids.reserve(vocab.size());
  std::string bytes;
  impl->id_bytes.reserve(vocab.size() + 512);
  impl->id_kind.reserve(vocab.size() + 512);
  for (const auto& entry : vocab) {
    // Paths are built only for errors: this loop runs 151k times on Qwen's vocabulary.
    const auto path = [&] { return "model.vocab[\"" + std::string(entry.key()) + "\"]"; };
    const json::value& v = entry.value();
    if (!v.is_int64() || v.get_int64() < 0 || v.get_int64() > kMaxTokenId) {
      return r.id_of(v, path()).status();  // not a valid id: id_of says why
    }
    const std::int32_t id = static_cast<std::int32_t>(v.get_int64());
    if (static_cast<std::size_t>(id) < impl->id_kind.size() &&
        impl->id_kind[id] != TokenKind::kNone) {
      return r.error(path(), "id " + std::to_string(id) + " is also used by another token");
    }
    byte_level_to_bytes(entry.key(), &bytes);
    spelled_ids->insert(entry.key(), id);
    impl->vocab_ids.emplace(bytes, id);
    impl->set_token(id, bytes, TokenKind::kVocab);
  }
  return Status::ok_status();
}

// The id of each single-byte token; a byte-level vocabulary has all 256.
Status find_byte_ids(const Reader& r, const SpellingIndex& spelled_ids,
                     std::array<std::int32_t, 256>* byte_ids) {
  for (int b = 0; b < 256; ++b) {
    std::string spelled = bytes_to_byte_level(std::string(1, static_cast<char>(b)));
    const std::int32_t byte_id = spelled_ids.find(spelled);
    if (byte_id < 0) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", b);
      return r.error("model.vocab", std::string("no token for byte ") + hex + " (\"" + spelled +
                                        "\"): a byte-level vocabulary needs all 256");
    }
    (*byte_ids)[b] = byte_id;
  }
  return Status::ok_status();
}

// Each merge's halves and result must be in the vocabulary; merge i gets rank i.
Status read_merges(const Reader& r, const json::array& merges, const SpellingIndex& spelled_ids,
                   MergeTable* table) {
  std::string joined;
  for (std::size_t i = 0; i < merges.size(); ++i) {
    std::string_view a, b;
    DICE_RETURN_IF_ERROR(merge_parts(r, merges[i], i, &a, &b));
    joined.assign(a).append(b);
    const std::int32_t ia = spelled_ids.find(a);
    const std::int32_t ib = spelled_ids.find(b);
    const std::int32_t im = spelled_ids.find(joined);
    if (ia < 0 || ib < 0 || im < 0) {
      const std::string path = Reader::index("model.merges", i);
      if (ia < 0) return r.error(path, "\"" + std::string(a) + "\" not in vocab");
      if (ib < 0) return r.error(path, "\"" + std::string(b) + "\" not in vocab");
      return r.error(path, "merged \"" + joined + "\" not in vocab");
    }
    table->insert(ia, ib, static_cast<std::uint32_t>(i), im);
  }
  return Status::ok_status();
}

// The optional "added_tokens" array; an id may repeat only with the same content.
Status read_added_tokens(const Reader& r, const json::value* added, TokenizerState* impl) {
  if (!added || added->is_null()) return Status::ok_status();
  if (!added->is_array()) return r.expected("added_tokens", "an array", *added);
  for (std::size_t i = 0; i < added->get_array().size(); ++i) {
    const std::string path = Reader::index("added_tokens", i);
    const json::value& v = added->get_array()[i];
    if (!v.is_object()) return r.expected(path, "an object", v);
    const json::object& o = v.get_object();
    const json::value* id_value = o.if_contains("id");
    const json::value* content = o.if_contains("content");
    const json::value* special = o.if_contains("special");
    if (!id_value) return r.error(path + ".id", "missing");
    DICE_ASSIGN_OR_RETURN(std::int32_t id, r.id_of(*id_value, path + ".id"));
    if (!content || !content->is_string() || content->get_string().empty()) {
      return r.error(path + ".content", "missing, not a string, or empty");
    }
    if (special && !special->is_bool()) return r.expected(path + ".special", "a boolean", *special);
    AddedToken token{std::string(content->get_string()), id, special && special->get_bool()};
    for (const AddedToken& other : impl->added) {
      if (other.id == id && other.content != token.content) {
        return r.error(path, "id " + std::to_string(id) + " also used by added token \"" +
                                 other.content + "\"");
      }
    }
    impl->set_token(id, token.content, token.special ? TokenKind::kSpecial : TokenKind::kAdded);
    impl->added.push_back(std::move(token));
  }
  return Status::ok_status();
}

}  // namespace

Result<Tokenizer> Tokenizer::from_json(std::string_view text, const std::string& origin,
                                       const TokenizerOptions& options) {
  Reader r(origin);
  json::value root_value;
  try {
    DICE_ASSIGN_OR_RETURN(root_value, parse_json(text, origin));
  } catch (const std::exception& e) {  // allocation failure inside the parser
    return Status::corruption(origin + ": cannot parse: " + e.what());
  }
  if (!root_value.is_object()) return r.expected("(top level)", "an object", root_value);
  const json::object& root = root_value.get_object();

  auto impl = std::make_unique<TokenizerState>();
  DICE_RETURN_IF_ERROR(check_normalizer(r, root.if_contains("normalizer"), &impl->nfc));
  DICE_RETURN_IF_ERROR(check_pre_tokenizer(r, root.if_contains("pre_tokenizer")));
  DICE_ASSIGN_OR_RETURN(const json::object* model, r.object_at(root, "", "model"));
  DICE_RETURN_IF_ERROR(check_bpe_options(r, *model));
  DICE_ASSIGN_OR_RETURN(const json::object* vocab, r.object_at(*model, "model", "vocab"));
  DICE_ASSIGN_OR_RETURN(const json::array* merges, r.array_at(*model, "model", "merges"));

  SpellingIndex spelled_ids(vocab->size());
  DICE_RETURN_IF_ERROR(read_vocab(r, *vocab, &spelled_ids, impl.get()));
  std::array<std::int32_t, 256> byte_ids{};
  DICE_RETURN_IF_ERROR(find_byte_ids(r, spelled_ids, &byte_ids));
  MergeTable table(merges->size());
  DICE_RETURN_IF_ERROR(read_merges(r, *merges, spelled_ids, &table));
  impl->merge_count = merges->size();
  impl->bpe = std::make_unique<BpeModel>(byte_ids, std::move(table), options.cache_capacity);

  DICE_RETURN_IF_ERROR(read_added_tokens(r, root.if_contains("added_tokens"), impl.get()));
  impl->matcher.build(impl->added);
  return Tokenizer(std::move(impl));
}

Result<Tokenizer> Tokenizer::load(const std::string& path, const TokenizerOptions& options) {
  DICE_ASSIGN_OR_RETURN(std::string text, read_file(path));
  return from_json(text, path, options);
}

}  // namespace dice::tokenizer
