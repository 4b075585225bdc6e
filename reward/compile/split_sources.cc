#include "reward/compile/split_sources.h"

#include <map>
#include <set>
#include <vector>

#include "reward/compile/cuda_tokens.h"
#include "reward/compile/split_items.h"

namespace dice {
namespace {

constexpr char kStubPrefix[] = "dice_split_launch_";

Status not_applicable(const std::string& why) {
  return Status::invalid_argument("split does not apply: " + why);
}

bool is(const CudaToken& t, const char* s) {
  return t.text == s;
}

std::string line_marker(int line) {
  return "#line " + std::to_string(line) + " \"cuda_sources\"\n";
}

// What the sources say, read once.
struct Parsed {
  const std::string& source;
  std::vector<CudaToken> tokens;
  std::vector<SplitItem> items;
  std::map<std::string, const SplitItem*> kernels;  // defined kernels by name
  std::set<std::string> device_variables;
  std::set<std::string> macros;       // names #defined in cuda_sources
  std::set<std::string> list_macros;  // those whose body has a top-level comma
};

// Only flags that change nothing for the host code keep the split's meaning: the host code now
// compiles with the binding file's flags, no longer with extra_cuda_cflags.
Status check_flags(const ExtensionSources& ext) {
  if (!ext.extra_cflags.empty()) return not_applicable("extra_cflags");
  static const char* const kDeviceOnly[] = {
      "-O",         "--use_fast_math", "-use_fast_math", "-lineinfo",
      "--expt-",    "-maxrregcount",   "--maxrregcount", "--ftz",
      "--prec-div", "--prec-sqrt",     "--fmad"};
  for (const auto& flag : ext.extra_cuda_cflags) {
    bool ok = flag == "-std=c++17" || flag == "--std=c++17" || flag == "-w";
    for (const char* prefix : kDeviceOnly) ok = ok || flag.rfind(prefix, 0) == 0;
    if (!ok) return not_applicable("extra_cuda_cflags " + flag);
  }
  return Status::ok_status();
}

// The text of tokens [first, last) as written (comments inside included).
std::string text_of(const Parsed& p, size_t first, size_t last) {
  return p.source.substr(p.tokens[first].begin, p.tokens[last - 1].end - p.tokens[first].begin);
}

// The configuration of the launch whose "<<<" is at `open`: <<<grid, block[, shmem[, stream]]>>>,
// split at top-level commas, into `config`; the index of its ">>>" into `close`.
Status launch_configuration(const Parsed& p, const SplitItem& item, size_t open,
                            const std::string& where, std::vector<std::string>* config,
                            size_t* close) {
  const auto& t = p.tokens;
  size_t j = open + 1;
  size_t piece = j;
  for (int depth = 0; j < item.span.last && !(depth == 0 && is(t[j], ">>>")); ++j) {
    if (is(t[j], "(") || is(t[j], "[") || is(t[j], "{")) ++depth;
    if (is(t[j], ")") || is(t[j], "]") || is(t[j], "}")) --depth;
    // A macro standing for several arguments would shift the stub's parameters.
    if (t[j].kind == CudaToken::kIdentifier && p.list_macros.count(t[j].text) != 0) {
      return not_applicable(where + "a launch configuration with macro " + t[j].text);
    }
    // A "<" or ">" outside brackets might open a template argument list whose commas are
    // not the launch's (foo<1, 2>()): the stub's parameters would be counted wrong.
    if (depth == 0 && (is(t[j], "<") || is(t[j], ">"))) {
      return not_applicable(where + "a '" + t[j].text + "' in a launch configuration");
    }
    if (depth == 0 && is(t[j], ",")) {
      if (j == piece) return not_applicable(where + "an empty launch argument");
      config->push_back(text_of(p, piece, j));
      piece = j + 1;
    }
  }
  if (j >= item.span.last || j == piece) return not_applicable(where + "unreadable launch");
  config->push_back(text_of(p, piece, j));
  if (config->size() < 2 || config->size() > 4) {
    return not_applicable(where + "a launch with " + std::to_string(config->size()) +
                          " configuration arguments");
  }
  *close = j;
  return Status::ok_status();
}

// The stub call that replaces the launch of `kernel` at token `at` (kernel<<<...>>>(...)), into
// `call`; the index of the launch's closing ")" into `args_close_out`.
Status stub_call(const Parsed& p, const SplitItem& item, size_t at, const std::string& where,
                 std::string* call, size_t* args_close_out) {
  const auto& t = p.tokens;
  const std::string& kernel = t[at].text;
  std::vector<std::string> config;
  size_t j = 0;
  DICE_RETURN_IF_ERROR(launch_configuration(p, item, at + 1, where, &config, &j));
  const size_t args_open = j + 1;
  if (args_open >= item.span.last || !is(t[args_open], "(")) {
    return not_applicable(where + "no argument list after the launch configuration");
  }
  size_t args_close = args_open;
  for (int depth = 0; args_close < item.span.last; ++args_close) {
    if (is(t[args_close], "(") || is(t[args_close], "[") || is(t[args_close], "{")) ++depth;
    if (is(t[args_close], ")") || is(t[args_close], "]") || is(t[args_close], "}")) --depth;
    if (depth == 0) break;
  }
  if (args_close >= item.span.last) return not_applicable(where + "unreadable launch");
  while (config.size() < 4) config.push_back("0");  // the launch's defaults: no shmem, stream 0
  *call = std::string(kStubPrefix) + kernel + "(";
  for (const auto& c : config) *call += c + ", ";
  const std::string args = args_close == args_open + 1 ? "" : text_of(p, args_open + 1, args_close);
  *call = args.empty() ? call->substr(0, call->size() - 2) + ")" : *call + args + ")";
  // Keep every later line where it was (compiler messages quote cuda_sources' lines).
  const int lines_lost = t[args_close].line - t[at].line - [&] {
    int n = 0;
    for (char c : *call) n += c == '\n';
    return n;
  }();
  *call += std::string(static_cast<size_t>(std::max(0, lines_lost)), '\n');
  *args_close_out = args_close;
  return Status::ok_status();
}

// Rewrites the launches in host item `item` into stub calls; fails on anything else that names
// a kernel or a device variable, and on a launch it cannot rewrite faithfully.
Status rewrite_host_item(const Parsed& p, const SplitItem& item, std::string* out, int* launches) {
  const auto& t = p.tokens;
  const size_t base = t[item.span.first].begin;
  std::string text = text_of(p, item.span.first, item.span.last);
  struct Edit {
    size_t begin, end;
    std::string with;
  };
  std::vector<Edit> edits;
  std::vector<char> open;
  for (size_t i = item.span.first; i < item.span.last; ++i) {
    const std::string& s = t[i].text;
    if (s == "(" || s == "[" || s == "{") open.push_back(s[0]);
    if ((s == ")" || s == "]" || s == "}") && !open.empty()) open.pop_back();
    if (s == "<<<")
      return not_applicable("line " + std::to_string(t[i].line) +
                            ": a launch of "
                            "something other than a kernel defined here");
    if (t[i].kind != CudaToken::kIdentifier) continue;
    if (p.device_variables.count(s) != 0) {
      return not_applicable("line " + std::to_string(t[i].line) + ": host code names " + s);
    }
    auto kernel = p.kernels.find(s);
    if (kernel == p.kernels.end()) continue;
    const std::string where = "line " + std::to_string(t[i].line) + ": ";
    if (i + 1 >= item.span.last || !is(t[i + 1], "<<<") ||
        (i > 0 && (is(t[i - 1], "::") || is(t[i - 1], ".") || is(t[i - 1], "->")))) {
      return not_applicable(where + "host code names kernel " + s + " other than launching it");
    }
    for (char c : open) {
      if (c != '{') return not_applicable(where + "a launch inside parentheses");
    }
    std::string call;
    size_t args_close = 0;
    DICE_RETURN_IF_ERROR(stub_call(p, item, i, where, &call, &args_close));
    edits.push_back({t[i].begin - base, t[args_close].end - base, call});
    ++*launches;
    i = args_close;
  }
  for (auto e = edits.rbegin(); e != edits.rend(); ++e) {
    text.replace(e->begin, e->end - e->begin, e->with);
  }
  *out += line_marker(t[item.span.first].line) + text + "\n";
  return Status::ok_status();
}

// What host-side items other than host functions must not contain: launches and names of
// kernels or device variables (they would need the device side's symbols).
Status check_host_copy(const Parsed& p, const SplitItem& item) {
  for (size_t i = item.span.first; i < item.span.last; ++i) {
    const CudaToken& t = p.tokens[i];
    const bool kernel = t.kind == CudaToken::kIdentifier && p.kernels.count(t.text) != 0;
    const bool variable = t.kind == CudaToken::kIdentifier && p.device_variables.count(t.text);
    if (is(t, "<<<") || kernel || variable) {
      return not_applicable("line " + std::to_string(t.line) + ": " + t.text +
                            " in code that both sides need");
    }
  }
  return Status::ok_status();
}

// The stub of `kernel`: its declaration for the host side, or with `body` its definition.
Result<std::string> stub(const Parsed& p, const SplitItem& kernel, bool body) {
  const std::string params = kernel.params_close == kernel.params_open + 1
                                 ? ""
                                 : text_of(p, kernel.params_open + 1, kernel.params_close);
  std::string head = "__attribute__((visibility(\"hidden\"))) void " + std::string(kStubPrefix) +
                     kernel.kernel +
                     "(dim3 dice_split_grid, dim3 dice_split_block, size_t dice_split_shmem, "
                     "cudaStream_t dice_split_stream";
  if (!body) return head + (params.empty() ? "" : ", " + params) + ");\n";
  DICE_ASSIGN_OR_RETURN(KernelParameters named, name_parameters(p.tokens, kernel));
  head += (named.declarations.empty() ? "" : ", " + named.declarations) + ") {\n  " +
          kernel.kernel +
          "<<<dice_split_grid, dice_split_block, dice_split_shmem, dice_split_stream>>>(" +
          named.names + ");\n}\n";
  return head;
}

// Headers in front of the device unit: what kernels use of the standard library and CUDA (torch's
// headers brought these in before), and c10's Half/BFloat16 when device code names them.
std::string device_prelude(const Parsed& p, bool c10_types) {
  std::string out =
      "#include <cassert>\n#include <cstddef>\n#include <cstdint>\n#include <cstdio>\n"
      "#include <cmath>\n#include <cfloat>\n#include <climits>\n#include <algorithm>\n"
      "#include <limits>\n#include <type_traits>\n#include <utility>\n#include <cuda.h>\n"
      "#include <cuda_runtime.h>\n";
  bool half = false;
  for (const auto& item : p.items) {
    if (!item.to_device) continue;
    for (size_t i = item.span.first; i < item.span.last; ++i) {
      half = half || names_half_type(p.tokens[i].text);
    }
  }
  if (half || c10_types) out += "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";
  if (c10_types) {
    out +=
        "#include <c10/util/Half.h>\n#include <c10/util/BFloat16.h>\n"
        "namespace at { using c10::Half; using c10::BFloat16; }\n"
        "namespace torch { using c10::Half; using c10::BFloat16; }\n";
  }
  return out;
}

// Headers in front of the host part: what the kernel file's host code had from nvcc and the
// lean prelude (binding.h: kLean) besides the binding's own torch headers.
std::string host_prelude(const std::string& host_text) {
  std::string out = "#include <cuda.h>\n#include <cuda_runtime.h>\n";
  if (host_text.find("at::cuda") != std::string::npos ||
      host_text.find("getCurrentCUDAStream") != std::string::npos) {
    out += "#include <ATen/cuda/CUDAContext.h>\n";
  }
  if (host_text.find("CUDAGuard") != std::string::npos) out += "#include <c10/cuda/CUDAGuard.h>\n";
  if (host_text.find("half") != std::string::npos || host_text.find("bf16") != std::string::npos ||
      host_text.find("bfloat16") != std::string::npos) {
    out += "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";
  }
  return out;
}

}  // namespace

Result<SplitSources> split_host_device(const ExtensionSources& ext) {
  DICE_RETURN_IF_ERROR(check_flags(ext));
  Parsed p{ext.cuda_sources, {}, {}, {}, {}, {}, {}};
  DICE_ASSIGN_OR_RETURN(p.tokens, tokenize_cuda(ext.cuda_sources));
  for (const auto& t : p.tokens) {
    if (t.text.find("dice_split_") != std::string::npos) return not_applicable("dice_split_ name");
  }
  DICE_ASSIGN_OR_RETURN(p.items, classify_items(p.tokens));
  for (const auto& item : p.items) {
    if (item.role == SplitRole::kKernel && item.has_definition) {
      if (p.kernels.count(item.kernel) != 0) return not_applicable("overloaded " + item.kernel);
      p.kernels[item.kernel] = &item;
    }
    p.device_variables.insert(item.device_variables.begin(), item.device_variables.end());
    if (item.role == SplitRole::kDirective && !item.macro.empty()) p.macros.insert(item.macro);
    if (item.macro_has_comma) p.list_macros.insert(item.macro);
  }
  if (p.kernels.empty()) return not_applicable("no kernels");
  SplitSources out;
  out.kernels = static_cast<int>(p.kernels.size());
  bool c10_types = false;
  DICE_RETURN_IF_ERROR(assign_sides(p.tokens, &p.items, &c10_types));
  DICE_RETURN_IF_ERROR(check_cpp_sources(ext, p.items));
  for (const auto& name : ext.functions) {
    if (p.macros.count(name) != 0) return not_applicable("macro " + name);
  }

  std::string device, host;
  for (const auto& item : p.items) {
    const CudaToken& first = p.tokens[item.span.first];
    const std::string text =
        line_marker(first.line) + text_of(p, item.span.first, item.span.last) + "\n";
    if (item.role == SplitRole::kDirective) {
      for (const auto& name : item.directive_names) {
        if (p.kernels.count(name) || p.device_variables.count(name)) {
          return not_applicable("line " + std::to_string(first.line) + ": a directive names " +
                                name);
        }
      }
      if (item.to_device) device += text;
      if (item.to_host) host += text;
      continue;
    }
    if (item.to_device) device += text;
    if (item.role == SplitRole::kKernel) {
      // Every declaration of a kernel declares its stub on the host side; the definition
      // defines it.
      DICE_ASSIGN_OR_RETURN(std::string declaration, stub(p, item, false));
      host += line_marker(first.line) + declaration;
      if (item.has_definition) {
        DICE_ASSIGN_OR_RETURN(std::string definition, stub(p, item, true));
        device += line_marker(first.line) + definition;
      }
      continue;
    }
    if (!item.to_host) continue;
    if (item.role == SplitRole::kHost) {
      DICE_RETURN_IF_ERROR(rewrite_host_item(p, item, &host, &out.launches));
      continue;
    }
    DICE_RETURN_IF_ERROR(check_host_copy(p, item));
    // A __host__ __device__ function is compiled on both sides; inline, so the two copies are
    // one function to the linker.
    bool add_inline = item.role == SplitRole::kHostDevice && !is(first, "template");
    for (size_t i = item.span.first; add_inline && i < item.span.body_open; ++i) {
      const std::string& w = p.tokens[i].text;
      add_inline = w != "inline" && w != "__forceinline__" && w != "__inline__";
    }
    host += line_marker(first.line) + (add_inline ? "inline " : "") +
            text_of(p, item.span.first, item.span.last) + "\n";
  }
  if (out.launches == 0) return not_applicable("no launches");
  out.device_unit = device_prelude(p, c10_types) + device;
  out.host_part = host_prelude(host) + host;
  return out;
}

}  // namespace dice
