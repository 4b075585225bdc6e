// Internal: the state behind Tokenizer, shared by tokenizer.cc (encode/decode) and
// tokenizer_json.cc (loading). Not part of the public API.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/tokenizer/bpe.h"
#include "model/tokenizer/tokenizer.h"

namespace dice::tokenizer {

// Finds added tokens in text: at each position the longest one that starts there, scanning
// left to right (leftmost-longest, like the oracle's trie). Most bytes are ruled out by a
// first-byte table.
class AddedTokenMatcher {
 public:
  void build(const std::vector<AddedToken>& tokens);
  // The index into `tokens` of the longest token at text[pos...], or -1.
  int match(std::string_view text, std::size_t pos, const std::vector<AddedToken>& tokens) const;
  bool may_start(unsigned char byte) const { return !by_first_byte_[byte].empty(); }

 private:
  std::array<std::vector<int>, 256> by_first_byte_;  // longest first
};

enum class TokenKind : std::uint8_t { kNone = 0, kVocab, kAdded, kSpecial };

struct TokenizerState {
  std::vector<std::string> id_bytes;                        // by id: the bytes the token stands for
  std::vector<TokenKind> id_kind;                           // by id
  std::unordered_map<std::string, std::int32_t> vocab_ids;  // vocabulary bytes -> id
  std::vector<AddedToken> added;
  AddedTokenMatcher matcher;
  bool nfc = false;  // the file's normalizer is NFC
  std::unique_ptr<BpeModel> bpe;
  std::size_t merge_count = 0;

  void set_token(std::int32_t id, std::string bytes, TokenKind kind);
};

}  // namespace dice::tokenizer
