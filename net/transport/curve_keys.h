// ZeroMQ CURVE keys of a run's services (cluster.transport.curve): one key pair per service,
// made by dice-cluster into the run's keys folder, read by each service at start.
//
// The folder holds, for every service name ("learner", "rollout-0", "reward-3", ...):
//   <name>.key   its public and secret key (Z85, two lines "public: ..." / "secret: ..."), 0600
//   <name>.pub   its public key alone (one line "public: ..."), 0600
// The folder itself is 0700. The learner accepts a connection only from a public key in a .pub
// file of the folder, and a worker's key name binds the worker id it may use (key name
// "reward-3" -> worker id "<node>/reward/3"), so a second connection cannot take a worker's
// identity without that worker's secret key.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace dice::transport {

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters
};

// A fresh key pair from libzmq (libsodium's randomness). Unavailable where libzmq was built
// without CURVE.
Result<CurveKeyPair> make_curve_key_pair();

// Makes `dir` (0700) and, for each name without a <name>.key there, a fresh key pair. Existing
// pairs are kept: a restarted service keeps its identity.
Status ensure_curve_keys(const std::string& dir, const std::vector<std::string>& names);

// <dir>/<name>.key. NotFound or Corruption naming the file; Corruption too for a file others may
// read (not 0600 or stricter), since a secret key anyone can read authenticates anyone.
Result<CurveKeyPair> read_curve_key_pair(const std::string& dir, const std::string& name);

// The public key in <dir>/<name>.pub.
Result<std::string> read_curve_public_key(const std::string& dir, const std::string& name);

// Every <name>.pub of `dir` but `except`'s, as public key -> name. Corruption for an unreadable
// file or a key two names share.
Result<std::map<std::string, std::string>> read_curve_public_keys(const std::string& dir,
                                                                  const std::string& except);

// Whether `worker_id` ("<node>/<role>/<index>") is the worker that key `name` ("<role>-<index>")
// belongs to.
bool worker_id_matches_key_name(const std::string& worker_id, const std::string& name);

}  // namespace dice::transport
