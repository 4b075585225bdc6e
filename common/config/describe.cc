#include "common/config/describe.h"

namespace dice::config {
namespace {

// Table cells cannot hold '|' or newlines.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string fields_markdown(const std::vector<FieldDoc>& docs) {
  std::string out = "| key | type | default | checks | description |\n|---|---|---|---|---|\n";
  for (const auto& doc : docs) {
    out += "| `" + cell(doc.path) + "` | " + cell(doc.type) + " | " +
           (doc.default_value.empty() ? "" : "`" + cell(doc.default_value) + "`") + " | " +
           cell(doc.checks) + " | " + cell(doc.doc) + " |\n";
  }
  return out;
}

}  // namespace dice::config
