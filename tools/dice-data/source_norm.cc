#include "tools/dice-data/source_norm.h"

#include <cctype>
#include <unordered_map>

#include "common/hash/content_hash.h"
#include "tools/dice-data/python_tokens.h"

namespace dice::data {
namespace {

bool is_word(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '_' || u >= 0x80;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Appends `c` to `out`, with one space before it when white space was skipped between two word
// characters.
void put(char c, bool* pending_space, std::string* out) {
  if (*pending_space && !out->empty() && is_word(out->back()) && is_word(c)) out->push_back(' ');
  *pending_space = false;
  out->push_back(c);
}

// A string token's text split into its prefix letters and the inside of its quotes.
void split_literal(std::string_view token, std::string_view* prefix, std::string_view* body) {
  std::size_t open = 0;
  while (open < token.size() && token[open] != '"' && token[open] != '\'') ++open;
  *prefix = token.substr(0, open);
  const std::string_view rest = token.substr(open);
  std::size_t quote = rest.size() >= 6 && rest.substr(0, 3) == rest.substr(rest.size() - 3) &&
                              (rest.substr(0, 3) == "\"\"\"" || rest.substr(0, 3) == "'''")
                          ? 3
                          : 1;
  if (rest.size() < 2 * quote) quote = rest.size() / 2;
  *body = rest.substr(quote, rest.size() - 2 * quote);
}

}  // namespace

std::string normalized_c_text(std::string_view text) {
  std::string out;
  bool pending_space = false;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      pending_space = true;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const std::size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 2;
      pending_space = true;
    } else if (c == '"' || c == '\'') {
      // A C string or character literal, kept byte for byte up to its closing quote.
      put(c, &pending_space, &out);
      for (++i; i < text.size() && text[i] != c && text[i] != '\n'; ++i) {
        out.push_back(text[i]);
        if (text[i] == '\\' && i + 1 < text.size()) out.push_back(text[++i]);
      }
      if (i < text.size() && text[i] == c) out.push_back(text[i++]);
    } else if (is_space(c)) {
      pending_space = true;
      ++i;
    } else {
      put(c, &pending_space, &out);
      ++i;
    }
  }
  return out;
}

std::string normalized_source(std::string_view source) {
  auto tokens = tokenize_python(source, "source");
  if (!tokens.ok()) return normalized_c_text(source);
  std::string out;
  for (const PyToken& token : *tokens) {
    if (!out.empty()) out.push_back(' ');
    if (token.kind != PyTokenKind::kString) {
      out += token.text;
      continue;
    }
    std::string_view prefix, body;
    split_literal(token.text, &prefix, &body);
    for (char c : prefix)
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    out += '"' + normalized_c_text(body) + '"';
  }
  return out;
}

std::string normalized_pair_key(std::string_view pytorch_code, std::string_view cuda_code) {
  const std::string reference = normalized_source(pytorch_code);
  const std::string candidate = normalized_source(cuda_code);
  return content_hash_hex_parts({reference, candidate});
}

std::vector<long> first_of_each(const std::vector<std::string>& keys) {
  std::unordered_map<std::string, long> first;
  std::vector<long> out;
  out.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto [it, inserted] = first.emplace(keys[i], static_cast<long>(i));
    out.push_back(inserted ? -1 : it->second);
  }
  return out;
}

}  // namespace dice::data
