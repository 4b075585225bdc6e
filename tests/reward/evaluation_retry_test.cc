// The one retry of an evaluation the reward service failed: which failures are retried, where the
// second evaluation runs, and what the verdict is told (evaluation_retry.h). The evaluations are
// scripted (a test double of evaluate_candidate), so no GPU, sandbox or python is needed.
#include "reward/evaluation_retry.h"

#include <capnp/schema.h>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "net/wire/enum_name.h"

namespace dice {
namespace {

using FC = schema::FailureClass;
using namespace std::chrono_literals;

EvaluationReport report_of(FC failure, const std::string& detail = "") {
  EvaluationReport r;
  r.failure = failure;
  r.detail = detail;
  r.correct = failure == FC::NONE;
  return r;
}

// A scripted evaluate_candidate: answers the i-th call with outcomes[i] and notes each slot.
struct ScriptedEvaluationDouble {
  explicit ScriptedEvaluationDouble(std::vector<Result<EvaluationReport>> scripted)
      : outcomes(std::move(scripted)) {}
  std::vector<Result<EvaluationReport>> outcomes;
  std::vector<std::string> slots;
  EvaluationAttempt attempt() {
    return [this](const std::string& slot) -> Result<EvaluationReport> {
      slots.push_back(slot);
      return outcomes.at(slots.size() - 1);
    };
  }
};

TEST(EvaluationRetryTest, OnlyTheServicesOwnFaultsAreRetried) {
  const auto enumerants = capnp::Schema::from<FC>().getEnumerants();
  ASSERT_GT(enumerants.size(), 18u);
  for (const auto e : enumerants) {
    const auto failure = static_cast<FC>(e.getOrdinal());
    const bool ours = failure == FC::INTERNAL_ERROR || failure == FC::SANDBOX_UNAVAILABLE;
    EXPECT_EQ(retry_evaluation(failure), ours) << wire::enum_name(failure);
  }
}

TEST(EvaluationRetryTest, AnInternalErrorRunsOnceMoreOnAnotherGpu) {
  GpuSlotPool pool({"0/0", "0/1", "1/0"});
  ScriptedEvaluationDouble judge{
      {report_of(FC::INTERNAL_ERROR, "the judge's own TypeError"), report_of(FC::NONE)}};
  const RetriedEvaluation run = evaluate_with_one_retry(pool, nullptr, judge.attempt());
  ASSERT_EQ(judge.slots.size(), 2u);
  EXPECT_NE(gpu_of_slot(judge.slots[1]), gpu_of_slot(judge.slots[0]));
  EXPECT_EQ(run.slot, judge.slots[1]);
  ASSERT_TRUE(run.report.ok());
  EXPECT_EQ(run.report->failure, FC::NONE);
  EXPECT_EQ(run.retried_after,
            "slot " + judge.slots[0] + ": internalError: the judge's own TypeError");
  EXPECT_EQ(pool.waiting(), 0u);
}

TEST(EvaluationRetryTest, AnEvaluatorErrorAndAnUnavailableSandboxAreRetriedToo) {
  GpuSlotPool pool({"0/0", "1/0"});
  ScriptedEvaluationDouble judge{
      {Status::internal("cannot read judge.py"), report_of(FC::SANDBOX_UNAVAILABLE, "userns")}};
  const RetriedEvaluation run = evaluate_with_one_retry(pool, nullptr, judge.attempt());
  ASSERT_EQ(judge.slots.size(), 2u);  // and no third: one retry only
  EXPECT_NE(judge.slots[1], judge.slots[0]);
  ASSERT_TRUE(run.report.ok());
  EXPECT_EQ(run.report->failure, FC::SANDBOX_UNAVAILABLE);  // the verdict is the second's
  EXPECT_NE(run.retried_after.find(": internalError: "), std::string::npos) << run.retried_after;
  EXPECT_NE(run.retried_after.find("cannot read judge.py"), std::string::npos);
}

TEST(EvaluationRetryTest, TheCandidatesOwnFailuresAreItsVerdictAtOnce) {
  for (const FC failure : {FC::CRASHED, FC::TIMEOUT, FC::RUNTIME_ERROR, FC::RESOURCE_LIMIT,
                           FC::ANTI_CHEAT, FC::INCORRECT, FC::NONE}) {
    GpuSlotPool pool({"0/0", "1/0"});
    ScriptedEvaluationDouble judge{{report_of(failure)}};
    const RetriedEvaluation run = evaluate_with_one_retry(pool, nullptr, judge.attempt());
    EXPECT_EQ(judge.slots.size(), 1u) << wire::enum_name(failure);
    EXPECT_EQ(run.retried_after, "") << wire::enum_name(failure);
    EXPECT_EQ(evaluation_failure(run.report), failure);
  }
}

// A judging the learner's cancel killed ends as a fault of the service would, but runs no more:
// nobody waits for its verdict.
TEST(EvaluationRetryTest, ACancelledEvaluationIsNotRetried) {
  GpuSlotPool pool({"0/0", "1/0"});
  Cancellation cancellation;
  ScriptedEvaluationDouble judge{{report_of(FC::INTERNAL_ERROR), report_of(FC::NONE)}};
  const EvaluationAttempt judged = judge.attempt();
  const RetriedEvaluation run =
      evaluate_with_one_retry(pool, &cancellation, [&](const std::string& slot) {
        cancellation.cancel();  // the learner's cancel comes while it is judged
        return judged(slot);
      });
  EXPECT_EQ(judge.slots.size(), 1u);
  EXPECT_EQ(run.retried_after, "");
  EXPECT_EQ(pool.waiting(), 0u);
}

// Cancelled while every slot is busy: no evaluation at all, the wait ends at once.
TEST(EvaluationRetryTest, ACancelEndsTheWaitForASlot) {
  GpuSlotPool pool({"0/0"});
  ASSERT_EQ(pool.acquire(), "0/0");
  Cancellation cancellation;
  cancellation.cancel();
  ScriptedEvaluationDouble judge{{report_of(FC::NONE)}};
  const RetriedEvaluation run = evaluate_with_one_retry(pool, &cancellation, judge.attempt());
  EXPECT_TRUE(judge.slots.empty());
  EXPECT_EQ(run.report.status().code(), StatusCode::kAborted);
  EXPECT_EQ(pool.waiting(), 0u);
  pool.release("0/0");
}

TEST(EvaluationRetryTest, WithoutGpuSlotsTheRetryRunsUnpinned) {
  GpuSlotPool pool({});
  ScriptedEvaluationDouble judge{{report_of(FC::INTERNAL_ERROR), report_of(FC::INCORRECT)}};
  const RetriedEvaluation run = evaluate_with_one_retry(pool, nullptr, judge.attempt());
  EXPECT_EQ(judge.slots, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(run.retried_after, "slot (none): internalError");
  EXPECT_EQ(evaluation_failure(run.report), FC::INCORRECT);
}

// With one slot the retry runs on it again, but only after an evaluation that was already
// waiting for the slot has had its turn.
TEST(EvaluationRetryTest, WithOneSlotTheRetryQueuesBehindTheWaitingEvaluations) {
  GpuSlotPool pool({"0/0"});
  std::mutex mutex;
  std::vector<std::string> order;
  const auto note = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    order.push_back(what);
  };
  std::thread neighbour;
  int calls = 0;
  const RetriedEvaluation run = evaluate_with_one_retry(
      pool, nullptr, [&](const std::string& slot) -> Result<EvaluationReport> {
        note("candidate on " + slot);
        if (++calls > 1) return report_of(FC::NONE);
        // While the first evaluation runs, a neighbour asks for the slot and waits.
        neighbour = std::thread([&] {
          SlotLease lease(pool);
          note("neighbour on " + lease.slot());
        });
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (pool.waiting() < 1 && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(1ms);
        }
        return report_of(FC::INTERNAL_ERROR);
      });
  neighbour.join();
  EXPECT_EQ(order,
            (std::vector<std::string>{"candidate on 0/0", "neighbour on 0/0", "candidate on 0/0"}));
  EXPECT_EQ(run.slot, "0/0");
  EXPECT_EQ(run.retried_after, "slot 0/0: internalError");
}

}  // namespace
}  // namespace dice
