#include "reward/compile/binding_pch.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/hash/content_hash.h"
#include "common/log.h"
#include "common/remove_tree.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHeaderName = "binding_prelude.h";

}  // namespace

BindingPch::BindingPch(std::string cache_dir, std::string cxx, std::vector<std::string> flags,
                       std::string toolchain_identity)
    : cache_dir_(std::move(cache_dir)),
      cxx_(std::move(cxx)),
      flags_(std::move(flags)),
      toolchain_identity_(std::move(toolchain_identity)) {}

std::string BindingPch::header_for(TorchHeaders headers, const SandboxSpec& sandbox) {
  std::string key_flags;
  for (const auto& f : flags_) key_flags += f + "\n";
  const std::string dir =
      cache_dir_ + "/pch-" +
      content_hash_hex_parts({binding_prelude(headers), cxx_, key_flags, toolchain_identity_});
  const std::string header = dir + "/" + kHeaderName;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = state_.find(dir);
    if (it != state_.end()) return it->second == State::kReady ? header : "";
    std::error_code ec;
    if (fs::exists(header + ".gch", ec)) {  // built by an earlier process
      state_[dir] = State::kReady;
      return header;
    }
    state_[dir] = State::kBuilding;
  }
  const bool built = build(dir, headers, sandbox);
  std::lock_guard<std::mutex> lock(mu_);
  state_[dir] = built ? State::kReady : State::kFailed;
  return built ? header : "";
}

bool BindingPch::build(const std::string& dir, TorchHeaders headers, SandboxSpec sandbox) {
  std::string tmp;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tmp = dir + ".build-" + std::to_string(getpid()) + "-" + std::to_string(build_counter_++);
  }
  std::error_code ec;
  remove_tree(tmp).ignore();
  fs::create_directories(tmp, ec);
  {
    std::ofstream out(tmp + "/" + kHeaderName, std::ios::binary);
    out << binding_prelude(headers);
  }
  const bool privileged = geteuid() == 0 && sandbox.uid >= 0;
  if (privileged && (chown(tmp.c_str(), sandbox.uid, sandbox.gid) != 0 ||
                     chown((tmp + "/" + kHeaderName).c_str(), sandbox.uid, sandbox.gid) != 0)) {
    remove_tree(tmp).ignore();
    return false;
  }
  sandbox.workdir = tmp;
  sandbox.max_output_mb = std::max<std::int64_t>(sandbox.max_output_mb, 4096);  // a .gch is big
  sandbox.argv = {cxx_, "-x", "c++-header", kHeaderName, "-o", std::string(kHeaderName) + ".gch"};
  sandbox.argv.insert(sandbox.argv.end(), flags_.begin(), flags_.end());
  Result<SandboxResult> run = run_sandboxed(sandbox);
  const bool ok = run.ok() && run->succeeded();
  if (!ok) {
    DICE_LOG(Warn) << "binding prelude did not precompile; bindings compile without it"
                   << kv("dir", dir)
                   << kv("why",
                         run.ok() ? describe_sandbox_result(run.value()) : run.status().message());
    remove_tree(tmp).ignore();
    return false;
  }
  // Owned by the worker before it is used, so no sandbox uid can rewrite it.
  if (privileged) {
    for (const auto& entry : fs::directory_iterator(tmp, ec)) {
      if (lchown(entry.path().c_str(), 0, 0) != 0) break;
    }
    if (chown(tmp.c_str(), 0, 0) != 0) {
      remove_tree(tmp).ignore();
      return false;
    }
  }
  fs::permissions(tmp,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  fs::rename(tmp, dir, ec);
  if (ec) {  // another process put one there first
    remove_tree(tmp).ignore();
    return fs::exists(dir + "/" + kHeaderName + ".gch", ec);
  }
  DICE_LOG(Info) << "precompiled the binding prelude" << kv("dir", dir)
                 << kv("seconds", run->wall_seconds);
  return true;
}

}  // namespace dice
