#include "reward/compile/compile_log.h"

#include <cctype>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include "reward/run_failure.h"

namespace dice {
namespace {

namespace fs = std::filesystem;
using FC = schema::FailureClass;

// The excerpt is made from the head of the output (its first errors); a flood of diagnostics
// past this is not read at all.
constexpr size_t kMaxLogBytes = 4 << 20;

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i == 0 ? "" : "\n") + lines[i];
  return out;
}

bool indented(const std::string& line) {
  return !line.empty() && (line[0] == ' ' || line[0] == '\t');
}

bool contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

size_t digits_at(const std::string& s, size_t i) {
  size_t n = 0;
  while (i + n < s.size() && std::isdigit(static_cast<unsigned char>(s[i + n]))) ++n;
  return n;
}

}  // namespace

std::optional<DiagnosticLocation> diagnostic_location(const std::string& line) {
  for (size_t colon = line.find(':'); colon != std::string::npos && colon > 0;
       colon = line.find(':', colon + 1)) {
    size_t at = colon + 1;
    size_t n = digits_at(line, at);
    if (n == 0 || at + n >= line.size() || line[at + n] != ':') continue;
    const int number = std::atoi(line.c_str() + at);
    at += n + 1;
    if (size_t col = digits_at(line, at);
        col > 0 && at + col < line.size() && line[at + col] == ':')
      at += col + 1;
    if (at < line.size() && line[at] == ' ') {
      return DiagnosticLocation{line.substr(0, colon), number, at + 1};
    }
  }
  if (size_t sep = line.find(": "); sep != std::string::npos && sep > 0) {
    const std::string rest = line.substr(sep + 2);
    if (rest.rfind("In ", 0) == 0 || rest.rfind("At global scope", 0) == 0) {
      return DiagnosticLocation{line.substr(0, sep), 0, sep + 2};
    }
  }
  for (size_t paren = line.find('('); paren != std::string::npos && paren > 0;
       paren = line.find('(', paren + 1)) {
    const size_t n = digits_at(line, paren + 1);
    const size_t close = paren + 1 + n;
    if (n > 0 && line.compare(close, 3, "): ") == 0) {
      return DiagnosticLocation{line.substr(0, paren), std::atoi(line.c_str() + paren + 1),
                                close + 3};
    }
  }
  return std::nullopt;
}

namespace {

// The message's kind ("error: ", "fatal error: ", "warning #177-D: "), kept when the rest goes.
std::string message_kind(const std::string& message) {
  const size_t colon = message.find(": ");
  if (colon == std::string::npos || colon > 40) return "";
  for (char c : message.substr(0, colon)) {
    if (!std::islower(static_cast<unsigned char>(c)) &&
        !std::isdigit(static_cast<unsigned char>(c)) && c != ' ' && c != '#' && c != '-' &&
        c != 'D') {
      return "";
    }
  }
  for (const char* kind : {"error", "warning", "note", "remark", "fatal error",
                           "catastrophic error", "internal compiler error"}) {
    if (message.rfind(kind, 0) == 0) return message.substr(0, colon + 2);
  }
  return "";
}

bool is_under(const fs::path& path, const fs::path& root) {
  const std::string p = path.string();
  std::string r = root.string();
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return p == r || (p.size() > r.size() && p.compare(0, r.size(), r) == 0 && p[r.size()] == '/');
}

enum class Owner { kOwn, kPublic, kOther };

class Classifier {
 public:
  explicit Classifier(const CompileLogPolicy& policy) : policy_(policy) {
    for (const auto& f : policy.own_files) {
      own_.push_back((fs::path(policy.build_dir) / f).lexically_normal());
    }
    for (const auto& root : policy.public_roots) {
      std::error_code ec;
      roots_.push_back(fs::path(root).lexically_normal());
      canonical_roots_.push_back(fs::weakly_canonical(root, ec));
      if (ec) canonical_roots_.back() = roots_.back();
    }
  }

  Owner owner(const std::string& printed) {
    auto it = cache_.find(printed);
    if (it != cache_.end()) return it->second;
    return cache_[printed] = classify(printed);
  }

 private:
  Owner classify(const std::string& printed) const {
    // <command-line>, <built-in>: the flags and the compiler's own definitions.
    if (printed.size() > 1 && printed.front() == '<' && printed.back() == '>') return Owner::kOwn;
    const fs::path abs =
        fs::path(printed).is_absolute() ? fs::path(printed) : fs::path(policy_.build_dir) / printed;
    const fs::path normal = abs.lexically_normal();
    for (const auto& own : own_) {
      if (normal == own) return Owner::kOwn;
    }
    // Public only when both the spelled path and the one its links resolve to are under a root
    // ("/usr/include/../../etc/passwd" is not; Debian's torch/include/ATen, a link to
    // /usr/include/ATen, is).
    std::error_code ec;
    const fs::path real = fs::weakly_canonical(abs, ec);
    if (ec) return Owner::kOther;
    bool spelled_public = false;
    bool real_public = false;
    for (size_t i = 0; i < roots_.size(); ++i) {
      spelled_public |= is_under(normal, roots_[i]);
      real_public |= is_under(real, canonical_roots_[i]) || is_under(real, roots_[i]);
    }
    if (spelled_public && real_public) return Owner::kPublic;
    return Owner::kOther;
  }

  const CompileLogPolicy& policy_;
  std::vector<fs::path> own_;
  std::vector<fs::path> roots_;
  std::vector<fs::path> canonical_roots_;
  std::map<std::string, Owner> cache_;
};

}  // namespace

CompilerFailure classify_compiler_failure(const SandboxResult& run) {
  if (run.timed_out) return {FC::COMPILE_TIMEOUT, false};
  const FC sandbox = classify_sandbox_failure(run);
  if (sandbox == FC::INTERNAL_ERROR || sandbox == FC::SANDBOX_UNAVAILABLE) return {sandbox, false};
  // The driver itself killed: the OOM killer, RLIMIT_CPU's hard limit, RLIMIT_FSIZE.
  if (run.signal == SIGKILL || run.signal == SIGXCPU || run.signal == SIGXFSZ) {
    return {FC::RESOURCE_LIMIT, false};
  }
  if (run.signal != 0) return {FC::COMPILE_ERROR, false};
  for (const std::string& line : split_lines(run.stderr_text + "\n" + run.stdout_text)) {
    if (line.empty() || indented(line)) continue;
    for (const char* memory :
         {"catastrophic error: out of memory", ": out of memory allocating", "memory exhausted",
          "terminate called after throwing an instance of 'std::bad_alloc'",
          "Cannot allocate memory", "File too large", "File size limit exceeded",
          "Killed signal terminated program"}) {
      if (contains(line, memory)) return {FC::RESOURCE_LIMIT, false};
    }
    // nvcc: "nvcc error   : 'cicc' died due to signal 9 (Kill signal)".
    const size_t died = line.find("died due to signal ");
    if (died != std::string::npos) {
      const int signal = std::atoi(line.c_str() + died + 19);
      const bool limit = signal == SIGKILL || signal == SIGXCPU || signal == SIGXFSZ;
      return {limit ? FC::RESOURCE_LIMIT : FC::COMPILE_ERROR, false};
    }
    if (contains(line, "internal compiler error")) return {FC::COMPILE_ERROR, false};
  }
  return {FC::COMPILE_ERROR, true};
}

std::string redact_compiler_log(const std::string& log, const CompileLogPolicy& policy) {
  Classifier classifier(policy);
  std::vector<std::string> out;
  Owner owner = Owner::kOwn;  // of the diagnostic the indented lines that follow belong to
  std::string path;
  for (const std::string& line : split_lines(log)) {
    if (line.empty()) {
      out.push_back(line);
      continue;
    }
    if (indented(line)) {
      if (owner == Owner::kOwn) {
        out.push_back(line);
      } else {
        // One placeholder for the quoted line, its caret and context.
        const std::string placeholder = "  [line of " + path + " omitted]";
        if (out.empty() || out.back() != placeholder) out.push_back(placeholder);
      }
      continue;
    }
    std::optional<DiagnosticLocation> at;
    if (line.rfind("In file included from ", 0) != 0) at = diagnostic_location(line);
    if (!at) {  // a summary, an include chain, a driver's message: the compiler's own words
      owner = Owner::kOwn;
      out.push_back(line);
      continue;
    }
    path = at->path;
    owner = classifier.owner(path);
    if (owner == Owner::kOther) {
      out.push_back(line.substr(0, at->message_at) + message_kind(line.substr(at->message_at)) +
                    "[message omitted]");
    } else {
      out.push_back(line);
    }
  }
  return join_lines(out);
}

std::string trim_compiler_log(const std::string& output, int max_lines) {
  const std::vector<std::string> lines = split_lines(output);
  auto mentions_error = [](const std::string& line) {
    std::string lower;
    for (char c : line)
      lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    return lower.find("error") != std::string::npos;
  };
  std::vector<std::string> kept;
  for (size_t i = 0; i < lines.size() && static_cast<int>(kept.size()) < max_lines; ++i) {
    if (!mentions_error(lines[i])) continue;
    kept.push_back(lines[i]);
    // The line after an nvcc/gcc error shows the offending source text.
    if (i + 1 < lines.size() && !mentions_error(lines[i + 1]) &&
        static_cast<int>(kept.size()) < max_lines) {
      kept.push_back(lines[++i]);
    }
  }
  if (kept.empty()) {
    for (size_t i = 0; i < lines.size() && static_cast<int>(kept.size()) < max_lines; ++i) {
      if (!lines[i].empty()) kept.push_back(lines[i]);
    }
  }
  std::string out = join_lines(kept);
  constexpr size_t kMaxChars = 4000;
  if (out.size() > kMaxChars) out = out.substr(0, kMaxChars) + "...";
  return out;
}

std::string compiler_log_excerpt(const std::string& output, const CompileLogPolicy& policy,
                                 int max_lines) {
  const std::string head = output.size() > kMaxLogBytes ? output.substr(0, kMaxLogBytes) : output;
  return trim_compiler_log(redact_compiler_log(head, policy), max_lines);
}

}  // namespace dice
