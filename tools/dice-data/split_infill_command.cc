#include "tools/dice-data/split_infill_command.h"

#include <string>

#include "common/durable_file.h"
#include "common/read_file.h"
#include "tools/dice-data/infill_items.h"

namespace dice::data {
namespace {

// Items named in the note on replaced splits before the rest are only counted.
constexpr std::size_t kMaxNamed = 10;

int fail(std::ostream& err, const Status& status) {
  err << "dice-data: " << status.message() << "\n";
  return 1;
}

}  // namespace

int run_split_infill(const SplitInfillRequest& request, std::ostream& out, std::ostream& err) {
  const bool items = !request.items.empty();
  const std::string& input = items ? request.items : request.candidate;
  auto text = read_file(input);
  if (!text.ok()) return fail(err, text.status());

  std::string result;
  std::string summary;
  if (items) {
    auto split = split_items_text(*text, input);
    if (!split.ok()) return fail(err, split.status());
    result = std::move(split->text);
    summary = std::to_string(split->items) + " items split (" + std::to_string(split->had_split) +
              " came with a split, " + std::to_string(split->replaced.size()) +
              " of them replaced)";
    if (!split->replaced.empty()) {
      err << "dice-data: note: " << split->replaced.size()
          << " items came with a split other than this one, replaced:";
      for (std::size_t i = 0; i < split->replaced.size() && i < kMaxNamed; ++i)
        err << (i ? ", " : " ") << split->replaced[i];
      if (split->replaced.size() > kMaxNamed)
        err << " and " << split->replaced.size() - kMaxNamed << " more";
      err << "\n";
    }
  } else {
    auto split = split_candidate_json(*text, input);
    if (!split.ok()) return fail(err, split.status());
    result = std::move(*split);
    summary = "the split of " + input;
  }

  if (request.out.empty()) {
    out << result;
    out.flush();
    if (!out) return fail(err, Status::io_error("standard output: write failed"));
    return 0;
  }
  const Status written = write_file_atomically(request.out, result);
  if (!written.ok()) return fail(err, written);
  out << "dice-data: wrote " << request.out << ": " << summary << "\n";
  return 0;
}

}  // namespace dice::data
