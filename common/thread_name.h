// Names the calling thread, as top -H, perf and /proc/PID/task/TID/comm show it. Linux keeps 15
// characters; a longer name is cut, not refused.
#pragma once

#include <pthread.h>

#include <string>

namespace dice {

inline void set_current_thread_name(const std::string& name) {
  (void)pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace dice
