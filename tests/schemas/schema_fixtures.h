// Test fixtures for every dice schema struct: fill_*() sets every field to a non-default value
// derived from `salt`; expect_*() checks each field of a reader against the same values with
// GoogleTest assertions. Used by the round-trip and wire robustness tests.
#pragma once

#include <capnp/dynamic.h>

#include <cstdint>
#include <string>

#include "schemas/control.capnp.h"
#include "schemas/rewardlog.capnp.h"
#include "schemas/rollout.capnp.h"
#include "schemas/task.capnp.h"
#include "schemas/verdict.capnp.h"

namespace dice::test {

// A distinct text per field and salt, with UTF-8, a newline and quotes to check text fidelity.
std::string fixture_text(const char* field, std::uint32_t salt);

void fill_task(schema::Task::Builder b, std::uint32_t salt);
void expect_task(schema::Task::Reader r, std::uint32_t salt);
void fill_sampling_params(schema::SamplingParams::Builder b, std::uint32_t salt);
void expect_sampling_params(schema::SamplingParams::Reader r, std::uint32_t salt);
void fill_rollout_request(schema::RolloutRequest::Builder b, std::uint32_t salt);
void expect_rollout_request(schema::RolloutRequest::Reader r, std::uint32_t salt);
void fill_candidate(schema::Candidate::Builder b, std::uint32_t salt);
void expect_candidate(schema::Candidate::Reader r, std::uint32_t salt);
void fill_eval_request(schema::EvalRequest::Builder b, std::uint32_t salt);
void expect_eval_request(schema::EvalRequest::Reader r, std::uint32_t salt);
void fill_finding(schema::Finding::Builder b, std::uint32_t salt);
void expect_finding(schema::Finding::Reader r, std::uint32_t salt);
void fill_timings(schema::Timings::Builder b, std::uint32_t salt);
void expect_timings(schema::Timings::Reader r, std::uint32_t salt);
void fill_verdict(schema::Verdict::Builder b, std::uint32_t salt);
void expect_verdict(schema::Verdict::Reader r, std::uint32_t salt);

void fill_hello(schema::Hello::Builder b, std::uint32_t salt);
void expect_hello(schema::Hello::Reader r, std::uint32_t salt);
void fill_heartbeat(schema::Heartbeat::Builder b, std::uint32_t salt);
void expect_heartbeat(schema::Heartbeat::Reader r, std::uint32_t salt);
void fill_credit(schema::Credit::Builder b, std::uint32_t salt);
void expect_credit(schema::Credit::Reader r, std::uint32_t salt);
void fill_ack(schema::Ack::Builder b, std::uint32_t salt);
void expect_ack(schema::Ack::Reader r, std::uint32_t salt);
// WeightsUpdate has a union: `nccl` picks the arm.
void fill_weights_update(schema::WeightsUpdate::Builder b, std::uint32_t salt, bool nccl);
void expect_weights_update(schema::WeightsUpdate::Reader r, std::uint32_t salt, bool nccl);
void fill_shutdown(schema::Shutdown::Builder b, std::uint32_t salt);
void expect_shutdown(schema::Shutdown::Reader r, std::uint32_t salt);
void fill_cancel(schema::Cancel::Builder b, std::uint32_t salt);
void expect_cancel(schema::Cancel::Reader r, std::uint32_t salt);
void fill_error(schema::Error::Builder b, std::uint32_t salt);
void expect_error(schema::Error::Reader r, std::uint32_t salt);
// Envelope header fields plus the body arm `which` (WeightsUpdate uses its nccl arm).
void fill_envelope(schema::Envelope::Builder b, std::uint32_t salt,
                   schema::Envelope::Body::Which which);
void expect_envelope(schema::Envelope::Reader r, std::uint32_t salt,
                     schema::Envelope::Body::Which which);

void fill_run_record(schema::RunRecord::Builder b, std::uint32_t salt);
void expect_run_record(schema::RunRecord::Reader r, std::uint32_t salt);
void fill_step_record(schema::StepRecord::Builder b, std::uint32_t salt);
void expect_step_record(schema::StepRecord::Reader r, std::uint32_t salt);
void fill_candidate_record(schema::CandidateRecord::Builder b, std::uint32_t salt);
void expect_candidate_record(schema::CandidateRecord::Reader r, std::uint32_t salt);
void fill_kernel_record(schema::KernelRecord::Builder b, std::uint32_t salt);
void expect_kernel_record(schema::KernelRecord::Reader r, std::uint32_t salt);
void fill_metric_record(schema::MetricRecord::Builder b, std::uint32_t salt);
void expect_metric_record(schema::MetricRecord::Reader r, std::uint32_t salt);
void fill_task_record(schema::TaskRecord::Builder b, std::uint32_t salt);
void expect_task_record(schema::TaskRecord::Reader r, std::uint32_t salt);

// Fails the test (naming the field path) for every known field, nested ones included, that still
// holds its default value: proves a fill_*() covers its struct, including fields added later.
void expect_no_default_fields(capnp::DynamicStruct::Reader value, const std::string& path);

}  // namespace dice::test
