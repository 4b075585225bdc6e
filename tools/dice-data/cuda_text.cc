#include "tools/dice-data/cuda_text.h"

namespace dice::data {

namespace {
constexpr std::size_t kColumns = 100;
}  // namespace

std::string wrap_list(int indent, const std::string& head, const std::vector<std::string>& items,
                      const std::string& tail) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  const std::string inner = pad + "    ";
  std::string joined;
  for (std::size_t i = 0; i < items.size(); ++i) joined += (i ? ", " : "") + items[i];
  const std::string one = pad + head + "(" + joined + ")" + tail;
  if (one.size() <= kColumns) return one + "\n";
  if (inner.size() + joined.size() + 1 + tail.size() <= kColumns)
    return pad + head + "(\n" + inner + joined + ")" + tail + "\n";
  std::string s = pad + head + "(\n";
  for (std::size_t i = 0; i < items.size(); ++i)
    s += inner + items[i] + (i + 1 < items.size() ? ",\n" : ")" + tail + "\n");
  return s;
}

}  // namespace dice::data
