#include "learner/train/out_of_memory.h"

#include <c10/util/Exception.h>

#include <string>

namespace dice {
namespace {

// The caching allocator throws c10::OutOfMemoryError; CUDA calls outside it (a cuBLAS workspace)
// and the host allocator report the same want in a plain c10::Error's message.
bool says_out_of_memory(const c10::Error& error) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&error) != nullptr) return true;
  const std::string text = error.what_without_backtrace();
  return text.find("out of memory") != std::string::npos ||
         text.find("not enough memory") != std::string::npos;
}

constexpr std::string_view kOutOfMemory = "out of memory: ";

}  // namespace

Status torch_failure(std::string_view where, const c10::Error& error) {
  if (says_out_of_memory(error)) {
    return Status(StatusCode::kUnavailable, std::string(where) + ": " + std::string(kOutOfMemory) +
                                                error.what_without_backtrace());
  }
  return Status::internal(std::string(where) + ": " + error.what_without_backtrace());
}

bool out_of_device_memory(const Status& status) {
  return status.code() == StatusCode::kUnavailable &&
         status.message().find(kOutOfMemory) != std::string::npos;
}

}  // namespace dice
