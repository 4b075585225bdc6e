// Test support for the learner's integration tests: writes the tests' tiny random SDAR/Qwen3
// model (tests/model/model_test_util.h) as a Hugging Face folder, so dice-learner has a real
// policy to train without the test binary linking LibTorch.
//
//   learner_tiny_policy_writer DIR
#include <iostream>

#include "model/weights.h"
#include "tests/model/model_test_util.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: learner_tiny_policy_writer DIR\n";
    return 2;
  }
  dice::Qwen3LM lm = dice::testing_util::random_lm(dice::testing_util::tiny_config(), 17);
  dice::Status saved = dice::save_qwen3_lm(*lm, argv[1]);
  if (!saved.ok()) {
    std::cerr << saved.to_string() << "\n";
    return 1;
  }
  return 0;
}
