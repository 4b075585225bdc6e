// A reward worker's part in a sandboxed run, as a process a test can SIGKILL mid-candidate
// (sandbox_worker_death_test.cc):
//
//   sandbox_parent_test_double isolated|plain OUT PYTHON_CODE
//
// Starts PYTHON_CODE in the sandbox (isolated: every layer; plain: rlimits and the uid switch
// only) from a thread that ends once the code printed READY, as a pool thread that started a
// process ahead may; once that thread is gone, sends PING and waits for PONG (the run outlived
// the thread that started it); writes the run's pid (isolated: its init's) to OUT; then waits to
// be killed. Exits 1, saying why on stderr, when the run does not get ready or does not answer.
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "reward/sandbox/sandbox.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s isolated|plain OUT PYTHON_CODE\n", argv[0]);
    return 2;
  }
  dice::SandboxSpec spec;
  spec.argv = {"/usr/bin/python3", "-c", argv[3]};
  spec.isolate = std::string(argv[1]) == "isolated";
  spec.memory_limit_mb = 1024;
  spec.timeout_seconds = 600;
  spec.input_pipe = true;
  std::unique_ptr<dice::SandboxProcess> run;
  dice::Status ready = dice::Status::unavailable("not started");
  long starter = 0;  // the starting thread's id
  std::thread([&] {
    starter = syscall(SYS_gettid);
    auto started = dice::SandboxProcess::start(spec);
    if (!started.ok()) {
      ready = started.status();
      return;
    }
    run = std::move(started).value();
    ready = run->wait_for_line("READY", 60);
  }).join();
  // join() returns before the kernel has finished the thread's exit (where a parent-death signal
  // goes out); its /proc entry goes last.
  const std::string task = "/proc/self/task/" + std::to_string(starter);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::filesystem::exists(task) && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (ready.ok()) ready = run->send_input("PING\n", /*keep_open=*/true);
  if (ready.ok()) ready = run->wait_for_line("PONG", 60);
  if (!ready.ok()) {
    const dice::SandboxResult result = run ? run->wait(1) : dice::SandboxResult{};
    std::fprintf(stderr, "not ready: %s (%s) %s\n", ready.to_string().c_str(),
                 dice::describe_sandbox_result(result).c_str(), result.stderr_text.c_str());
    return 1;
  }
  const std::string out = argv[2];
  std::ofstream(out + ".tmp") << run->pid() << "\n";
  std::rename((out + ".tmp").c_str(), out.c_str());
  for (;;) pause();
}
