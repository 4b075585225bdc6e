#include "common/status.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

Result<int> parse_positive(int x) {
  if (x <= 0) return Status::invalid_argument("x=" + std::to_string(x) + ": expected > 0");
  return x;
}

Status doubled(int x, int* out) {
  DICE_ASSIGN_OR_RETURN(int v, parse_positive(x));
  *out = 2 * v;
  return Status::ok_status();
}

Status chain(int x) {
  int out = 0;
  DICE_RETURN_IF_ERROR(doubled(x, &out));
  return out == 2 * x ? Status::ok_status() : Status::internal("wrong");
}

TEST(StatusTest, OkAndErrorsCarryCodeAndMessage) {
  EXPECT_TRUE(Status().ok());
  EXPECT_EQ(Status().to_string(), "ok");
  Status s = Status::corruption("frame 3: truncated");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.to_string(), "corruption: frame 3: truncated");
  EXPECT_EQ(s.with_context("worker w1").message(), "worker w1: frame 3: truncated");
  EXPECT_TRUE(Status().with_context("ignored").ok());
}

TEST(StatusTest, ResultHoldsValueOrStatus) {
  Result<int> good = parse_positive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  Result<int> bad = parse_positive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("x=-1"), std::string::npos);
}

TEST(StatusTest, ResultFromOkStatusIsAnInternalError) {
  Result<int> r = Status::ok_status();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(StatusTest, MacrosPropagateErrors) {
  EXPECT_TRUE(chain(4).ok());
  Status s = chain(0);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dice
