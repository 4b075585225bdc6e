// What a build without NCCL answers (the stub is built and tested in every build).
#include <gtest/gtest.h>

#include "model/nccl/nccl_communicator.h"

namespace dice::nccl {
namespace {

TEST(NcclStubTest, EverythingIsUnavailableAndSaysWhy) {
  EXPECT_FALSE(built_with_nccl());
  EXPECT_EQ(describe_nccl(), "built without NCCL");
  auto id = new_unique_id();
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(id.status().message().find("built without NCCL"), std::string::npos);
  auto comm = Communicator::create(std::string(kUniqueIdBytes, '\0'), 2, 1, 0,
                                   std::chrono::milliseconds(100));
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(comm.status().message().find("rank 1"), std::string::npos);
  EXPECT_NE(comm.status().message().find("built without NCCL"), std::string::npos);
}

TEST(NcclStubTest, DigestTellsIdsApart) {
  EXPECT_EQ(unique_id_digest("abc"), unique_id_digest("abc"));
  EXPECT_NE(unique_id_digest("abc"), unique_id_digest("abd"));
  EXPECT_EQ(unique_id_digest("abc").size(), 16u);
}

}  // namespace
}  // namespace dice::nccl
