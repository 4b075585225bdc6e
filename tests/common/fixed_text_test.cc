// common/fixed_text.h: the digits a log line shows, rounded, never the shortest round-trip form.
#include "common/fixed_text.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

TEST(FixedTextTest, ShowsExactlyTheDigitsAsked) {
  EXPECT_EQ(fixed_text(0.126, 2), "0.13");
  EXPECT_EQ(fixed_text(2, 1), "2.0");
  EXPECT_EQ(fixed_text(0.1 + 0.2, 3), "0.300");
  EXPECT_EQ(fixed_text(1234.56, 0), "1235");
  EXPECT_EQ(fixed_text(-0.5, 2), "-0.50");
}

}  // namespace
}  // namespace dice
