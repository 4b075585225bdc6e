#include "tools/dice-dash/trace_json.h"

#include <algorithm>
#include <string_view>

namespace dice::dash {
namespace {

namespace json = boost::json;

// The response cut into the trace's tokens: [{"text": T, "step": S}], or null when the record
// has no per-token offsets that pair with its steps. An offset inside a UTF-8 character (two
// tokens sharing one) moves to the character's end, so every piece is whole UTF-8 text.
json::value trace_tokens(schema::CandidateRecord::Reader record) {
  const auto steps = record.getUnmaskStep();
  const auto ends = record.getTokenTextEnds();
  if (steps.size() == 0 || ends.size() != steps.size()) return nullptr;
  const std::string_view text(record.getResponseText().cStr(), record.getResponseText().size());
  json::array tokens;
  size_t start = 0;
  for (unsigned i = 0; i < steps.size(); ++i) {
    size_t end = std::min<size_t>(std::max<size_t>(ends[i], start), text.size());
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    tokens.push_back(json::object{{"text", text.substr(start, end - start)}, {"step", steps[i]}});
    start = end;
  }
  // Text after the last token's end (none when the offsets are whole) keeps no step.
  if (start < text.size()) {
    tokens.push_back(json::object{{"text", text.substr(start)}, {"step", nullptr}});
  }
  return tokens;
}

}  // namespace

// The candidate's trace: its unmask steps, the number of distinct steps and the tokens; a note
// says why a part is missing.
boost::json::object trace_json(schema::CandidateRecord::Reader record) {
  json::array steps;
  uint32_t max_step = 0;
  for (const uint16_t step : record.getUnmaskStep()) {
    steps.push_back(step);
    max_step = std::max<uint32_t>(max_step, step);
  }
  json::object out{{"unmask_steps", steps},
                   {"num_steps", steps.empty() ? 0 : max_step + 1},
                   {"tokens", trace_tokens(record)}};
  if (steps.empty()) {
    out["note"] =
        "no trace in this record (written before dice logged traces, or sampled without one)";
  } else if (out["tokens"].is_null()) {
    out["note"] =
        "the rollout worker gave no per-token offsets for this response (its text had "
        "ill-formed UTF-8 replaced), so the trace cannot be laid over the text";
  }
  return out;
}

}  // namespace dice::dash
