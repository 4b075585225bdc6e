#include "common/json/pretty_json.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

TEST(PrettyJsonTest, OneMemberALineAndFlatContainersOnOneLine) {
  const boost::json::value value = boost::json::parse(
      R"({"name": "relu", "shape_variants": [{"n": 3}, {"n": 9}], "sizes": [1, 2],)"
      R"( "nested": {"inner": {"a": 1}}})");
  EXPECT_EQ(pretty_json(value),
            "{\n"
            "  \"name\": \"relu\",\n"
            "  \"shape_variants\": [{\"n\": 3}, {\"n\": 9}],\n"
            "  \"sizes\": [1, 2],\n"
            "  \"nested\": {\n"
            "    \"inner\": {\"a\": 1}\n"
            "  }\n"
            "}\n");
}

TEST(PrettyJsonTest, TheTextParsesBackToTheSameValue) {
  const boost::json::value value = boost::json::parse(
      R"({"a": [[1, 2], {"b": null}], "c": "x\ny", "d": [], "e": {}, "f": -1.5})");
  EXPECT_EQ(boost::json::parse(pretty_json(value)), value);
}

}  // namespace
}  // namespace dice
