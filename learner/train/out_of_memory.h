// A training step that runs out of device memory can often go through with smaller forwards: the
// learner shares its GPU with the rollout worker and the reward's judges, whose use rises and
// falls, and an update's gradient is the same sum of the same per-sample terms however its
// samples are cut into micro-batches. These tell such a failure apart from LibTorch's others, and
// run an attempt again with its forwards cut finer.
#pragma once

#include <functional>
#include <string_view>

#include "common/status.h"

namespace c10 {
class Error;
}

namespace dice {

// `error` as a Status of `where`: Unavailable when the device (or host) ran out of memory, which a
// smaller attempt may not meet; Internal for any other LibTorch failure.
Status torch_failure(std::string_view where, const c10::Error& error);

// Whether `status` is torch_failure()'s out-of-memory kind.
bool out_of_device_memory(const Status& status);

// Runs attempt(*split); while it fails out_of_device_memory and *split * 2 <= most_split, doubles
// *split, calls before_retry(*split, the failure) and runs it again. The last attempt's result;
// *split stays where it ended (later work starts there).
template <typename T>
Result<T> with_finer_forwards(int* split, int most_split,
                              const std::function<Result<T>(int)>& attempt,
                              const std::function<void(int, const Status&)>& before_retry) {
  for (;;) {
    Result<T> result = attempt(*split);
    if (result.ok() || !out_of_device_memory(result.status()) || *split * 2 > most_split) {
      return result;
    }
    *split *= 2;
    before_retry(*split, result.status());
  }
}

}  // namespace dice
