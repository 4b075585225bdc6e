// When two SFT pairs are the same pair (dice-data build-sft keeps one of them): their sources
// agree once comments and white space are taken out. The normalised form of a Python file (a
// PyTorch reference, or a load_inline candidate whose CUDA code sits in string literals):
//
//   - Python: comments are dropped and the tokens (names, numbers, operators, string literals;
//     python_tokens.h) are joined by one space, so indentation, blank lines, spaces and line
//     continuations count for nothing;
//   - inside every string literal (the CUDA source, the cpp declarations, a docstring): C/C++
//     comments (// to the end of the line, /* ... */) are dropped outside C string and character
//     literals, and white space counts only between two word characters (letters, digits, _),
//     as one space; the literal's prefix (r, f, b...) stays, its quotes become one '"';
//   - a file that does not tokenize (an unterminated string or bracket) is normalised whole as
//     the inside of a string literal.
//
// So `x=a+b  # sum` and `x = a + b` agree, and so do two kernels that differ only in comments,
// indentation or line breaks; a renamed variable, another constant or a reordered statement is a
// different pair. Docstrings count as code (a changed docstring is another pair).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dice::data {

// The normalised form of `source` (above).
std::string normalized_source(std::string_view source);

// The inside of a string literal normalised as C/C++ (the second rule above).
std::string normalized_c_text(std::string_view text);

// The identity of a pair under normalisation: a content hash of both normalised sources.
std::string normalized_pair_key(std::string_view pytorch_code, std::string_view cuda_code);

// For each key, the index of the first earlier equal key; -1 for the first of its kind.
std::vector<long> first_of_each(const std::vector<std::string>& keys);

}  // namespace dice::data
