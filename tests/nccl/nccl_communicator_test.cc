// The communicator of this build (real NCCL when cmake found it) where no GPU is needed: bad
// arguments are refused before NCCL is touched, and a machine without a CUDA device gets
// Unavailable, not a crash or a hang.
#include "model/nccl/nccl_communicator.h"

#include <gtest/gtest.h>

namespace dice::nccl {
namespace {

using std::chrono::milliseconds;

TEST(NcclCommunicatorTest, UniqueIdHasNcclSizeOrSaysWhyNot) {
  auto id = new_unique_id();
  if (!built_with_nccl()) {
    EXPECT_EQ(id.status().code(), StatusCode::kUnavailable);
    return;
  }
  // ncclGetUniqueId needs a network interface, not a GPU.
  if (id.ok()) {
    EXPECT_EQ(id->size(), kUniqueIdBytes);
  } else {
    EXPECT_EQ(id.status().code(), StatusCode::kInternal) << id.status().to_string();
  }
  EXPECT_NE(describe_nccl().find("NCCL"), std::string::npos);
}

TEST(NcclCommunicatorTest, BadArgumentsAreRefusedFirst) {
  if (!built_with_nccl()) GTEST_SKIP() << "built without NCCL: see nccl_stub_test";
  const std::string id(kUniqueIdBytes, '\x01');
  auto short_id = Communicator::create("short", 2, 1, 0, milliseconds(100));
  EXPECT_EQ(short_id.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(short_id.status().message().find("unique id has 5 bytes"), std::string::npos);
  EXPECT_EQ(Communicator::create(id, 2, 2, 0, milliseconds(100)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Communicator::create(id, 1, 0, 0, milliseconds(100)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(NcclCommunicatorTest, NoSuchDeviceIsUnavailable) {
  if (!built_with_nccl()) GTEST_SKIP() << "built without NCCL: see nccl_stub_test";
  // Device 64 exists nowhere; on a machine without CUDA every device is missing.
  auto comm =
      Communicator::create(std::string(kUniqueIdBytes, '\x01'), 2, 1, 64, milliseconds(100));
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kUnavailable) << comm.status().to_string();
  EXPECT_NE(comm.status().message().find("no CUDA device 64"), std::string::npos);
}

}  // namespace
}  // namespace dice::nccl
