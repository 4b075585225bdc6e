// Encoding options to YAML (what --print-config shows), docs derived from the declarations, and
// the scalar helpers both rely on.
#include "common/config/encode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "common/config/describe.h"
#include "common/config/load.h"
#include "common/config/scalar_text.h"
#include "tests/config/sample_options.h"

namespace dice::config::testing {
namespace {

SampleOptions reload(const std::string& text) {
  Result<SampleOptions> r = load_config_text<SampleOptions>(text, "printed.yaml", {}, "/elsewhere");
  EXPECT_TRUE(r.ok()) << r.status().to_string() << "\n" << text;
  return r.ok() ? *r : SampleOptions{};
}

TEST(ConfigEncodeTest, PrintThenReloadGivesTheSameOptions) {
  SampleOptions o;
  o.name = "n: with colon # and hash";
  o.flag = true;
  o.count = 40;
  o.port = 65535;
  o.big = std::numeric_limits<std::int64_t>::min();
  o.ratio = 0.1f;
  o.rate = 1.0 / 3.0;
  o.text = "";
  o.mode = "slow";
  o.color = Color::kBlue;
  o.ids = {0, 7};
  o.weights = {{"a", 1e-300}, {"b", 2.5}};
  o.inners = {InnerOptions{3, "true"}, InnerOptions{4, "null"}};
  o.limit = 5;
  o.extra = InnerOptions{9, "123"};
  o.file = "/abs/file.txt";
  o.files = {"/x", "/y z"};
  std::string printed = to_yaml_text(o);
  SampleOptions back = reload(printed);
  EXPECT_EQ(to_yaml_text(back), printed);
  // Spot checks that the text says what the value is, not just that it is stable.
  EXPECT_EQ(back.name, o.name);
  EXPECT_EQ(back.rate, o.rate);
  EXPECT_EQ(back.ratio, o.ratio);
  EXPECT_EQ(back.big, o.big);
  EXPECT_EQ(back.text, "");
  EXPECT_EQ(back.inners[0].label, "true");
  EXPECT_EQ(back.inners[1].label, "null");
  EXPECT_EQ(back.extra->label, "123");
  EXPECT_EQ(back.weights.at("a"), 1e-300);
}

TEST(ConfigEncodeTest, WritesEveryFieldWithReadableScalars) {
  SampleOptions o;
  o.name = "n";
  o.file = "/f";
  std::string printed = to_yaml_text(o);
  EXPECT_NE(printed.find("rate: 1e-06\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("ratio: 0.5\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("color: red\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("ids: []\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("limit: ~\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("inner:\n  x: 1\n  label: a\n"), std::string::npos) << printed;
}

TEST(ConfigEncodeTest, NumbersFormatShortestAndReadBack) {
  EXPECT_EQ(format_number(0.1), "0.1");
  EXPECT_EQ(format_number(1e-6), "1e-06");
  EXPECT_EQ(format_number(151669.0), "151669");
  EXPECT_EQ(format_number(0.1f), "0.1");
  EXPECT_EQ(format_number(std::numeric_limits<double>::infinity()), ".inf");
  for (double v : {1.0 / 3.0, 2.0 / 7.0 * 1e-200, 6.02214076e23, -0.0, 0.999}) {
    double back = 0;
    ASSERT_TRUE(parse_double_text(format_number(v), &back)) << format_number(v);
    EXPECT_EQ(back, v);
  }
}

TEST(ConfigEncodeTest, ScalarParsingIsStrict) {
  double d = 0;
  EXPECT_TRUE(parse_double_text("1e-6", &d));
  EXPECT_TRUE(parse_double_text("-.inf", &d));
  EXPECT_TRUE(std::isinf(d));
  EXPECT_FALSE(parse_double_text("1.0x", &d));
  EXPECT_FALSE(parse_double_text(" 1", &d));
  EXPECT_FALSE(parse_double_text("nan", &d));
  std::int64_t i = 0;
  EXPECT_TRUE(parse_int64_text("-12", &i));
  EXPECT_EQ(i, -12);
  EXPECT_FALSE(parse_int64_text("1e3", &i));
  EXPECT_FALSE(parse_int64_text("99999999999999999999", &i));
  std::uint64_t u = 0;
  EXPECT_FALSE(parse_uint64_text("-1", &u));
  bool b = false;
  EXPECT_TRUE(parse_bool_text("yes", &b));
  EXPECT_TRUE(b);
  EXPECT_FALSE(parse_bool_text("1", &b));
}

TEST(ConfigEncodeTest, SuggestionsNeedCloseNames) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(closest_name("lerning_rate", {"learning_rate", "warmup"}), "learning_rate");
  EXPECT_EQ(closest_name("xyz", {"learning_rate", "warmup"}), "");
  EXPECT_EQ(closest_name("lr", {"l1", "seed"}), "l1");
}

TEST(ConfigEncodeTest, DescribeListsEveryKeyWithTypeDefaultAndChecks) {
  std::vector<FieldDoc> docs = describe_fields<SampleOptions>();
  auto find = [&](const std::string& path) -> const FieldDoc* {
    for (const auto& doc : docs) {
      if (doc.path == path) return &doc;
    }
    return nullptr;
  };
  const FieldDoc* name = find("name");
  ASSERT_NE(name, nullptr);
  EXPECT_EQ(name->checks, "required; non-empty");
  const FieldDoc* color = find("color");
  ASSERT_NE(color, nullptr);
  EXPECT_EQ(color->type, "one of: red, green, blue");
  EXPECT_EQ(color->default_value, "red");
  const FieldDoc* x = find("inners[].x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->type, "integer");
  EXPECT_EQ(x->checks, "in [0, 10]");
  ASSERT_NE(find("extra.label"), nullptr);
  const FieldDoc* files = find("files");
  ASSERT_NE(files, nullptr);
  EXPECT_EQ(files->type, "list of path");
  const FieldDoc* limit = find("limit");
  ASSERT_NE(limit, nullptr);
  EXPECT_EQ(limit->type, "integer or null");
  std::string table = fields_markdown(docs);
  EXPECT_NE(table.find("| `inner.x` | integer | `1` | in [0, 10] | A small number. Default: 1 |"),
            std::string::npos)
      << table;
}

}  // namespace
}  // namespace dice::config::testing
