// WorkQueue: a cancelled item is dropped while queued, cancelled while running, and unknown once
// done.
#include "net/service/work_queue.h"

#include <gtest/gtest.h>

#include <capnp/message.h>

namespace dice::service {
namespace {

wire::Decoded<schema::Envelope> eval_request(std::uint64_t work_id) {
  capnp::MallocMessageBuilder message;
  wire::init_envelope(message, "learner", "run").getBody().initEvalRequest().setWorkId(work_id);
  return std::move(wire::decode_envelope(wire::encode(message))).value();
}

TEST(WorkQueueTest, CancelDropsQueuedItemsAndStopsRunningOnes) {
  WorkQueue queue;
  queue.push(1, eval_request(1));
  queue.push(2, eval_request(2));
  auto running = queue.pop();
  ASSERT_TRUE(running.has_value());
  ASSERT_EQ(running->work_id, 1u);

  EXPECT_EQ(queue.cancel(2), WorkQueue::CancelOutcome::kDropped);
  EXPECT_EQ(queue.cancel(1), WorkQueue::CancelOutcome::kStopping);
  EXPECT_TRUE(running->cancellation->cancelled());
  EXPECT_EQ(queue.cancel(99), WorkQueue::CancelOutcome::kNotHeld);
  queue.done(1);
  EXPECT_EQ(queue.cancel(1), WorkQueue::CancelOutcome::kNotHeld) << "finished";

  queue.close();
  EXPECT_FALSE(queue.pop().has_value()) << "the dropped item was handed out";
}

}  // namespace
}  // namespace dice::service
