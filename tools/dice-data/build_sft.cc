#include "tools/dice-data/build_sft.h"

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "common/durable_file.h"
#include "common/read_file.h"
#include "reward/judge/judge_resume.h"
#include "tools/dice-data/infill_split.h"
#include "tools/dice-data/item_file.h"
#include "tools/dice-data/sft_pairs.h"
#include "tools/dice-data/sft_report.h"
#include "tools/dice-data/source_norm.h"

namespace dice::data {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// Failure classes of the judge itself, not of the pair: judged again on a rerun.
const std::set<std::string> kJudgeAgain = {"internalError", "sandboxUnavailable"};
// Verdicts named in an error before the rest are only counted.
constexpr std::size_t kMaxNamed = 5;

int fail(std::ostream& err, const std::string& message) {
  err << "dice-data build-sft: " << message << "\n";
  return 1;
}

// The verdict line with build-sft's "pair_hash" as its last member.
Result<std::string> with_pair_hash(const std::string& line, const std::string& hash) {
  const std::size_t close = line.find_last_not_of(" \r\n");
  if (close == std::string::npos || line[close] != '}' || line.find('{') == std::string::npos)
    return Status::internal("the judge gave a line that is not a JSON object: " +
                            line.substr(0, 200));
  return line.substr(0, close) + ", \"pair_hash\": \"" + hash + "\"}";
}

struct Recorded {
  PairVerdict verdict;
  int line = 0;
};

// The verdicts of the complete lines of `path` (its first `complete_bytes`), by id; the last line
// of an id wins.
Result<std::map<std::string, Recorded>> read_recorded(const std::string& path,
                                                      std::uint64_t complete_bytes) {
  std::map<std::string, Recorded> recorded;
  if (complete_bytes == 0) return recorded;
  DICE_ASSIGN_OR_RETURN(std::string text, read_file(path));
  text.resize(std::min<std::uint64_t>(complete_bytes, text.size()));
  int line = 0;
  for (std::size_t at = 0; at < text.size();) {
    ++line;
    std::size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    const std::string_view row(text.data() + at, nl - at);
    at = nl + 1;
    if (row.empty()) continue;
    DICE_ASSIGN_OR_RETURN(PairVerdict v,
                          parse_pair_verdict(row, path + ": line " + std::to_string(line)));
    const std::string id = v.id;
    recorded[id] = Recorded{std::move(v), line};
  }
  return recorded;
}

// The SFT items of a kept pair in `form`; `*unsplit` set when the infilling item was asked for
// and the candidate does not split (infill_split.h).
std::vector<json::value> sft_items(const SftPair& pair, const Decision& decision, SftForm form,
                                   bool* unsplit) {
  std::vector<json::value> items;
  auto item = [&](const std::string& id) {
    json::object o;
    o["id"] = id;
    if (!pair.level.empty()) o["level"] = pair.level;
    o["pytorch_code"] = pair.pytorch_code;
    return o;
  };
  auto speeds = [&](json::object& o) {
    o["speedup"] = decision.speedup;
    o["speedup_lower_bound"] = decision.speedup_low;
  };
  if (form != SftForm::kInfill) {
    json::object o = item(pair.id);
    o["cuda_code"] = pair.cuda_code;
    speeds(o);
    items.emplace_back(std::move(o));
  }
  if (form != SftForm::kEndToEnd) {
    auto split = split_infill(pair.cuda_code, pair.id);
    if (!split.ok()) {
      *unsplit = true;
      return items;
    }
    json::object o = item(form == SftForm::kBoth ? pair.id + "/infill" : pair.id);
    o["prefix"] = split->prefix;
    o["middle"] = split->middle;
    o["suffix"] = split->suffix;
    speeds(o);
    items.emplace_back(std::move(o));
  }
  return items;
}

// Writes `text` to dir/name; an error message naming the file, or "".
std::string write_output(const fs::path& dir, const std::string& name, const std::string& text) {
  const Status written = write_file_atomically((dir / name).string(), text);
  return written.ok() ? "" : written.message();
}

// The input's pairs, which of them repeat an earlier one, and the ones to judge.
struct Input {
  std::vector<SftPair> pairs;
  std::vector<long> duplicate_of;  // source_norm.h's first_of_each over the pairs' keys
  std::vector<JudgeItem> unique;   // the first of each kind, in input order
  std::map<std::string, const SftPair*> by_id;
};

Result<Input> read_input(const std::string& path) {
  Input input;
  DICE_ASSIGN_OR_RETURN(const std::string text, read_file(path));
  DICE_ASSIGN_OR_RETURN(input.pairs, parse_sft_pairs(text, path));
  std::vector<std::string> keys;
  for (const SftPair& p : input.pairs)
    keys.push_back(normalized_pair_key(p.pytorch_code, p.cuda_code));
  input.duplicate_of = first_of_each(keys);
  for (std::size_t i = 0; i < input.pairs.size(); ++i) {
    input.by_id[input.pairs[i].id] = &input.pairs[i];
    if (input.duplicate_of[i] < 0) input.unique.push_back(judge_item(input.pairs[i]));
  }
  return input;
}

// What an earlier run recorded in verdicts.jsonl.
struct Earlier {
  JudgedSoFar so_far;  // the pairs not to judge again, and where the complete lines end
  std::map<std::string, PairVerdict> verdicts;
  std::size_t again = 0;  // recorded failures of the judge itself: judged again
};

Result<Earlier> read_earlier(const std::string& path, const Input& input,
                             const std::string& input_path) {
  Earlier earlier;
  DICE_ASSIGN_OR_RETURN(earlier.so_far, read_judged(path));
  DICE_ASSIGN_OR_RETURN(auto recorded, read_recorded(path, earlier.so_far.complete_bytes));
  std::vector<std::string> changed;
  for (auto& [id, r] : recorded) {
    const auto pair = input.by_id.find(id);
    if (pair == input.by_id.end()) continue;  // not in this input: left alone
    if (r.verdict.pair_hash != pair->second->hash) {
      changed.push_back(path + ": line " + std::to_string(r.line) + ": id " + id);
    } else if (kJudgeAgain.count(r.verdict.failure)) {
      earlier.so_far.done.erase({id, "original"});
      ++earlier.again;
    }
    earlier.verdicts[id] = std::move(r.verdict);
  }
  if (changed.empty()) return earlier;
  std::string message = std::to_string(changed.size()) +
                        " recorded verdicts are of other pairs than " + input_path +
                        " has under their ids (its pytorch_code, cuda_code or shape_variants "
                        "changed):";
  for (std::size_t i = 0; i < changed.size() && i < kMaxNamed; ++i) message += "\n  " + changed[i];
  if (changed.size() > kMaxNamed)
    message += "\n  ... and " + std::to_string(changed.size() - kMaxNamed) + " more";
  return Status::invalid_argument(message +
                                  "\nwrite to another --out, or delete those lines to judge again");
}

// What this run judged: each verdict into `verdicts`, and, when the judge measures, appended to
// the verdicts file (cut back to its complete lines first) as it comes.
struct JudgedNow {
  JudgeCapability capability{true, "full", ""};
  std::set<std::string> ids;
};

Result<JudgedNow> judge_left(const std::vector<JudgeItem>& left, const Input& input,
                             const JudgeOpener& open_judge, const std::string& path,
                             std::uint64_t complete_bytes,
                             std::map<std::string, PairVerdict>* verdicts, std::ostream& err) {
  JudgedNow now;
  if (left.empty()) return now;
  DICE_ASSIGN_OR_RETURN(std::unique_ptr<PairJudge> judge, open_judge());
  now.capability = judge->capability();
  std::ofstream file;
  if (now.capability.measures) {
    std::error_code ec;
    if (fs::exists(path, ec)) fs::resize_file(path, complete_bytes, ec);
    if (ec)
      return Status::io_error(path + ": cannot cut back to its complete lines: " + ec.message());
    file.open(path, std::ios::binary | std::ios::app);
    if (!file) return Status::io_error(path + ": cannot write");
  } else {
    err << "dice-data build-sft: no GPU here (" << now.capability.no_gpu
        << "): correctness and speed cannot be measured, so no pair can be kept and no sft.json "
           "is written. Screening the "
        << left.size() << " pairs left to judge (" << now.capability.mode
        << ": extraction and static checks) instead\n";
  }
  Status emit_error;
  const Status status = judge->judge(left, [&](const std::string& line) {
    auto verdict = parse_pair_verdict(line, "the judge's verdict");
    if (!verdict.ok() || !input.by_id.count(verdict->id)) {
      if (emit_error.ok())
        emit_error = Status::internal("the judge gave a line for no pair: " + line);
      return;
    }
    const std::string& hash = input.by_id.at(verdict->id)->hash;
    auto stamped = with_pair_hash(line, hash);
    if (!stamped.ok()) {
      if (emit_error.ok()) emit_error = stamped.status();
      return;
    }
    if (now.capability.measures) {
      file << *stamped << "\n";
      file.flush();
      if (!file && emit_error.ok()) emit_error = Status::io_error(path + ": write failed");
    }
    verdict->pair_hash = hash;
    now.ids.insert(verdict->id);
    (*verdicts)[verdict->id] = std::move(verdict).value();
  });
  DICE_RETURN_IF_ERROR(emit_error);
  if (!status.ok()) {
    return Status::internal("judging stopped: " + status.message() + " (" +
                            std::to_string(now.ids.size()) + " of " + std::to_string(left.size()) +
                            " judged" + (now.capability.measures ? ", kept in " + path : "") +
                            "; run again to go on)");
  }
  return now;
}

// Every pair's outcome into the report, and the SFT items of the kept ones (none unless
// measured).
struct Assembled {
  SftReport report;
  std::vector<json::value> items;
};

Result<Assembled> assemble(const Input& input, const std::map<std::string, PairVerdict>& verdicts,
                           const JudgedNow& now, const BuildSftOptions& options) {
  ReportSettings settings;
  settings.input = options.input;
  settings.rule = options.rule;
  settings.form = sft_form_name(options.form);
  settings.measured = now.capability.measures;
  if (!settings.measured) {
    settings.screen_mode = now.capability.mode;
    settings.no_gpu = now.capability.no_gpu;
  }
  Assembled out;
  std::vector<ReportedPair> reported;
  std::size_t unsplit = 0;
  for (std::size_t i = 0; i < input.pairs.size(); ++i) {
    const SftPair& pair = input.pairs[i];
    ReportedPair r;
    r.id = pair.id;
    r.level = pair.level;
    if (input.duplicate_of[i] >= 0) {
      r.outcome = "duplicate";
      r.duplicate_of = input.pairs[static_cast<std::size_t>(input.duplicate_of[i])].id;
      reported.push_back(std::move(r));
      continue;
    }
    const auto v = verdicts.find(pair.id);
    if (v == verdicts.end()) return Status::internal("the judge gave no verdict for " + pair.id);
    r.decision = decide(v->second, options.rule);
    r.outcome = r.decision.outcome;
    r.judged_now = now.ids.count(pair.id) > 0;
    if (r.decision.kept && settings.measured) {
      bool no_split = false;
      for (json::value& item : sft_items(pair, r.decision, options.form, &no_split))
        out.items.push_back(std::move(item));
      unsplit += no_split;
    }
    reported.push_back(std::move(r));
  }
  out.report = make_report(std::move(reported), settings);
  out.report.sft_items = out.items.size();
  out.report.infill_unsplit = unsplit;
  return out;
}

}  // namespace

const char* sft_form_name(SftForm form) {
  switch (form) {
    case SftForm::kEndToEnd:
      return "end_to_end";
    case SftForm::kInfill:
      return "infill";
    case SftForm::kBoth:
      return "both";
  }
  return "end_to_end";
}

int run_build_sft(const BuildSftOptions& options, const JudgeOpener& open_judge, std::ostream& out,
                  std::ostream& err) {
  // 1. The pairs, and which of them repeat an earlier one.
  auto input = read_input(options.input);
  if (!input.ok()) return fail(err, input.status().message());

  // 2. What an earlier run judged.
  const fs::path dir(options.out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(err, options.out_dir + ": cannot create the folder: " + ec.message());
  const std::string verdicts_path = (dir / "verdicts.jsonl").string();
  auto earlier = read_earlier(verdicts_path, *input, options.input);
  if (!earlier.ok()) return fail(err, earlier.status().message());
  if (earlier->again > 0) {
    err << "dice-data build-sft: " << earlier->again
        << " recorded verdicts are failures of the judge itself (internalError, "
           "sandboxUnavailable): judging those pairs again\n";
  }
  const std::vector<JudgeItem> left = left_to_judge(input->unique, earlier->so_far);
  const std::size_t pairs = input->pairs.size();
  out << "dice-data build-sft: " << pairs << " pairs, " << pairs - input->unique.size()
      << " duplicates, " << input->unique.size() - left.size() << " judged before, " << left.size()
      << " to judge\n";

  // 3. Judging what is left.
  std::map<std::string, PairVerdict>& verdicts = earlier->verdicts;
  auto now = judge_left(left, *input, open_judge, verdicts_path, earlier->so_far.complete_bytes,
                        &verdicts, err);
  if (!now.ok()) return fail(err, now.status().message());

  // 4. Every pair's outcome, the kept pairs' SFT items, the report.
  auto assembled = assemble(*input, verdicts, *now, options);
  if (!assembled.ok()) return fail(err, assembled.status().message());
  const SftReport& report = assembled->report;
  if (!now->capability.measures) {
    for (const auto& [name, body] : {std::pair{"report-no-gpu.json", report_json(report)},
                                     std::pair{"report-no-gpu.md", report_markdown(report)}}) {
      if (const std::string e = write_output(dir, name, body); !e.empty()) return fail(err, e);
    }
    const std::size_t screened = now->ids.size();
    const std::size_t unmeasured =
        report.by_outcome.count("unmeasured") ? report.by_outcome.at("unmeasured") : 0;
    out << "dice-data build-sft: no GPU: nothing kept, no sft.json written; screened " << screened
        << " pairs, " << screened - std::min(unmeasured, screened)
        << " of them fail before the GPU; wrote " << (dir / "report-no-gpu.md").string()
        << " and .json. Run build-sft on a GPU node to judge them (the " << report.judged_before
        << " pairs judged before stay in " << verdicts_path << ")\n";
    return kBuildSftNoGpu;
  }
  for (const auto& [name, body] : {std::pair{"sft.json", item_array_text(assembled->items)},
                                   std::pair{"report.json", report_json(report)},
                                   std::pair{"report.md", report_markdown(report)}}) {
    if (const std::string e = write_output(dir, name, body); !e.empty()) return fail(err, e);
  }
  for (const char* stale : {"report-no-gpu.json", "report-no-gpu.md"}) fs::remove(dir / stale, ec);
  out << "dice-data build-sft: kept " << report.kept << " of " << pairs << " pairs ("
      << report.duplicates << " duplicates; noise-checked speedup >= " << options.rule.min_speedup
      << "); wrote " << (dir / "sft.json").string() << " (" << report.sft_items << " items, "
      << sft_form_name(options.form) << "), report.json, report.md\n";
  std::size_t judge_failures = 0;
  for (const std::string& failure : kJudgeAgain)
    if (report.by_outcome.count(failure)) judge_failures += report.by_outcome.at(failure);
  if (judge_failures > 0) {
    err << "dice-data build-sft: note: " << judge_failures
        << " pairs got a failure of the judge itself (internalError, sandboxUnavailable), not "
           "of their code: run again to judge them again\n";
  }
  if (report.infill_unsplit > 0) {
    err << "dice-data build-sft: note: " << report.infill_unsplit
        << " kept pairs do not split into DICE's infilling task: no infill item for them\n";
  }
  return 0;
}

}  // namespace dice::data
