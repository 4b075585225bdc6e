#include "reward/judge/judge.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <capnp/message.h>
#include <capnp/schema.h>
#include <boost/json.hpp>

#include "common/log.h"
#include "reward/evaluate/evaluator.h"
#include "reward/extract.h"
#include "reward/judge/judge_variants.h"

namespace dice {
namespace {

// Numbers as JSON: finite, shortest round-trip-ish text.
std::string json_number(double value) {
  if (!(value == value) || value > 1e300 || value < -1e300) return "null";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

std::string clip(std::string_view text, size_t n) {
  return std::string(text.substr(0, n)) + (text.size() > n ? "..." : "");
}

Status write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return Status::io_error(path.string() + ": cannot write");
  return Status();
}

}  // namespace

std::string json_quote(std::string_view text) {
  return boost::json::serialize(boost::json::string(text));
}

namespace {

// The builds' source hashes as a JSON array.
std::string hash_list(schema::Verdict::Reader verdict) {
  std::string out = "[";
  for (auto build : verdict.getBuilds()) {
    out += (out.size() > 1 ? ", " : "") + json_quote(build.getSourceHash().cStr());
  }
  return out + "]";
}

}  // namespace

Result<std::string> judged_source(const JudgeItem& item) {
  ExtractedSource extracted = extract_candidate(
      judge_response_text(item), item.infill ? item.prefix : "", item.infill ? item.suffix : "");
  if (extracted.failure != schema::FailureClass::NONE) {
    return Status::invalid_argument(failure_class_name(extracted.failure) + ": " +
                                    extracted.detail);
  }
  return extracted.source;
}

std::vector<JudgeItem> with_variants(const std::vector<JudgeItem>& items, bool with_broken,
                                     std::vector<std::string>* without_variants) {
  std::vector<JudgeItem> out = items;
  if (!with_broken) return out;
  for (const JudgeItem& item : items) {
    auto source = judged_source(item);
    std::vector<BrokenVariant> variants;
    if (source.ok()) variants = broken_variants(source.value());
    if (variants.empty() && without_variants) without_variants->push_back(item.id);
    for (BrokenVariant& variant : variants) {
      JudgeItem broken;
      broken.id = item.id;
      broken.variant = variant.name;
      broken.reference = item.reference;
      broken.full_source = std::move(variant.source);
      broken.edit = std::move(variant.edit);
      out.push_back(std::move(broken));
    }
  }
  return out;
}

Status dump_sources(const std::vector<JudgeItem>& candidates, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const char* sub : {"refs", "candidates"}) {
    fs::create_directories(fs::path(dir) / sub, ec);
    if (ec) return Status::io_error(dir + "/" + sub + ": cannot create (" + ec.message() + ")");
  }
  std::ostringstream manifest;
  std::vector<std::string> refs_written;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const JudgeItem& c = candidates[i];
    // Files are numbered, not named by id: ids are free text.
    const std::string ref = "refs/" + std::to_string(i) + ".py";
    const std::string file = "candidates/" + std::to_string(i) + "." + c.variant + ".py";
    if (Status s = write_file(fs::path(dir) / ref, c.reference); !s.ok()) return s;
    manifest << "{\"id\": " << json_quote(c.id) << ", \"variant\": " << json_quote(c.variant)
             << ", \"reference\": " << json_quote(ref);
    auto source = judged_source(c);
    if (source.ok()) {
      if (Status s = write_file(fs::path(dir) / file, source.value()); !s.ok()) return s;
      manifest << ", \"candidate\": " << json_quote(file) << "}\n";
    } else {
      manifest << ", \"candidate\": null, \"error\": " << json_quote(source.status().message())
               << "}\n";
    }
  }
  return write_file(fs::path(dir) / "manifest.jsonl", manifest.str());
}

std::string verdict_json(const JudgeItem& item, schema::Verdict::Reader verdict, bool timed) {
  std::ostringstream out;
  auto timings = verdict.getTimings();
  out << "{\"id\": " << json_quote(item.id) << ", \"variant\": " << json_quote(item.variant)
      << ", \"compiled\": " << (verdict.getCompiled() ? "true" : "false")
      << ", \"correct\": " << (verdict.getCorrect() ? "true" : "false")
      << ", \"failure\": " << json_quote(failure_class_name(verdict.getFailure()))
      << ", \"reward\": " << json_number(verdict.getReward()) << ", \"findings\": [";
  bool first = true;
  for (auto f : verdict.getFindings()) {
    out << (first ? "" : ", ") << "{\"check\": " << json_quote(f.getCheck().cStr())
        << ", \"detail\": " << json_quote(clip(f.getDetail().cStr(), 300))
        << ", \"fatal\": " << (f.getFatal() ? "true" : "false") << "}";
    first = false;
  }
  const bool has_speedup = timed && verdict.getCorrect() && verdict.getSpeedup() > 0;
  out << "], \"compile_seconds\": " << json_number(timings.getCompileSeconds())
      << ", \"eval_seconds\": " << json_number(timings.getEvalSeconds())
      << ", \"speedup\": " << (has_speedup ? json_number(verdict.getSpeedup()) : "null")
      << ", \"kernel_ms\": " << (has_speedup ? json_number(timings.getKernelMsMean()) : "null")
      << ", \"reference_ms\": "
      << (has_speedup ? json_number(timings.getReferenceMsMean()) : "null")
      << ", \"kernel_ms_std\": " << (has_speedup ? json_number(timings.getKernelMsStd()) : "null")
      << ", \"reference_ms_std\": "
      << (has_speedup ? json_number(timings.getReferenceMsStd()) : "null")
      << ", \"timing_trials\": "
      << (has_speedup ? std::to_string(timings.getTimingTrials()) : "null")
      << ", \"max_abs_error\": " << json_number(verdict.getMaxAbsError())
      << ", \"source_hashes\": " << hash_list(verdict) << ", \"edit\": " << json_quote(item.edit)
      << ", \"log_excerpt\": " << json_quote(clip(verdict.getLogExcerpt().cStr(), 600)) << "}";
  return out.str();
}

std::string summary_json(const JudgeSummary& s) {
  std::ostringstream out;
  out << "{\"candidates\": " << s.candidates << ", \"compiled\": " << s.compiled
      << ", \"correct\": " << s.correct << ", \"cache_hits\": " << s.cache_hits
      << ", \"variants\": " << s.variants << ", \"variants_correct\": " << s.variants_correct
      << ", \"split_fallbacks\": " << s.split_fallbacks
      << ", \"aten_binding_fallbacks\": " << s.aten_binding_fallbacks
      << ", \"lean_header_fallbacks\": " << s.lean_header_fallbacks
      << ", \"full_header_builds\": " << s.full_header_builds
      << ", \"own_error_builds\": " << s.own_error_builds
      << ", \"units_not_compiled\": " << s.units_not_compiled
      << ", \"prepare_seconds\": " << json_number(s.prepare_seconds)
      << ", \"seconds\": " << json_number(s.seconds)
      << ", \"per_minute\": " << json_number(s.per_minute()) << "}";
  return out.str();
}

bool JudgeProgress::due(size_t done, size_t total, double seconds) {
  if (done < total && seconds - last_report < interval_seconds) return false;
  last_report = seconds;
  return true;
}

double JudgeProgress::eta_seconds(size_t done, size_t total, double seconds) {
  if (done >= total) return 0;
  if (done == 0) return -1;
  return seconds / static_cast<double>(done) * static_cast<double>(total - done);
}

JudgeSummary run_judge(RewardPipeline& pipeline, const std::vector<JudgeItem>& candidates,
                       int threads, const std::function<void(const std::string&)>& emit) {
  JudgeSummary summary;
  std::mutex mutex;
  std::atomic<size_t> next{0};
  const auto started = std::chrono::steady_clock::now();
  JudgeProgress progress;
  auto worker = [&] {
    for (size_t i = next++; i < candidates.size(); i = next++) {
      const JudgeItem& item = candidates[i];
      capnp::MallocMessageBuilder request_message;
      auto request = request_message.initRoot<schema::EvalRequest>();
      request.setWorkId(i);
      auto task = request.initTask();
      task.setId(item.id);
      task.setPhase(item.infill ? schema::Phase::INFILL : schema::Phase::E2E);
      task.setReferenceSource(item.reference);
      if (item.infill) {
        task.setInfillPrefix(item.prefix);
        task.setInfillSuffix(item.suffix);
      }
      set_shape_variants(item.shape_variants, task);
      auto candidate = request.initCandidate();
      candidate.setText(judge_response_text(item));
      candidate.setSampleIndex(static_cast<uint32_t>(i));
      capnp::MallocMessageBuilder verdict_message;
      auto verdict = verdict_message.initRoot<schema::Verdict>();
      pipeline.evaluate(request, verdict);
      const auto reader = verdict.asReader();
      const std::string line =
          verdict_json(item, reader, reader.getTimings().getTimingTrials() > 0);
      std::lock_guard<std::mutex> lock(mutex);
      ++summary.candidates;
      summary.compiled += reader.getCompiled();
      summary.correct += reader.getCorrect();
      summary.cache_hits += reader.getCompiled() && reader.getTimings().getCompileSeconds() == 0;
      if (item.variant != "original") {
        ++summary.variants;
        summary.variants_correct += reader.getCorrect();
      }
      emit(line);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (progress.due(summary.candidates, candidates.size(), seconds)) {
        DICE_LOG(Info) << "judging" << kv("done", summary.candidates)
                       << kv("total", candidates.size()) << kv("correct", summary.correct)
                       << kv("per_minute", 60.0 * summary.candidates / std::max(seconds, 1e-3))
                       << kv("eta_s", static_cast<std::int64_t>(JudgeProgress::eta_seconds(
                                          summary.candidates, candidates.size(), seconds)));
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  summary.split_fallbacks = pipeline.compiler().split_fallbacks();
  summary.aten_binding_fallbacks = pipeline.compiler().aten_binding_fallbacks();
  summary.lean_header_fallbacks = pipeline.compiler().lean_header_fallbacks();
  summary.full_header_builds = pipeline.compiler().full_header_builds();
  summary.own_error_builds = pipeline.compiler().own_error_builds();
  summary.units_not_compiled = pipeline.compiler().units_not_compiled();
  return summary;
}

}  // namespace dice
