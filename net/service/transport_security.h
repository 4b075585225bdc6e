// What cluster.transport.bind_address and cluster.transport.curve mean for one service: the
// address its listening sockets bind to, and its CURVE keys (docs/SECURITY.md, "A malicious or
// buggy peer on the network").
#pragma once

#include <string>

#include "common/status.h"
#include "net/service/service_flags.h"
#include "net/transport/transport_options.h"

namespace dice::service {

// `host` as a numeric address to bind to: an IP address as it is, "0.0.0.0" (or "*") for every
// interface, a host name resolved (IPv4 first). InvalidArgument naming `what` when it resolves
// to nothing.
Result<std::string> resolve_bind_address(const std::string& host, const std::string& what);

// The learner's work socket and /metrics: cluster.transport.bind_address, else the address
// cluster.learner.host resolves to (the one its workers connect to; 127.0.0.1 by default).
Result<std::string> learner_bind_address(const ClusterOptions& cluster);

// A worker's /metrics: cluster.transport.bind_address, else 127.0.0.1 with the local backend,
// else the address its node's host (cluster.nodes, found by role and worker index) resolves to.
Result<std::string> worker_bind_address(const ClusterOptions& cluster, schema::Role role,
                                        int worker_index);

// "tcp://ADDRESS:PORT" (IPv6 in brackets; port 0 = any free port).
std::string tcp_endpoint(const std::string& address, int port);

// The learner's CURVE options: off when cluster.transport.curve is off for the run's backend,
// else its key pair and every other service's public key from --transport-keys.
// InvalidArgument when CURVE is on and no keys folder was given (or the reverse); the key files'
// errors (curve_keys.h) otherwise.
Result<transport::CurveOptions> learner_curve(const ServiceContext& context);

// A worker's: its key pair ("<role>-<worker index>") and the learner's public key.
Result<transport::CurveOptions> worker_curve(const ServiceContext& context, schema::Role role);

}  // namespace dice::service
