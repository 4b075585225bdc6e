// Command line shared by the worker test doubles (the learner's rollout and reward doubles, the
// transport's):
//   --endpoint tcp://127.0.0.1:P --id ID [--heartbeat-ms 100] [--sleep-ms 0] [--capacity 1]
//   [--mode M]  (what a double does with its work; the transport's double reads it)
#pragma once

#include <iostream>
#include <string>

namespace dice::test {

struct WorkerTestDoubleFlags {
  std::string endpoint;
  std::string id;
  int heartbeat_ms = 100;
  int sleep_ms = 0;  // delay before answering each work item
  unsigned capacity = 1;
  std::string mode;  // a caller may set its default before parsing
};

inline bool parse_worker_flags(int argc, char** argv, WorkerTestDoubleFlags* flags) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const std::string value = argv[i + 1];
    if (key == "--endpoint") {
      flags->endpoint = value;
    } else if (key == "--id") {
      flags->id = value;
    } else if (key == "--heartbeat-ms") {
      flags->heartbeat_ms = std::stoi(value);
    } else if (key == "--sleep-ms") {
      flags->sleep_ms = std::stoi(value);
    } else if (key == "--capacity") {
      flags->capacity = static_cast<unsigned>(std::stoul(value));
    } else if (key == "--mode") {
      flags->mode = value;
    } else {
      std::cerr << argv[0] << ": unknown flag " << key << "\n";
      return false;
    }
  }
  if (flags->endpoint.empty() || flags->id.empty()) {
    std::cerr << "usage: " << argv[0]
              << " --endpoint E --id ID [--heartbeat-ms H] [--sleep-ms M] [--capacity N] "
                 "[--mode M]\n";
    return false;
  }
  return true;
}

}  // namespace dice::test
