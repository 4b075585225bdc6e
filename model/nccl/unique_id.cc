// Parts of nccl_communicator.h that need no NCCL.
#include <cstdint>
#include <cstdio>

#include "model/nccl/nccl_communicator.h"

namespace dice::nccl {

std::string unique_id_digest(const std::string& unique_id) {
  // FNV-1a: enough to tell ids apart in a log line; the id itself is binary.
  std::uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : unique_id) hash = (hash ^ c) * 1099511628211ull;
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace dice::nccl
