#include "cluster/logfmt_reader.h"

#include <gtest/gtest.h>

#include "common/log.h"

namespace dice::cluster {
namespace {

TEST(LogfmtReaderTest, ReadsBareAndQuotedValuesInOrder) {
  const auto line = parse_logfmt(
      "ts=2026-12-06T18:45:02.123Z level=info run=r7 component=learner at=x.cc:4 "
      "msg=\"SFT step 3/16\" epoch=1 loss=3.21 tokens_per_s=5120\n");
  ASSERT_TRUE(line.has_value());
  ASSERT_EQ(line->fields.size(), 9u);
  EXPECT_EQ(line->fields[0].key, "ts");
  EXPECT_EQ(line->get("msg"), "SFT step 3/16");
  EXPECT_EQ(line->get("tokens_per_s"), "5120");
  EXPECT_TRUE(line->has("epoch"));
  EXPECT_FALSE(line->has("eta_s"));
  EXPECT_EQ(line->get("eta_s"), "");
}

// Whatever logfmt_quote writes reads back as it was.
TEST(LogfmtReaderTest, ReadsBackWhatLogfmtQuoteWrites) {
  for (const std::string& value :
       {std::string("two words"), std::string("a \"quote\" and a \\ back"), std::string("k=v"),
        std::string("tab\tnew\nline\rend"), std::string("")}) {
    const auto line = parse_logfmt("msg=" + logfmt_quote(value) + " after=1");
    ASSERT_TRUE(line.has_value()) << value;
    EXPECT_EQ(line->get("msg"), value);
    EXPECT_EQ(line->get("after"), "1") << value;
  }
}

TEST(LogfmtReaderTest, RefusesLinesThatAreNotLogfmt) {
  EXPECT_FALSE(parse_logfmt("terminate called after throwing an instance of 'c10::Error'"));
  EXPECT_FALSE(parse_logfmt("=== dice-cluster: 2026-12-06T18:45:02Z starting learner"));
  EXPECT_FALSE(parse_logfmt("msg=\"never closed"));
  EXPECT_FALSE(parse_logfmt("=value"));
  EXPECT_FALSE(parse_logfmt(""));
}

}  // namespace
}  // namespace dice::cluster
