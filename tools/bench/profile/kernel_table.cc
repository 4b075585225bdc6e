#include "tools/bench/profile/kernel_table.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

namespace dice::bench {
namespace {

struct Rule {
  const char* category;
  std::vector<const char*> words;
};

// First match wins: attention before gemm (flash kernels are built on cutlass), norm before
// reduce (a norm kernel reduces), index before elementwise.
const std::vector<Rule>& rules() {
  static const std::vector<Rule> kRules = {
      {"attention", {"fmha", "flash", "attention", "sdpa"}},
      {"gemm", {"gemm", "cutlass", "cublas", "nvjet", "xmma"}},
      {"norm", {"norm"}},
      {"softmax", {"softmax"}},
      {"reduce", {"reduce"}},
      {"optimizer", {"adam", "multi_tensor"}},
      {"copy/index", {"index", "gather", "scatter", "cat", "copy"}},
      {"elementwise", {"elementwise", "vectorized", "unrolled"}},
  };
  return kRules;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Long template names cut to what fits a line.
std::string shorten(const std::string& name, std::size_t width) {
  return name.size() <= width ? name : name.substr(0, width - 3) + "...";
}

}  // namespace

std::string kernel_category(const std::string& name) {
  const std::string n = lower(name);
  for (const Rule& rule : rules()) {
    for (const char* word : rule.words) {
      if (n.find(word) != std::string::npos) return rule.category;
    }
  }
  return "other";
}

std::string demangle(const char* mangled) {
  if (mangled == nullptr) return "?";
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(mangled);
}

std::string kernel_table(std::vector<KernelTotal> totals, double wall_seconds, int top) {
  std::sort(totals.begin(), totals.end(),
            [](const KernelTotal& a, const KernelTotal& b) { return a.seconds > b.seconds; });
  double all = 0;
  std::map<std::string, KernelTotal> by_category;
  for (const KernelTotal& t : totals) {
    all += t.seconds;
    KernelTotal& c = by_category[t.category];
    c.name = t.category;
    c.count += t.count;
    c.seconds += t.seconds;
  }
  std::vector<KernelTotal> categories;
  for (const auto& [name, total] : by_category) categories.push_back(total);
  std::sort(categories.begin(), categories.end(),
            [](const KernelTotal& a, const KernelTotal& b) { return a.seconds > b.seconds; });

  std::string out;
  char line[256];
  const auto share = [&](double s) { return all > 0 ? 100.0 * s / all : 0.0; };
  std::snprintf(line, sizeof line, "  %-12s %9s %11s %7s\n", "class", "launches", "GPU ms",
                "share");
  out += line;
  for (const KernelTotal& c : categories) {
    std::snprintf(line, sizeof line, "  %-12s %9lld %11.2f %6.1f%%\n", c.name.c_str(),
                  static_cast<long long>(c.count), 1e3 * c.seconds, share(c.seconds));
    out += line;
  }
  std::snprintf(line, sizeof line, "  top %d kernels:\n", top);
  out += line;
  for (int i = 0; i < top && i < static_cast<int>(totals.size()); ++i) {
    const KernelTotal& t = totals[static_cast<std::size_t>(i)];
    std::snprintf(line, sizeof line, "  %6.1f%% %9.2f ms %7lld x  %-11s %s\n", share(t.seconds),
                  1e3 * t.seconds, static_cast<long long>(t.count), t.category.c_str(),
                  shorten(t.name, 120).c_str());
    out += line;
  }
  const double busy = wall_seconds > 0 ? 100.0 * all / wall_seconds : 0.0;
  std::snprintf(line, sizeof line,
                "  kernels and copies %.2f ms of %.2f ms wall: %.1f%% (on one stream, the rest "
                "is the host between kernels)\n",
                1e3 * all, 1e3 * wall_seconds, busy);
  out += line;
  return out;
}

}  // namespace dice::bench
