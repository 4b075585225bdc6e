#include "common/json/pretty_json.h"

namespace dice {
namespace {

bool is_scalar(const boost::json::value& v) {
  return !v.is_object() && !v.is_array();
}

bool flat(const boost::json::value& v) {
  if (v.is_object()) {
    for (const auto& m : v.get_object())
      if (!is_scalar(m.value())) return false;
    return true;
  }
  if (v.is_array()) {
    for (const auto& e : v.get_array())
      if (!is_scalar(e)) return false;
    return true;
  }
  return true;
}

bool one_line(const boost::json::value& v) {
  if (flat(v)) return true;
  if (!v.is_array()) return false;
  for (const auto& e : v.get_array())
    if (!e.is_object() || !flat(e)) return false;
  return true;
}

void write(const boost::json::value& v, int indent, std::string& out) {
  if (is_scalar(v)) {
    out += boost::json::serialize(v);
    return;
  }
  const bool single_line = one_line(v);
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  const std::string close_pad(static_cast<std::size_t>(indent), ' ');
  const std::string sep = single_line ? ", " : ",\n" + pad;
  if (v.is_object()) {
    const auto& o = v.get_object();
    if (o.empty()) {
      out += "{}";
      return;
    }
    out += single_line ? "{" : "{\n" + pad;
    bool first = true;
    for (const auto& m : o) {
      if (!first) out += sep;
      first = false;
      out += boost::json::serialize(boost::json::value(m.key())) + ": ";
      write(m.value(), indent + 2, out);
    }
    out += single_line ? "}" : "\n" + close_pad + "}";
    return;
  }
  const auto& a = v.get_array();
  if (a.empty()) {
    out += "[]";
    return;
  }
  out += single_line ? "[" : "[\n" + pad;
  bool first = true;
  for (const auto& e : a) {
    if (!first) out += sep;
    first = false;
    write(e, indent + 2, out);
  }
  out += single_line ? "]" : "\n" + close_pad + "]";
}

}  // namespace

std::string pretty_json(const boost::json::value& value) {
  std::string out;
  write(value, 0, out);
  return out + "\n";
}

}  // namespace dice
