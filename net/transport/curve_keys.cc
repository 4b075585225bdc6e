#include "net/transport/curve_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <zmq.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/durable_file.h"

namespace dice::transport {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kZ85KeyLength = 40;

bool is_z85_key(const std::string& key) {
  if (key.size() != kZ85KeyLength) return false;
  std::uint8_t decoded[32];
  return zmq_z85_decode(decoded, key.c_str()) != nullptr;
}

// Writes `text` to `path` with mode 0600 from the start (never readable by others, not even
// between the write and a chmod), durably (common/durable_file.h).
Status write_private_file(const std::string& path, const std::string& text) {
  DurableWriteOptions options;
  options.mode = 0600;
  return write_file_atomically(path, text, options);
}

// The "<field>: <value>" lines of a key file.
Result<std::map<std::string, std::string>> read_key_fields(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return Status::not_found("no key file " + path + " (dice-cluster up makes the run's keys)");
  }
  if ((info.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    return Status::corruption("key file " + path + " has mode " + mode +
                              ": others may read it; it must be 0600");
  }
  std::ifstream in(path);
  if (!in) return Status::io_error("cannot read key file " + path);
  std::map<std::string, std::string> fields;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const auto colon = line.find(": ");
    if (colon == std::string::npos) {
      return Status::corruption(path + ":" + std::to_string(number) +
                                ": expected \"public: KEY\" or \"secret: KEY\"");
    }
    std::string value = line.substr(colon + 2);
    if (!is_z85_key(value)) {
      return Status::corruption(path + ":" + std::to_string(number) +
                                ": not a Z85 CURVE key (40 characters)");
    }
    fields[line.substr(0, colon)] = std::move(value);
  }
  return fields;
}

Result<std::string> field(const std::map<std::string, std::string>& fields, const std::string& name,
                          const std::string& path) {
  auto found = fields.find(name);
  if (found == fields.end()) return Status::corruption(path + ": no \"" + name + ":\" line");
  return found->second;
}

}  // namespace

Result<CurveKeyPair> make_curve_key_pair() {
  char public_key[kZ85KeyLength + 1];
  char secret_key[kZ85KeyLength + 1];
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    return Status::unavailable(
        std::string("cannot make a CURVE key pair (libzmq without CURVE?): ") +
        zmq_strerror(zmq_errno()));
  }
  return CurveKeyPair{public_key, secret_key};
}

Status ensure_curve_keys(const std::string& dir, const std::vector<std::string>& names) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return Status::io_error("cannot make the keys folder " + dir + ": " + error.message());
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, error);
  if (error) return Status::io_error("cannot make " + dir + " private: " + error.message());
  for (const std::string& name : names) {
    const std::string base = dir + "/" + name;
    if (fs::exists(base + ".key")) continue;
    auto pair = make_curve_key_pair();
    if (!pair.ok()) return pair.status();
    DICE_RETURN_IF_ERROR(write_private_file(
        base + ".key", "public: " + pair->public_key + "\nsecret: " + pair->secret_key + "\n"));
    DICE_RETURN_IF_ERROR(write_private_file(base + ".pub", "public: " + pair->public_key + "\n"));
  }
  return Status::ok_status();
}

Result<CurveKeyPair> read_curve_key_pair(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name + ".key";
  auto fields = read_key_fields(path);
  if (!fields.ok()) return fields.status();
  auto public_key = field(*fields, "public", path);
  if (!public_key.ok()) return public_key.status();
  auto secret_key = field(*fields, "secret", path);
  if (!secret_key.ok()) return secret_key.status();
  return CurveKeyPair{std::move(public_key).value(), std::move(secret_key).value()};
}

Result<std::string> read_curve_public_key(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name + ".pub";
  auto fields = read_key_fields(path);
  if (!fields.ok()) return fields.status();
  return field(*fields, "public", path);
}

Result<std::map<std::string, std::string>> read_curve_public_keys(const std::string& dir,
                                                                  const std::string& except) {
  std::error_code error;
  fs::directory_iterator entries(dir, error);
  if (error) return Status::not_found("no keys folder " + dir + ": " + error.message());
  std::map<std::string, std::string> names_by_key;
  for (const auto& entry : entries) {
    if (entry.path().extension() != ".pub") continue;
    const std::string name = entry.path().stem().string();
    if (name == except) continue;
    auto key = read_curve_public_key(dir, name);
    if (!key.ok()) return key.status();
    auto [it, added] = names_by_key.emplace(*key, name);
    if (!added) {
      return Status::corruption(dir + ": " + name + ".pub and " + it->second +
                                ".pub hold the same public key");
    }
  }
  return names_by_key;
}

bool worker_id_matches_key_name(const std::string& worker_id, const std::string& name) {
  const auto dash = name.rfind('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == name.size()) return false;
  const std::string suffix = "/" + name.substr(0, dash) + "/" + name.substr(dash + 1);
  return worker_id.size() > suffix.size() &&
         worker_id.compare(worker_id.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace dice::transport
