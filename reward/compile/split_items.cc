#include "reward/compile/split_items.h"

#include <algorithm>
#include <cctype>

namespace dice {
namespace {

using Tokens = std::vector<CudaToken>;

Status not_applicable(const std::string& why) {
  return Status::invalid_argument("split does not apply: " + why);
}

bool is(const CudaToken& t, const char* s) {
  return t.text == s;
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// Words that are never a declared name.
bool is_keyword(const std::string& w) {
  static const std::set<std::string> kWords = {"struct",
                                               "class",
                                               "union",
                                               "enum",
                                               "typedef",
                                               "using",
                                               "const",
                                               "constexpr",
                                               "static",
                                               "inline",
                                               "extern",
                                               "volatile",
                                               "unsigned",
                                               "signed",
                                               "int",
                                               "float",
                                               "double",
                                               "char",
                                               "bool",
                                               "short",
                                               "long",
                                               "void",
                                               "auto",
                                               "template",
                                               "typename",
                                               "namespace",
                                               "operator",
                                               "decltype",
                                               "alignas",
                                               "sizeof",
                                               "return",
                                               "public",
                                               "private",
                                               "protected",
                                               "final",
                                               "override",
                                               "noexcept",
                                               "__align__",
                                               "__device__",
                                               "__host__",
                                               "__global__",
                                               "__constant__",
                                               "__shared__",
                                               "__managed__",
                                               "__forceinline__",
                                               "__noinline__",
                                               "__launch_bounds__",
                                               "__restrict__",
                                               "__attribute__",
                                               "__declspec",
                                               "__grid_constant__",
                                               "static_assert"};
  return kWords.count(w) != 0;
}

bool is_attribute_word(const std::string& w) {
  return w == "__align__" || w == "alignas" || w == "__attribute__" || w == "__declspec" ||
         w == "__launch_bounds__" || w == "decltype" || w == "sizeof" || w == "noexcept" ||
         w == "throw";
}

// Index of the bracket closing the one at `open` (within [open, last)), or `last`.
size_t matching(const Tokens& t, size_t open, size_t last) {
  int depth = 0;
  for (size_t i = open; i < last; ++i) {
    if (is(t[i], "(") || is(t[i], "[") || is(t[i], "{")) ++depth;
    if (is(t[i], ")") || is(t[i], "]") || is(t[i], "}")) {
      if (--depth == 0) return i;
    }
  }
  return last;
}

// Names declared at the item's top level: identifiers outside brackets followed by what follows
// a declarator or a class name, and any name after a class key, whatever follows it: a template's
// specialization (`struct Bomb<0, I> {`) must go wherever its primary template goes, or the
// primary recurses without its base case. An enum's enumerators too.
std::set<std::string> declared_names(const Tokens& t, size_t first, size_t last) {
  std::set<std::string> out;
  const bool is_enum = std::any_of(t.begin() + first, t.begin() + last,
                                   [](const CudaToken& x) { return x.text == "enum"; });
  int depth = 0;
  for (size_t i = first; i < last; ++i) {
    const std::string& s = t[i].text;
    if (s == "(" || s == "[" || s == "{") ++depth;
    if (s == ")" || s == "]" || s == "}") --depth;
    if (t[i].kind != CudaToken::kIdentifier || is_keyword(s)) continue;
    if (is_enum && depth > 0) {
      out.insert(s);
      continue;
    }
    if (depth != 0 || i + 1 >= last) continue;
    const std::string& before = i > first ? t[i - 1].text : "";
    if (before == "struct" || before == "class" || before == "union") {
      out.insert(s);
      continue;
    }
    const std::string& next = t[i + 1].text;
    if (next == "[" || next == "=" || next == ";" || next == "," || next == "{" || next == "(" ||
        next == ":") {
      out.insert(s);
    }
  }
  return out;
}

Status classify_directive(const CudaToken& d, SplitItem* item) {
  item->role = SplitRole::kDirective;
  const std::string name = directive_name(d);
  if (name.empty()) return Status::ok_status();  // the null directive "#"
  if (name == "include") {
    const size_t open = d.text.find_first_of("<\"");
    const size_t close = open == std::string::npos ? open : d.text.find_first_of(">\"", open + 1);
    if (close == std::string::npos)
      return not_applicable("line " + std::to_string(d.line) + ": a computed #include");
    const std::string& header = item->header = d.text.substr(open + 1, close - open - 1);
    // torch's own headers are the binding's (torch/extension.h is its prelude already).
    const bool torch = starts_with(header, "torch/") || starts_with(header, "ATen/") ||
                       starts_with(header, "c10/") || starts_with(header, "caffe2/") ||
                       starts_with(header, "pybind11/") || starts_with(header, "THC/") ||
                       header == "Python.h";
    // CUDA headers g++ cannot read.
    const bool device_only =
        starts_with(header, "cub/") || starts_with(header, "thrust/") ||
        starts_with(header, "cooperative_groups") || starts_with(header, "cuda/") ||
        starts_with(header, "crt/") || starts_with(header, "cuda_pipeline") ||
        starts_with(header, "cuda_awbarrier") || header == "mma.h" ||
        (header.size() > 4 && header.compare(header.size() - 4, 4, ".cuh") == 0);
    item->to_host = !device_only && header != "torch/extension.h";
    item->to_device = !torch;
    return Status::ok_status();
  }
  if (name == "pragma") {
    item->to_device = item->to_host = true;
    return Status::ok_status();
  }
  if (name != "define" && name != "undef") {
    return not_applicable("line " + std::to_string(d.line) + ": #" + name);
  }
  auto body = tokenize_cuda(d.text.substr(d.text.find('#') + 1));
  if (!body.ok() || body->size() < 2 || (*body)[1].kind != CudaToken::kIdentifier) {
    return not_applicable("line " + std::to_string(d.line) + ": unreadable #" + name);
  }
  item->macro = (*body)[1].text;
  const std::vector<CudaToken>& b = *body;
  size_t start = 2;
  // A function-like macro's parameter list is not its body.
  if (start < b.size() && is(b[start], "(") && b[start].begin == b[1].end) {
    start = matching(b, start, b.size()) + 1;
  }
  int depth = 0;
  for (size_t i = start; i < b.size(); ++i) {
    if (is(b[i], "<<<")) {
      return not_applicable("line " + std::to_string(d.line) + ": a launch in a macro");
    }
    if (is(b[i], "(") || is(b[i], "[") || is(b[i], "{")) ++depth;
    if (is(b[i], ")") || is(b[i], "]") || is(b[i], "}")) --depth;
    item->macro_has_comma = item->macro_has_comma || (depth == 0 && is(b[i], ","));
    if (b[i].kind == CudaToken::kIdentifier) item->directive_names.push_back(b[i].text);
  }
  item->to_device = item->to_host = true;
  return Status::ok_status();
}

// The identifiers an item uses, into item->uses; whether it has device code or a launch
// anywhere in it (`markers`). Fails on a directive other than #pragma inside it.
Status scan_declaration(const Tokens& t, const std::string& where, SplitItem* item, bool* markers) {
  for (size_t i = item->span.first; i < item->span.last; ++i) {
    if (t[i].kind == CudaToken::kDirective && directive_name(t[i]) != "pragma") {
      return not_applicable(where + "#" + directive_name(t[i]) + " inside a declaration");
    }
    if (t[i].kind == CudaToken::kIdentifier) item->uses.insert(t[i].text);
    *markers = *markers || is(t[i], "__global__") || is(t[i], "__device__") ||
               is(t[i], "__constant__") || is(t[i], "__shared__") || is(t[i], "__managed__") ||
               is(t[i], "<<<");
  }
  return Status::ok_status();
}

// The words in front of the first top-level bracket or initializer, and the declarator's
// parameter list when it has one (its "(", else span.last).
struct DeclarationHead {
  std::set<std::string> words;
  size_t params_open;
};

DeclarationHead declaration_head(const Tokens& t, const SplitItem& item) {
  const size_t first = item.span.first;
  const size_t last = item.span.last;
  size_t head_end = item.span.has_body ? item.span.body_open : last - 1;
  DeclarationHead head{{}, last};
  for (size_t i = first; i < head_end; ++i) {
    if (is(t[i], "{") || is(t[i], "=")) {
      head_end = i;
      break;
    }
    if (is(t[i], "(") || is(t[i], "[")) {
      const bool attribute = i > first && is_attribute_word(t[i - 1].text);
      if (is(t[i], "(") && head.params_open == last && !attribute && i > first &&
          t[i - 1].kind == CudaToken::kIdentifier) {
        head.params_open = i;
      }
      i = matching(t, i, last);
      continue;
    }
    head.words.insert(t[i].text);
  }
  return head;
}

// The index of the first word after any template parameter list of [first, last).
size_t word_after_template(const Tokens& t, size_t first, size_t last) {
  size_t word = first;
  if (is(t[first], "template")) {
    int angle = 0;
    for (word = first + 1; word + 1 < last; ++word) {
      if (is(t[word], "<")) ++angle;
      if (is(t[word], ">") && --angle == 0) break;
    }
    ++word;
  }
  return word;
}

Status classify_declaration(const Tokens& t, SplitItem* item) {
  const size_t first = item->span.first;
  const size_t last = item->span.last;
  const std::string where = "line " + std::to_string(t[first].line) + ": ";
  bool markers = false;  // device code or a launch anywhere in it
  DICE_RETURN_IF_ERROR(scan_declaration(t, where, item, &markers));
  const DeclarationHead declaration = declaration_head(t, *item);
  const std::set<std::string>& head = declaration.words;
  const size_t params_open = declaration.params_open;
  // The first word after any template parameter list.
  const bool is_template = is(t[first], "template");
  const std::string& w = t[std::min(word_after_template(t, first, last), last - 1)].text;
  const bool block =
      item->span.has_body && (w == "namespace" || (w == "inline" && head.count("namespace")) ||
                              (w == "extern" && t[first + 1].kind == CudaToken::kLiteral &&
                               item->span.body_open == first + 2));
  if (block) {
    if (markers) return not_applicable(where + "device code in a namespace or extern block");
    item->role = SplitRole::kHost;
    item->declares = declared_names(t, first, last);
    return Status::ok_status();
  }
  const bool class_like =
      !item->span.has_body &&
      (head.count("struct") || head.count("class") || head.count("union") || head.count("enum") ||
       head.count("typedef") || w == "using" || w == "static_assert" ||
       w == "namespace");  // namespace cg = cooperative_groups;
  const bool function = params_open != last && !class_like;
  item->declares = declared_names(t, first, last);
  if (head.count("__global__")) {
    if (!function) return not_applicable(where + "a __global__ that is not a function");
    if (is_template) return not_applicable(where + "a template kernel");
    item->role = SplitRole::kKernel;
    item->kernel = t[params_open - 1].text;
    item->has_definition = item->span.has_body;
    item->params_open = params_open;
    item->params_close = matching(t, params_open, last);
    for (size_t i = params_open; i < item->params_close; ++i) {
      if (t[i].kind == CudaToken::kIdentifier) item->parameter_uses.insert(t[i].text);
    }
    return Status::ok_status();
  }
  if (head.count("__device__") && function) {
    item->role = head.count("__host__") ? SplitRole::kHostDevice : SplitRole::kDevice;
    return Status::ok_status();
  }
  if (head.count("__device__") || head.count("__constant__") || head.count("__shared__") ||
      head.count("__managed__")) {
    item->role = SplitRole::kDevice;
    item->device_variables.assign(item->declares.begin(), item->declares.end());
    return Status::ok_status();
  }
  if (class_like || head.count("constexpr") || (head.count("const") && !function)) {
    if (markers && !class_like) return not_applicable(where + "device code in a constant");
    item->role = SplitRole::kShared;
    return Status::ok_status();
  }
  item->role = SplitRole::kHost;
  return Status::ok_status();
}

// `using namespace X;`: X, else "".
std::string using_namespace(const Tokens& t, const SplitItem& item) {
  const size_t f = item.span.first;
  if (item.role != SplitRole::kShared || item.span.last - f < 4 || !is(t[f], "using") ||
      !is(t[f + 1], "namespace")) {
    return "";
  }
  return t[f + 2].text;
}

}  // namespace

Result<std::vector<SplitItem>> classify_items(const Tokens& tokens) {
  DICE_ASSIGN_OR_RETURN(std::vector<TopLevelItem> spans, split_top_level(tokens));
  std::vector<SplitItem> items;
  for (const auto& span : spans) {
    SplitItem item;
    item.span = span;
    if (span.directive) {
      DICE_RETURN_IF_ERROR(classify_directive(tokens[span.first], &item));
    } else {
      DICE_RETURN_IF_ERROR(classify_declaration(tokens, &item));
    }
    items.push_back(std::move(item));
  }
  return items;
}

Status assign_sides(const Tokens& tokens, std::vector<SplitItem>* items, bool* c10_types) {
  std::set<std::string> device_uses, host_uses;
  for (auto& item : *items) {
    const std::string ns = using_namespace(tokens, item);
    if (!ns.empty()) {
      // A using-directive declares no name; it goes wherever its namespace exists.
      item.to_device = ns != "torch" && ns != "at" && ns != "c10" && ns != "pybind11";
      item.to_host = ns != "cooperative_groups" && ns != "nvcuda" && ns != "cub";
      continue;
    }
    if (item.role == SplitRole::kDevice || item.role == SplitRole::kHostDevice ||
        item.role == SplitRole::kKernel) {
      item.to_device = true;
      device_uses.insert(item.uses.begin(), item.uses.end());
    }
    if (item.role == SplitRole::kHost) {
      item.to_host = true;
      host_uses.insert(item.uses.begin(), item.uses.end());
    }
    if (item.role == SplitRole::kKernel) {
      host_uses.insert(item.parameter_uses.begin(), item.parameter_uses.end());
    }
  }
  // Shared items (and, for the host, __host__ __device__ functions) that code of a side names,
  // until nothing more is named.
  auto close_over = [&](std::set<std::string>* uses, bool host) {
    for (bool grew = true; grew;) {
      grew = false;
      for (auto& item : *items) {
        bool& in = host ? item.to_host : item.to_device;
        const bool candidate =
            item.role == SplitRole::kShared || (host && item.role == SplitRole::kHostDevice);
        if (in || !candidate || !using_namespace(tokens, item).empty()) continue;
        const bool named = std::any_of(item.declares.begin(), item.declares.end(),
                                       [&](const std::string& n) { return uses->count(n); });
        if (!named) continue;
        in = grew = true;
        uses->insert(item.uses.begin(), item.uses.end());
      }
    }
  };
  close_over(&device_uses, false);
  close_over(&host_uses, true);
  for (auto& item : *items) {
    // Named by neither side (a static_assert, an unused constant): the host side, which has
    // everything the kernel file had.
    if (item.role == SplitRole::kShared && !item.to_device && !item.to_host) item.to_host = true;
    if (!item.to_device || item.role == SplitRole::kDirective) continue;
    for (size_t i = item.span.first; i + 1 < item.span.last; ++i) {
      const CudaToken& tok = tokens[i];
      if (tok.kind != CudaToken::kIdentifier) continue;
      const std::string where = "line " + std::to_string(tok.line) + ": device code names ";
      if (starts_with(tok.text, "TORCH_") || starts_with(tok.text, "AT_") ||
          starts_with(tok.text, "C10_")) {
        return not_applicable(where + tok.text);
      }
      const bool torch_namespace = tok.text == "torch" || tok.text == "at" || tok.text == "c10" ||
                                   tok.text == "caffe2" || tok.text == "pybind11";
      if (!torch_namespace || !is(tokens[i + 1], "::")) continue;
      const std::string member = i + 2 < item.span.last ? tokens[i + 2].text : "";
      if (member != "Half" && member != "BFloat16") {
        return not_applicable(where + tok.text + "::" + member);
      }
      *c10_types = true;
    }
  }
  return Status::ok_status();
}

Result<KernelParameters> name_parameters(const Tokens& t, const SplitItem& kernel) {
  KernelParameters out;
  const size_t open = kernel.params_open;
  const size_t close = kernel.params_close;
  if (close == open + 1 || (close == open + 2 && is(t[open + 1], "void"))) return out;
  std::vector<std::pair<size_t, size_t>> params;
  size_t start = open + 1;
  for (size_t i = start, depth = 0, angle = 0; i <= close; ++i) {
    if (i < close && (is(t[i], "(") || is(t[i], "[") || is(t[i], "{"))) ++depth;
    if (i < close && (is(t[i], ")") || is(t[i], "]") || is(t[i], "}"))) --depth;
    if (depth == 0 && is(t[i], "<")) ++angle;
    if (depth == 0 && is(t[i], ">") && angle > 0) --angle;
    if (i == close || (depth == 0 && angle == 0 && is(t[i], ","))) {
      params.emplace_back(start, i);
      start = i + 1;
    }
  }
  auto join = [&](size_t a, size_t b) {
    std::string s;
    for (size_t i = a; i < b; ++i) s += (s.empty() ? "" : " ") + t[i].text;
    return s;
  };
  for (size_t p = 0; p < params.size(); ++p) {
    const auto [a, b] = params[p];
    size_t end = a;  // the end of the declaration, before any default argument
    while (end < b && !is(t[end], "=")) ++end;
    for (size_t i = a; i < end; ++i) {
      if (is(t[i], "(") || is(t[i], "[") || is(t[i], ".")) {
        return not_applicable("line " + std::to_string(t[i].line) + ": kernel parameter '" +
                              join(a, b) + "'");
      }
    }
    if (end == a) return not_applicable("an empty kernel parameter");
    const CudaToken& last = t[end - 1];
    const bool named = end - a >= 2 && last.kind == CudaToken::kIdentifier &&
                       !is_keyword(last.text) && !is(t[end - 2], "::");
    const std::string name = named ? last.text : "dice_split_p" + std::to_string(p);
    out.declarations += (p == 0 ? "" : ", ") + join(a, end) + (named ? "" : " " + name) +
                        (end < b ? " " + join(end, b) : "");
    out.names += (p == 0 ? "" : ", ") + name;
  }
  return out;
}

Status check_cpp_sources(const ExtensionSources& ext, const std::vector<SplitItem>& items) {
  auto cpp_tokens = tokenize_cuda(ext.cpp_sources);
  if (!cpp_tokens.ok()) return not_applicable("cpp_sources: " + cpp_tokens.status().message());
  auto cpp_items = classify_items(*cpp_tokens);
  if (!cpp_items.ok()) return not_applicable("cpp_sources: " + cpp_items.status().message());
  std::set<std::string> host_uses;
  for (const auto& item : items) {
    if (!item.to_host) continue;
    if (item.role == SplitRole::kDirective) {
      host_uses.insert(item.directive_names.begin(), item.directive_names.end());
      if (!item.macro.empty()) host_uses.insert(item.macro);
    } else {
      host_uses.insert(item.uses.begin(), item.uses.end());
    }
  }
  // What the kernel file had without an #include of its own: torch's headers (which bring in
  // the standard library) and nvcc's CUDA runtime.
  static const std::set<std::string> kHad = {
      "cuda.h",   "cuda_runtime.h", "cuda_runtime_api.h", "math.h",  "stdio.h",  "stdlib.h",
      "stdint.h", "string.h",       "assert.h",           "float.h", "limits.h", "stddef.h"};
  for (const auto& item : *cpp_items) {
    const CudaToken& first = (*cpp_tokens)[item.span.first];
    const std::string& h = item.header;
    const bool had = h.find('.') == std::string::npos || kHad.count(h) != 0 ||
                     starts_with(h, "torch/") || starts_with(h, "ATen/") ||
                     starts_with(h, "c10/") || starts_with(h, "pybind11/");
    if (!h.empty() && !had) {
      return not_applicable("cpp_sources line " + std::to_string(first.line) + " includes " + h);
    }
    if (!using_namespace(*cpp_tokens, item).empty()) {
      return not_applicable("cpp_sources line " + std::to_string(first.line) + ": using namespace");
    }
    std::set<std::string> names = item.declares;
    if (!item.macro.empty()) names.insert(item.macro);
    for (const auto& name : names) {
      const bool exported =
          std::find(ext.functions.begin(), ext.functions.end(), name) != ext.functions.end();
      if (!exported && host_uses.count(name) != 0) {
        return not_applicable("cpp_sources line " + std::to_string(first.line) + " declares " +
                              name + ", which the kernel file's host code names");
      }
    }
  }
  return Status::ok_status();
}

bool names_half_type(const std::string& identifier) {
  std::string lower;
  for (char c : identifier) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("half") != std::string::npos || lower.find("bf16") != std::string::npos ||
         lower.find("bfloat16") != std::string::npos;
}

}  // namespace dice
