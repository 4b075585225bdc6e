// Small Linux process helpers shared by the supervisor and the dice-cluster commands: is a pid
// still the process we started (pids are reused, so we also compare its start time), and clocks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace dice::cluster {

// The start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat); 0 if there is
// no such process.
std::uint64_t process_start_ticks(pid_t pid);

// True while `pid` exists, is not a zombie and, when start_ticks != 0, is the process that started
// at start_ticks (not a later process that reused the pid).
bool process_alive(pid_t pid, std::uint64_t start_ticks);

// Wall-clock seconds since the epoch (state file times) and a monotonic clock in ms (deadlines).
double wall_seconds();
std::int64_t monotonic_ms();

// "2026-11-30T01:02:03Z" for `seconds` since the epoch.
std::string format_utc(double seconds);

// The absolute path of the running executable (/proc/self/exe); empty if unknown.
std::string self_executable();

}  // namespace dice::cluster
