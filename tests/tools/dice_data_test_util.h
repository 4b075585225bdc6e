// Helpers shared by the dice-data tests: reading generated JSON, a small candidate, and picking
// apart a candidate's CUDA source.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <boost/json.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/json/parse_text.h"

namespace dice::data::testing {

// The bytes of a file ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Ran {
  int exit_code = -1;
  std::string output;  // stdout, and stderr unless the command redirects it
};

// Runs a shell command line (arguments already quoted by the caller), its stderr joined to its
// stdout unless `join_stderr` is false.
inline Ran run(const std::string& command, bool join_stderr = true) {
  Ran r;
  FILE* pipe = popen((command + (join_stderr ? " 2>&1" : "")).c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// `s` in single quotes, for a shell command line (paths of the tests have no quote in them).
inline std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

// The objects of a JSON array text; a test failure (and nothing) when it is not one.
inline std::vector<boost::json::object> json_items(const std::string& text,
                                                   const std::string& where) {
  boost::system::error_code ec;
  std::string position;
  const boost::json::value v = parse_json_text(text, &ec, &position);
  std::vector<boost::json::object> out;
  if (ec || !v.is_array()) {
    ADD_FAILURE() << where << ": not a JSON array (" << ec.message() << " at " << position << ")";
    return out;
  }
  for (const auto& e : v.get_array()) {
    if (!e.is_object()) {
      ADD_FAILURE() << where << ": an item is not an object";
      continue;
    }
    out.push_back(e.get_object());
  }
  return out;
}

// A small candidate of the published shape (kernel_infilling_dev.json): imports, a comment,
// the CUDA source string (lines 6-9), cpp declarations, load_inline (line 13), class ModelNew.
inline const char kCandidate[] = R"PY(import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# A kernel and its launcher
source = """
__global__ void k(float* x) { x[0] = 1; }
torch::Tensor f(torch::Tensor x) { k<<<1, 1>>>(x.data_ptr<float>()); return x; }
"""

cpp_src = "torch::Tensor f(torch::Tensor x);"

ext = load_inline(
    name="ext",
    cpp_sources=cpp_src,
    cuda_sources=source,
    functions=["f"],
)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.f(x)
)PY";

inline std::string str(const boost::json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

// The text of the CUDA source string of a middle: between the first and the last `"""`.
inline std::string cuda_source_of(const std::string& middle) {
  const auto open = middle.find("\"\"\"");
  const auto close = middle.rfind("\"\"\"");
  if (open == std::string::npos || close <= open) return "";
  return middle.substr(open + 3, close - open - 3);
}

// The bodies ({...}) of every function whose declaration starts with `qualifier`
// ("__global__", "__device__").
inline std::vector<std::string> function_bodies(const std::string& src,
                                                const std::string& qualifier) {
  std::vector<std::string> bodies;
  for (auto at = src.find(qualifier); at != std::string::npos; at = src.find(qualifier, at + 1)) {
    const auto open = src.find('{', at);
    if (open == std::string::npos) break;
    int depth = 0;
    std::size_t end = open;
    for (; end < src.size(); ++end) {
      if (src[end] == '{') ++depth;
      if (src[end] == '}' && --depth == 0) break;
    }
    bodies.push_back(src.substr(open, end - open + 1));
  }
  return bodies;
}

}  // namespace dice::data::testing
