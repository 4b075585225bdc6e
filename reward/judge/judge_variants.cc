#include "reward/judge/judge_variants.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace dice {
namespace {

// One `A[i] = value;` store: [lhs_begin, semicolon) with the last subscript and the value.
struct Store {
  size_t lhs_begin = 0;
  size_t index_open = 0;   // the last '[' of the left-hand side
  size_t index_close = 0;  // its ']'
  size_t value_begin = 0;  // after '='
  size_t semicolon = 0;
};

bool is_ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// The position after the '}' that closes the '{' at `open`, or npos.
size_t matching_brace(std::string_view text, size_t open) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == '{') ++depth;
    if (text[i] == '}' && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

// The '[' matching the ']' at `close`, or npos.
size_t matching_bracket(std::string_view text, size_t close) {
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    if (text[i] == ']') ++depth;
    if (text[i] == '[' && --depth == 0) return i;
    if (text[i] == ';' || text[i] == '{' || text[i] == '}') break;
  }
  return std::string_view::npos;
}

// The store whose '=' is at `eq`, if the text before it is `name[...]...[...]`.
std::optional<Store> store_at(std::string_view text, size_t eq, size_t body_begin) {
  if (eq + 1 < text.size() && text[eq + 1] == '=') return std::nullopt;  // ==
  size_t j = eq;
  while (j > body_begin && std::isspace(static_cast<unsigned char>(text[j - 1]))) --j;
  if (j == body_begin || text[j - 1] != ']') return std::nullopt;  // also rejects +=, <=, !=
  Store store;
  store.index_close = j - 1;
  store.index_open = matching_bracket(text, store.index_close);
  if (store.index_open == std::string_view::npos) return std::nullopt;
  size_t k = store.index_open;
  while (k > body_begin && text[k - 1] == ']') {  // A[i][j]
    k = matching_bracket(text, k - 1);
    if (k == std::string_view::npos) return std::nullopt;
  }
  size_t name_end = k;
  while (k > body_begin && is_ident(text[k - 1])) --k;
  if (k == name_end || std::isdigit(static_cast<unsigned char>(text[k]))) return std::nullopt;
  store.lhs_begin = k;
  store.value_begin = eq + 1;
  store.semicolon = text.find(';', eq);
  if (store.semicolon == std::string_view::npos) return std::nullopt;
  if (text.substr(store.value_begin, store.semicolon - store.value_begin).find_first_of("{}") !=
      std::string_view::npos) {
    return std::nullopt;
  }
  return store;
}

// True when `at` is inside a // or /* */ comment (a store there changes nothing).
bool in_comment(std::string_view text, size_t at) {
  const size_t line_begin = text.rfind('\n', at);
  const size_t from = line_begin == std::string_view::npos ? 0 : line_begin + 1;
  if (text.substr(from, at - from).find("//") != std::string_view::npos) return true;
  const size_t open = text.rfind("/*", at);
  if (open == std::string_view::npos) return false;
  const size_t close = text.rfind("*/", at);
  return close == std::string_view::npos || close < open;
}

// The last store of the last __global__ function that has one.
std::optional<Store> last_kernel_store(std::string_view text) {
  std::optional<Store> found;
  for (size_t at = text.find("__global__"); at != std::string_view::npos;
       at = text.find("__global__", at + 1)) {
    const size_t open = text.find('{', at);
    if (open == std::string_view::npos) break;
    const size_t close = matching_brace(text, open);
    if (close == std::string_view::npos) break;
    for (size_t eq = text.find('=', open); eq < close; eq = text.find('=', eq + 1)) {
      if (in_comment(text, eq)) continue;
      if (auto store = store_at(text, eq, open + 1)) found = store;
    }
  }
  return found;
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::string line_of(std::string_view text, size_t at) {
  return "line " + std::to_string(1 + std::count(text.begin(), text.begin() + at, '\n'));
}

}  // namespace

std::vector<BrokenVariant> broken_variants(std::string_view source) {
  const auto store = last_kernel_store(source);
  if (!store) return {};
  const std::string lhs(source.substr(store->lhs_begin, store->value_begin - 1 - store->lhs_begin));
  const std::string value =
      trim(source.substr(store->value_begin, store->semicolon - store->value_begin));
  const std::string index =
      std::string(source.substr(store->index_open + 1, store->index_close - store->index_open - 1));
  const std::string where = line_of(source, store->lhs_begin) + ": " + trim(lhs) + " = " + value;

  std::vector<BrokenVariant> out;
  BrokenVariant scaled{"wrong_value", std::string(source), ""};
  const std::string scaled_value = " (" + value + ") * 1.5f + 1.0f";
  scaled.source.replace(store->value_begin, store->semicolon - store->value_begin, scaled_value);
  scaled.edit = where + " -> value * 1.5 + 1";
  out.push_back(std::move(scaled));

  BrokenVariant shifted{"store_off_by_one", std::string(source), ""};
  shifted.source.replace(store->index_open + 1, store->index_close - store->index_open - 1,
                         "(" + index + ") + 1");
  shifted.edit = where + " -> index +1";
  out.push_back(std::move(shifted));
  return out;
}

}  // namespace dice
