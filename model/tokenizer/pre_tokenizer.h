// The Qwen2/Qwen3 pre-tokenizer: splits text into the pieces BPE runs on, exactly as this
// regex (from Qwen's tokenizer.json) does with JavaScript's `u`-flag semantics:
//
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+
//
// It is a hand-written scanner, not a regex engine: at each position the alternatives are tried
// in order and the first that matches wins, with the backtracking of \s* and \s+(?!\S) worked
// out by hand (see pre_tokenizer.cc). Every character is covered by some alternative, so the
// pieces tile the text.
//
// Where JavaScript and the Rust `tokenizers` library disagree, this follows JavaScript (the
// oracle): \s is ECMAScript's (U+FEFF yes, U+0085 no) and (?i:...) folds ASCII letters only.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace dice::tokenizer {

// A piece of the text: bytes [begin, end).
struct Piece {
  std::uint32_t begin;
  std::uint32_t end;
};

// Reused buffers, so splitting allocates nothing once they have grown.
struct SplitScratch {
  std::vector<char32_t> code_points;
  std::vector<std::uint8_t> classes;
  std::vector<std::uint32_t> offsets;  // byte offset of each code point, plus the end
};

// Appends the pieces of well-formed UTF-8 `text` (at most 4 GiB) to *pieces.
void split_qwen2(std::string_view text, SplitScratch* scratch, std::vector<Piece>* pieces);

// The pre-tokenizer regex this scanner implements, as tokenizer.json spells it.
extern const char kQwen2SplitPattern[];

}  // namespace dice::tokenizer
