// SampleOptions: an options struct made for the config tests, with one field of every supported
// type, each flag and each check, so the mechanism is tested apart from dice's real options.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/config/config_errors.h"
#include "common/config/field_checks.h"

namespace dice::config::testing {

enum class Color { kRed, kGreen, kBlue };
inline constexpr EnumName<Color> kColorNames[] = {
    {Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kBlue, "blue"}};
constexpr const auto& enum_names(Color) {
  return kColorNames;
}

struct InnerOptions {
  int x = 1;
  std::string label = "a";

  template <class V>
  void visit_fields(V& v) {
    v.field("x", x, "A small number. Default: 1", in_range(0, 10));
    v.field("label", label, "A label. Default: a");
  }
};

struct SampleOptions {
  std::string name;
  bool flag = false;
  int count = 3;
  std::uint16_t port = 80;
  std::int64_t big = 0;
  float ratio = 0.5f;
  double rate = 1e-6;
  std::string text = "hi";
  std::string mode = "fast";
  Color color = Color::kRed;
  std::vector<int> ids;
  std::map<std::string, double> weights;
  InnerOptions inner;
  std::vector<InnerOptions> inners;
  std::optional<int> limit;
  std::optional<InnerOptions> extra;
  std::string file = "default.txt";
  std::vector<std::string> files;

  template <class V>
  void visit_fields(V& v) {
    v.field("name", name, "Required name.", required(), non_empty());
    v.field("flag", flag, "A switch. Default: false");
    v.field("count", count, "How many. Default: 3", at_least(0));
    v.field("port", port, "A port. Default: 80");
    v.field("big", big, "A 64-bit number. Default: 0");
    v.field("ratio", ratio, "A float. Default: 0.5", in_range(0, 1));
    v.field("rate", rate, "A double. Default: 1e-6", greater_than(0));
    v.field("text", text, "Free text. Default: hi");
    v.field("mode", mode, "fast or slow. Default: fast", one_of({"fast", "slow"}));
    v.field("color", color, "An enum. Default: red");
    v.field("ids", ids, "Integers, each >= 0. Default: []", at_least(0));
    v.field("weights", weights, "Named numbers, each > 0. Default: {}", greater_than(0));
    v.field("inner", inner, "A nested section.");
    v.field("inners", inners, "A list of sections. Default: []");
    v.field("limit", limit, "An optional number. Default: null", at_least(1));
    v.field("extra", extra, "An optional section. Default: null");
    v.field("file", file, "A path. Default: default.txt", is_path());
    v.field("files", files, "Paths. Default: []", is_path());
  }

  // A relation between fields, reported at the field it names.
  void validate(Checker& c) const {
    if (flag && ids.empty()) c.error("ids", "must not be empty when flag is true");
  }
};

}  // namespace dice::config::testing
