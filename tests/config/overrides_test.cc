// Command-line overrides "a.b.c=value": applied before decoding, so a good one changes the value
// and a bad one (no '=', unknown path, wrong type, bad YAML) is an error that names it.
#include "common/config/overrides.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/config/load.h"
#include "tests/config/sample_options.h"

namespace dice::config::testing {
namespace {

constexpr const char* kBase = "name: n\ncount: 3\ninners:\n  - x: 1\n  - x: 2\n";

Result<SampleOptions> load(const std::vector<std::string>& overrides,
                           const std::string& text = kBase) {
  return load_config_text<SampleOptions>(text, "t.yaml", overrides, "/base");
}

std::string error_of(const std::vector<std::string>& overrides, const std::string& text = kBase) {
  Result<SampleOptions> result = load(overrides, text);
  EXPECT_FALSE(result.ok());
  if (result.ok()) return "";
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  return result.status().message();
}

TEST(ConfigOverridesTest, ReplaceScalarsNestedKeysListsAndMaps) {
  Result<SampleOptions> r = load({"count=7", "inner.x=5", "ids=[1, 2]", "weights={a: 0.5}",
                                  "color=green", "rate=2e-6", "text=", "flag=true"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->count, 7);
  EXPECT_EQ(r->inner.x, 5);
  EXPECT_EQ(r->ids, (std::vector<int>{1, 2}));
  EXPECT_DOUBLE_EQ(r->weights.at("a"), 0.5);
  EXPECT_EQ(r->color, Color::kGreen);
  EXPECT_DOUBLE_EQ(r->rate, 2e-6);
  EXPECT_EQ(r->text, "");  // "key=" is the empty string
  EXPECT_TRUE(r->flag);
}

TEST(ConfigOverridesTest, ListElementsByBracketOrDottedIndex) {
  Result<SampleOptions> r = load({"inners[1].x=8", "inners.0.label=first"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->inners[0].label, "first");
  EXPECT_EQ(r->inners[1].x, 8);
}

TEST(ConfigOverridesTest, LaterOverridesWinAndNullClearsAnOptional) {
  Result<SampleOptions> r = load({"count=4", "count=5", "limit=2", "limit=null"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->count, 5);
  EXPECT_FALSE(r->limit.has_value());
}

TEST(ConfigOverridesTest, CreateMissingSectionsAndWorkOnAnEmptyFile) {
  Result<SampleOptions> r = load({"name=x", "extra.x=4"}, "");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->name, "x");
  ASSERT_TRUE(r->extra.has_value());
  EXPECT_EQ(r->extra->x, 4);
}

TEST(ConfigOverridesTest, MalformedOverridesAreNamed) {
  EXPECT_EQ(error_of({"count"}),
            "override 'count': expected KEY=VALUE, e.g. learner.optimizer.lr=2e-6");
  EXPECT_EQ(error_of({"=3"}), "override '=3': the key before '=' is empty");
  EXPECT_EQ(error_of({"inner..x=3"}), "override 'inner..x=3': empty key in 'inner..x'");
  EXPECT_EQ(error_of({"inners[x].x=3"}),
            "override 'inners[x].x=3': bad list index in 'inners[x].x' (write [0], [1], ...)");
  EXPECT_EQ(error_of({"ids=[1, 2"}),
            "override 'ids=[1, 2': the value is not valid YAML: end of sequence flow not found "
            "(quote it if it is a string)");
}

TEST(ConfigOverridesTest, UnknownPathsAreNamedWithASuggestion) {
  EXPECT_EQ(error_of({"cuont=3"}),
            "override 'cuont=3': cuont: unknown key 'cuont' (did you mean 'count'?)");
  EXPECT_EQ(
      error_of({"inner.lable.deep=3"}),
      "override 'inner.lable.deep=3': inner.lable: unknown key 'lable' (did you mean 'label'?)");
  EXPECT_EQ(error_of({"inners[5].x=3"}),
            "override 'inners[5].x=3': list 'inners' has 2 element(s), so there is no index 5");
  EXPECT_EQ(error_of({"count.x=3"}),
            "override 'count.x=3': 'count' is a value ('3'), so it has no key 'x'");
  EXPECT_EQ(error_of({"inners.first=3"}),
            "override 'inners.first=3': 'inners' is a list; expected an index like inners[0], got "
            "'first'");
  EXPECT_EQ(error_of({"inner[0]=3"}), "override 'inner[0]=3': 'inner' is not a list");
}

TEST(ConfigOverridesTest, WrongTypesAndFailedChecksNameTheOverride) {
  EXPECT_EQ(error_of({"count=abc"}), "override 'count=abc': count: expected an integer, got 'abc'");
  EXPECT_EQ(error_of({"inner.x=99"}), "override 'inner.x=99': inner.x: must be in [0, 10], got 99");
  EXPECT_EQ(error_of({"color=pink"}),
            "override 'color=pink': color: expected one of red, green, blue, got 'pink'");
  EXPECT_EQ(error_of({"inner=5"}), "override 'inner=5': inner: expected a map of keys, got '5'");
  // A problem in the file is still located in the file when overrides are given.
  EXPECT_EQ(error_of({"count=1"}, "name: n\nrate: x\n"),
            "t.yaml:2:7: rate: expected a number, got 'x'");
}

}  // namespace
}  // namespace dice::config::testing
