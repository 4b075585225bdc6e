#include "rewardlog/keys.h"

#include <cstdio>

namespace dice::rewardlog {
namespace {

constexpr char kSep = '\0';

std::string escaped(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[5];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// Splits "text" 00 "rest" at the first 0x00; false if there is none or the text is empty.
bool split_text(std::string_view key, std::string* text, std::string_view* rest) {
  const size_t sep = key.find(kSep);
  if (sep == std::string_view::npos || sep == 0) return false;
  *text = std::string(key.substr(0, sep));
  *rest = key.substr(sep + 1);
  return true;
}

}  // namespace

const char* family_name(Family family) {
  switch (family) {
    case Family::kRuns:
      return "runs";
    case Family::kSteps:
      return "steps";
    case Family::kCandidates:
      return "candidates";
    case Family::kKernels:
      return "kernels";
    case Family::kMetrics:
      return "metrics";
    case Family::kTasks:
      return "tasks";
  }
  return "unknown";
}

bool is_optional_family(Family family) {
  for (Family f : kOptionalFamilies) {
    if (f == family) return true;
  }
  return false;
}

Status check_key_text(std::string_view what, std::string_view value) {
  if (value.empty()) return Status::invalid_argument(std::string(what) + " is empty");
  if (value.find(kSep) != std::string_view::npos) {
    return Status::invalid_argument(std::string(what) + " \"" + escaped(value) +
                                    "\" contains a 0x00 byte, which the key layout reserves");
  }
  return Status::ok_status();
}

Status check_source_hash(std::string_view hash) {
  if (hash.empty()) return Status::invalid_argument("sourceHash is empty");
  for (char c : hash) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return Status::invalid_argument("sourceHash \"" + escaped(hash) + "\" is not lowercase hex");
    }
  }
  return Status::ok_status();
}

void append_u64_be(std::string* out, uint64_t value) {
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(value >> shift));
}

void append_u32_be(std::string* out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(value >> shift));
}

uint64_t read_u64_be(std::string_view bytes) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

uint32_t read_u32_be(std::string_view bytes) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

std::string run_key(std::string_view run_id) {
  return std::string(run_id);
}

std::string run_prefix(std::string_view run_id) {
  std::string key(run_id);
  key.push_back(kSep);
  return key;
}

std::string step_key(std::string_view run_id, uint64_t step) {
  std::string key = run_prefix(run_id);
  append_u64_be(&key, step);
  return key;
}

std::string candidate_step_prefix(std::string_view run_id, uint64_t step) {
  return step_key(run_id, step);
}

std::string candidate_task_prefix(std::string_view run_id, uint64_t step,
                                  std::string_view task_id) {
  std::string key = candidate_step_prefix(run_id, step);
  key.append(task_id);
  key.push_back(kSep);
  return key;
}

std::string candidate_key(std::string_view run_id, uint64_t step, std::string_view task_id,
                          uint32_t sample) {
  std::string key = candidate_task_prefix(run_id, step, task_id);
  append_u32_be(&key, sample);
  return key;
}

std::string kernel_key(std::string_view source_hash) {
  return std::string(source_hash);
}

std::vector<std::string> verdict_kernel_keys(schema::Verdict::Reader verdict) {
  std::vector<std::string> keys;
  for (auto build : verdict.getBuilds()) {
    std::string hash(build.getSourceHash().cStr(), build.getSourceHash().size());
    if (check_source_hash(hash).ok()) keys.push_back(std::move(hash));
  }
  return keys;
}

std::string metric_name_prefix(std::string_view run_id, std::string_view name) {
  std::string key = run_prefix(run_id);
  key.append(name);
  key.push_back(kSep);
  return key;
}

std::string metric_key(std::string_view run_id, std::string_view name, uint64_t step) {
  std::string key = metric_name_prefix(run_id, name);
  append_u64_be(&key, step);
  return key;
}

std::string task_key(std::string_view run_id, std::string_view task_id) {
  std::string key = run_prefix(run_id);
  key.append(task_id);
  return key;
}

std::optional<KeyParts> parse_key(Family family, std::string_view key) {
  KeyParts parts;
  std::string_view rest;
  switch (family) {
    case Family::kRuns:
      if (!check_key_text("runId", key).ok()) return std::nullopt;
      parts.run_id = std::string(key);
      return parts;
    case Family::kKernels:
      if (!check_source_hash(key).ok()) return std::nullopt;
      parts.source_hash = std::string(key);
      return parts;
    case Family::kSteps:
      if (!split_text(key, &parts.run_id, &rest) || rest.size() != 8) return std::nullopt;
      parts.step = read_u64_be(rest);
      return parts;
    case Family::kCandidates:
      if (!split_text(key, &parts.run_id, &rest) || rest.size() < 8) return std::nullopt;
      parts.step = read_u64_be(rest);
      rest.remove_prefix(8);
      if (!split_text(rest, &parts.task_id, &rest) || rest.size() != 4) return std::nullopt;
      parts.sample = read_u32_be(rest);
      return parts;
    case Family::kMetrics:
      if (!split_text(key, &parts.run_id, &rest)) return std::nullopt;
      if (!split_text(rest, &parts.name, &rest) || rest.size() != 8) return std::nullopt;
      parts.step = read_u64_be(rest);
      return parts;
    case Family::kTasks:
      if (!split_text(key, &parts.run_id, &rest) || !check_key_text("taskId", rest).ok()) {
        return std::nullopt;
      }
      parts.task_id = std::string(rest);
      return parts;
  }
  return std::nullopt;
}

std::string describe_key(Family family, std::string_view key) {
  std::string out = std::string(family_name(family)) + "/";
  const std::optional<KeyParts> parts = parse_key(family, key);
  if (!parts) return out + "<unparseable key " + escaped(key) + ">";
  switch (family) {
    case Family::kRuns:
      return out + escaped(parts->run_id);
    case Family::kKernels:
      return out + parts->source_hash;
    case Family::kSteps:
      return out + escaped(parts->run_id) + "/step=" + std::to_string(parts->step);
    case Family::kCandidates:
      return out + escaped(parts->run_id) + "/step=" + std::to_string(parts->step) +
             "/task=" + escaped(parts->task_id) + "/sample=" + std::to_string(parts->sample);
    case Family::kMetrics:
      return out + escaped(parts->run_id) + "/" + escaped(parts->name) +
             "/step=" + std::to_string(parts->step);
    case Family::kTasks:
      return out + escaped(parts->run_id) + "/task=" + escaped(parts->task_id);
  }
  return out;
}

}  // namespace dice::rewardlog
