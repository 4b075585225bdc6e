// The pieces of split_sources.h: what each top-level item of cuda_sources is (kernel, device
// helper, shared declaration, host code, directive) and which of the two translation units needs
// it. Shared items go where code names them (by identifier, over-approximated: an extra copy
// costs at most a failed compile and the fallback, a missing one only a failed compile).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "reward/compile/binding.h"
#include "reward/compile/cuda_tokens.h"

namespace dice {

enum class SplitRole {
  kDirective,   // #include, #define, #undef, #pragma at file level
  kShared,      // struct/class/union/enum, typedef/using, constexpr and const globals
  kDevice,      // __device__ function, __device__/__constant__/__shared__/__managed__ variable
  kHostDevice,  // __host__ __device__ function
  kKernel,      // __global__ function (declaration or definition)
  kHost,        // any other function or variable, namespace or extern "C" block of host code
};

struct SplitItem {
  TopLevelItem span;
  SplitRole role = SplitRole::kHost;
  bool to_device = false;  // goes into the device unit
  bool to_host = false;    // goes into the host part
  // kKernel: its name, whether this is its definition, and the "(" and ")" of its parameters.
  std::string kernel;
  bool has_definition = false;
  size_t params_open = 0;
  size_t params_close = 0;
  std::string header;                         // kDirective: the header an #include names
  std::string macro;                          // kDirective: the name a #define or #undef names
  bool macro_has_comma = false;               // kDirective: a #define whose body has a "," at
                                              // its top level (it may expand to a list)
  std::vector<std::string> directive_names;   // kDirective: identifiers in a #define's body
  std::vector<std::string> device_variables;  // kDevice: variables it declares
  std::set<std::string> declares;             // names other items may refer to
  std::set<std::string> uses;                 // identifiers in it
  std::set<std::string> parameter_uses;       // kKernel: identifiers in its parameter list
};

// Roles of the items of `tokens` (tokenize_cuda), or why the split does not apply.
Result<std::vector<SplitItem>> classify_items(const std::vector<CudaToken>& tokens);

// Sets to_device/to_host of every item; fails when device code names torch. `c10_types` is set
// when device code names c10's Half or BFloat16 (which the device unit then includes).
Status assign_sides(const std::vector<CudaToken>& tokens, std::vector<SplitItem>* items,
                    bool* c10_types);

// A kernel's parameter list with every parameter named (unnamed ones get dice_split_p<i>), and
// the names in order, for the stub that forwards them.
struct KernelParameters {
  std::string declarations;
  std::string names;
};
Result<KernelParameters> name_parameters(const std::vector<CudaToken>& tokens,
                                         const SplitItem& kernel);

// cpp_sources come before the host part in one file now: they may only declare what the host
// part does not name (besides the exported functions), use no using-directive, and include only
// headers the kernel file had anyway (torch's, the standard library's, the CUDA runtime's).
Status check_cpp_sources(const ExtensionSources& ext, const std::vector<SplitItem>& items);

// Whether an identifier names a CUDA half or bfloat16 type or intrinsic (cuda_fp16.h, cuda_bf16.h).
bool names_half_type(const std::string& identifier);

}  // namespace dice
