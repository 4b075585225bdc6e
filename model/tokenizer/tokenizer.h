// dice_tokenizer: the Qwen2/Qwen3 byte-level BPE tokenizer, loaded from a Hugging Face
// `tokenizer.json`, in plain C++ (no LibTorch, no ICU).
//
//   DICE_ASSIGN_OR_RETURN(Tokenizer tok, Tokenizer::load("model/tokenizer.json"));
//   DICE_RETURN_IF_ERROR(tok.add_special_token(kMaskToken, kMaskTokenId));  // SDAR's mask
//   std::vector<int32_t> ids = tok.encode(apply_chat_template(messages, {}));
//   std::string text = tok.decode(ids);
//
// encode(text), step by step (the pipeline of tokenizer.json and of the JS oracle):
//   1. ill-formed UTF-8 becomes U+FFFD, one per maximal ill-formed subpart (what node does when
//      it reads such bytes; the oracle never sees anything else);
//   2. added tokens (<|im_start|>, <|im_end|>, <think>, <|MASK|>, ...) are cut out first,
//      leftmost-longest, special or not, and become their ids. This matches the oracle and
//      Hugging Face's default (split_special_tokens=False): text that *contains*
//      "<|im_end|>" encodes to the control token. Pass match_added_tokens=false to encode
//      untrusted text (model output, task code) as plain characters instead;
//   3. each remaining section is NFC-normalized (the file's normalizer), split by the Qwen2
//      pre-tokenizer regex (pre_tokenizer.h), and each piece's bytes are merged by BPE (bpe.h).
// decode(ids) concatenates the bytes of the tokens, so decode(encode(s)) == s for well-formed
// NFC text; see DecodeOptions for invalid UTF-8 and special tokens.
//
// A Tokenizer is immutable after loading (except add_special_token) and encode/decode are safe
// to call from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dice::tokenizer {

struct TokenizerState;  // tokenizer_impl.h

// SDAR's mask token; SDAR's tokenizer.json has it, Qwen3's does not (add it then).
inline constexpr char kMaskToken[] = "<|MASK|>";
inline constexpr std::int32_t kMaskTokenId = 151669;

// Token ids are dense indices into per-id tables, so a file may not use ids above this
// (16M; Qwen's largest is 151669).
inline constexpr std::int32_t kMaxTokenId = (1 << 24) - 1;

// A token matched verbatim in text before BPE (tokenizer.json "added_tokens").
struct AddedToken {
  std::string content;
  std::int32_t id = -1;
  bool special = false;  // control tokens; decode can skip them
};

struct EncodeOptions {
  // Cut added tokens out of the text and emit their ids (see step 2 above). false: their text
  // is encoded like any other text. Default: true (as the oracle and Hugging Face do)
  bool match_added_tokens = true;
};

struct DecodeOptions {
  // Leave out tokens marked special (<|im_end|>, <|endoftext|>, ...). Default: false
  bool skip_special_tokens = false;
  // Replace ill-formed UTF-8 (a multi-byte character cut between tokens, e.g. at a length
  // limit) with U+FFFD, as the oracle's and Python's decode do. false: return the raw bytes,
  // which round-trip exactly. Default: false
  bool replace_invalid_utf8 = false;
};

struct TokenizerOptions {
  // Most words the BPE cache holds; 0 turns caching off (still correct, slower on repeats).
  // Default: 65536 (a few MiB)
  std::size_t cache_capacity = 65536;
};

class Tokenizer {
 public:
  // Reads and checks a tokenizer.json. Errors name the file and what is wrong in it: I/O,
  // JSON syntax (line:column), missing or mistyped fields (by path, e.g. "model.merges[12]"),
  // and features this implementation does not support (another pre-tokenizer or normalizer).
  static Result<Tokenizer> load(const std::string& path, const TokenizerOptions& options = {});
  // Same, from the file's text; `origin` names it in errors.
  static Result<Tokenizer> from_json(std::string_view json, const std::string& origin,
                                     const TokenizerOptions& options = {});

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  std::vector<std::int32_t> encode(std::string_view text, const EncodeOptions& options = {}) const;
  // Appends to *ids instead of returning a new vector.
  void encode_append(std::string_view text, std::vector<std::int32_t>* ids,
                     const EncodeOptions& options = {}) const;

  // Ids with no token (e.g. the unused tail of a model's padded embedding) decode to nothing.
  std::string decode(const std::vector<std::int32_t>& ids, const DecodeOptions& options = {}) const;
  std::string decode(const std::int32_t* ids, std::size_t count,
                     const DecodeOptions& options = {}) const;

  // Adds a special token (e.g. kMaskToken) that the file lacks. Adding one that is already
  // there with the same id is a no-op; a clash (the id or the text taken by another token, or
  // empty text) is an invalid-argument error.
  Status add_special_token(const std::string& content, std::int32_t id);

  // The id of an added token's text, or of the vocabulary token whose bytes are `bytes`.
  std::optional<std::int32_t> token_id(std::string_view bytes) const;
  // The bytes a token decodes to; nullopt for an id with no token.
  std::optional<std::string_view> token_bytes(std::int32_t id) const;
  bool is_special(std::int32_t id) const;
  // 1 + the largest id in use (151670 for Qwen3 plus <|MASK|>).
  std::int32_t vocab_size() const;
  const std::vector<AddedToken>& added_tokens() const;
  std::size_t merge_count() const;

 private:
  explicit Tokenizer(std::unique_ptr<TokenizerState> impl);
  std::unique_ptr<TokenizerState> impl_;
};

}  // namespace dice::tokenizer
