#include "model/tokenizer/tokenizer.h"

#include <algorithm>
#include <cstring>

#include "model/tokenizer/pre_tokenizer.h"
#include "model/tokenizer/tokenizer_impl.h"
#include "model/tokenizer/unicode.h"

namespace dice::tokenizer {

// --- AddedTokenMatcher

void AddedTokenMatcher::build(const std::vector<AddedToken>& tokens) {
  for (auto& list : by_first_byte_) list.clear();
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& c = tokens[i].content;
    if (c.empty()) continue;
    by_first_byte_[static_cast<unsigned char>(c[0])].push_back(static_cast<int>(i));
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](int a, int b) {
      return tokens[a].content.size() > tokens[b].content.size();
    });
  }
}

int AddedTokenMatcher::match(std::string_view text, std::size_t pos,
                             const std::vector<AddedToken>& tokens) const {
  for (int i : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
    const std::string& c = tokens[i].content;
    if (text.size() - pos >= c.size() && std::memcmp(text.data() + pos, c.data(), c.size()) == 0) {
      return i;
    }
  }
  return -1;
}

// --- Impl

void TokenizerState::set_token(std::int32_t id, std::string bytes, TokenKind kind) {
  if (static_cast<std::size_t>(id) >= id_bytes.size()) {
    id_bytes.resize(id + 1);
    id_kind.resize(id + 1, TokenKind::kNone);
  }
  id_bytes[id] = std::move(bytes);
  id_kind[id] = kind;
}

namespace {

// Buffers reused across the sections and pieces of one encode call.
struct EncodeScratch {
  std::string valid;       // the input with ill-formed UTF-8 replaced
  std::string normalized;  // one section after NFC
  SplitScratch split;
  std::vector<Piece> pieces;
  BpeScratch bpe;
};

void encode_section(const TokenizerState& impl, std::string_view section, EncodeScratch* scratch,
                    std::vector<std::int32_t>* ids) {
  if (section.empty()) return;
  if (impl.nfc && nfc_normalize(section, &scratch->normalized)) section = scratch->normalized;
  scratch->pieces.clear();
  split_qwen2(section, &scratch->split, &scratch->pieces);
  for (const Piece& p : scratch->pieces) {
    impl.bpe->encode_word(section.substr(p.begin, p.end - p.begin), &scratch->bpe, ids);
  }
}

}  // namespace

// --- Tokenizer

Tokenizer::Tokenizer(std::unique_ptr<TokenizerState> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<std::int32_t> Tokenizer::encode(std::string_view text,
                                            const EncodeOptions& options) const {
  std::vector<std::int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  encode_append(text, &ids, options);
  return ids;
}

void Tokenizer::encode_append(std::string_view text, std::vector<std::int32_t>* ids,
                              const EncodeOptions& options) const {
  EncodeScratch scratch;
  if (!is_valid_utf8(text)) {
    replace_invalid_utf8(text, &scratch.valid);
    text = scratch.valid;
  }
  if (!options.match_added_tokens || impl_->added.empty()) {
    encode_section(*impl_, text, &scratch, ids);
    return;
  }
  std::size_t start = 0;  // start of the current plain-text section
  for (std::size_t pos = 0; pos < text.size();) {
    int hit = impl_->matcher.may_start(static_cast<unsigned char>(text[pos]))
                  ? impl_->matcher.match(text, pos, impl_->added)
                  : -1;
    if (hit < 0) {
      ++pos;
      continue;
    }
    encode_section(*impl_, text.substr(start, pos - start), &scratch, ids);
    const AddedToken& token = impl_->added[hit];
    ids->push_back(token.id);
    pos += token.content.size();
    start = pos;
  }
  encode_section(*impl_, text.substr(start), &scratch, ids);
}

std::string Tokenizer::decode(const std::vector<std::int32_t>& ids,
                              const DecodeOptions& options) const {
  return decode(ids.data(), ids.size(), options);
}

std::string Tokenizer::decode(const std::int32_t* ids, std::size_t count,
                              const DecodeOptions& options) const {
  std::string out;
  out.reserve(count * 4);
  const std::size_t n = impl_->id_bytes.size();
  for (std::size_t i = 0; i < count; ++i) {
    const std::int32_t id = ids[i];
    if (id < 0 || static_cast<std::size_t>(id) >= n) continue;
    const TokenKind kind = impl_->id_kind[id];
    if (kind == TokenKind::kNone) continue;
    if (kind == TokenKind::kSpecial && options.skip_special_tokens) continue;
    out += impl_->id_bytes[id];
  }
  if (options.replace_invalid_utf8 && !is_valid_utf8(out)) {
    std::string fixed;
    replace_invalid_utf8(out, &fixed);
    return fixed;
  }
  return out;
}

Status Tokenizer::add_special_token(const std::string& content, std::int32_t id) {
  if (content.empty()) return Status::invalid_argument("add_special_token: empty token text");
  if (id < 0 || id > kMaxTokenId) {
    return Status::invalid_argument("add_special_token: " + content + ": id " + std::to_string(id) +
                                    " out of range 0.." + std::to_string(kMaxTokenId));
  }
  for (const AddedToken& t : impl_->added) {
    if (t.content == content && t.id == id) return Status::ok_status();
    if (t.content == content) {
      return Status::invalid_argument("add_special_token: " + content + " already has id " +
                                      std::to_string(t.id) + ", not " + std::to_string(id));
    }
  }
  if (static_cast<std::size_t>(id) < impl_->id_kind.size() &&
      impl_->id_kind[id] != TokenKind::kNone) {
    return Status::invalid_argument("add_special_token: " + content + ": id " + std::to_string(id) +
                                    " is already taken by token \"" + impl_->id_bytes[id] + "\"");
  }
  impl_->added.push_back({content, id, true});
  impl_->set_token(id, content, TokenKind::kSpecial);
  impl_->matcher.build(impl_->added);
  return Status::ok_status();
}

std::optional<std::int32_t> Tokenizer::token_id(std::string_view bytes) const {
  for (const AddedToken& t : impl_->added) {
    if (t.content == bytes) return t.id;
  }
  auto it = impl_->vocab_ids.find(std::string(bytes));
  if (it == impl_->vocab_ids.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string_view> Tokenizer::token_bytes(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= impl_->id_bytes.size() ||
      impl_->id_kind[id] == TokenKind::kNone) {
    return std::nullopt;
  }
  return std::string_view(impl_->id_bytes[id]);
}

bool Tokenizer::is_special(std::int32_t id) const {
  return id >= 0 && static_cast<std::size_t>(id) < impl_->id_kind.size() &&
         impl_->id_kind[id] == TokenKind::kSpecial;
}

std::int32_t Tokenizer::vocab_size() const {
  return static_cast<std::int32_t>(impl_->id_bytes.size());
}

const std::vector<AddedToken>& Tokenizer::added_tokens() const {
  return impl_->added;
}

std::size_t Tokenizer::merge_count() const {
  return impl_->merge_count;
}

}  // namespace dice::tokenizer
