// The learner's ZeroMQ authentication handler (ZAP, RFC 27) for CURVE: libzmq asks it about every
// new connection to a CURVE server socket of the same context, and it admits only the public keys
// of the run's services, naming each connection by its key's name (the message property
// "User-Id" of everything received on it). See curve_keys.h for where the keys come from.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "common/status.h"

namespace dice::transport {

class ZapHandler {
 public:
  // Serves inproc://zeromq.zap.01 on `context` (one handler per context) until destroyed, which
  // must happen before the context is. `names_by_key`: Z85 public key -> name.
  static Result<std::unique_ptr<ZapHandler>> start(zmq::context_t& context,
                                                   std::map<std::string, std::string> names_by_key);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

 private:
  ZapHandler(zmq::context_t& context, std::map<std::string, std::string> names_by_key);
  void run();
  // The reply frames' status code, text and user id for one request.
  void answer(std::vector<zmq::message_t>& request);

  std::map<std::string, std::string> names_by_key_;
  zmq::socket_t socket_;
  std::atomic<bool> stopping_{false};
  std::uint64_t refused_ = 0;  // handler thread only: for the refusal log's throttle
  std::thread thread_;
};

}  // namespace dice::transport
