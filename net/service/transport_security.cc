#include "net/service/transport_security.h"

#include <netdb.h>
#include <sys/socket.h>

#include <memory>

#include "net/transport/curve_keys.h"

namespace dice::service {
namespace {

// The host of the node that runs worker `worker_index` of `role`: worker indices count a role's
// gpus entries across nodes in config order (cluster/service_plan.h).
const std::string* node_host_of(const ClusterOptions& cluster, schema::Role role,
                                int worker_index) {
  const std::string name = transport::role_name(role);
  int first = 0;
  for (const NodeOptions& node : cluster.nodes) {
    auto gpus = node.gpus.find(name);
    if (gpus == node.gpus.end()) continue;
    const int count = static_cast<int>(gpus->second.size());
    if (worker_index < first + count) return &node.host;
    first += count;
  }
  return nullptr;
}

// Whether the config asks for CURVE, and whether the service was given keys, agree.
Status check_keys_given(const ServiceContext& context) {
  const ClusterOptions& cluster = context.config.cluster;
  const bool on = cluster.transport.curve_on(cluster.backend);
  if (on && context.transport_keys.empty()) {
    return Status::invalid_argument(
        "cluster.transport.curve is on for this run but no --transport-keys folder was given: "
        "start the services with dice-cluster up, which makes the run's keys, or set "
        "cluster.transport.curve: off");
  }
  if (!on && !context.transport_keys.empty()) {
    return Status::invalid_argument("--transport-keys " + context.transport_keys +
                                    " given, but cluster.transport.curve is off for this run");
  }
  return Status::ok_status();
}

}  // namespace

Result<std::string> resolve_bind_address(const std::string& host, const std::string& what) {
  if (host == "*" || host == "0.0.0.0") return std::string("0.0.0.0");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int error = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (error != 0 || found == nullptr) {
    return Status::invalid_argument(what + " '" + host + "': resolves to no address (" +
                                    gai_strerror(error) +
                                    "); set cluster.transport.bind_address to an address");
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, ::freeaddrinfo);
  const addrinfo* chosen = found;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      chosen = a;
      break;
    }
  }
  char text[NI_MAXHOST];
  if (::getnameinfo(chosen->ai_addr, chosen->ai_addrlen, text, sizeof text, nullptr, 0,
                    NI_NUMERICHOST) != 0) {
    return Status::invalid_argument(what + " '" + host + "': cannot print its address");
  }
  return std::string(text);
}

Result<std::string> learner_bind_address(const ClusterOptions& cluster) {
  if (!cluster.transport.bind_address.empty()) {
    return resolve_bind_address(cluster.transport.bind_address, "cluster.transport.bind_address");
  }
  return resolve_bind_address(cluster.learner.host, "cluster.learner.host");
}

Result<std::string> worker_bind_address(const ClusterOptions& cluster, schema::Role role,
                                        int worker_index) {
  if (!cluster.transport.bind_address.empty()) {
    return resolve_bind_address(cluster.transport.bind_address, "cluster.transport.bind_address");
  }
  if (cluster.backend == ClusterBackend::kLocal) return std::string("127.0.0.1");
  const std::string* host = node_host_of(cluster, role, worker_index);
  if (host == nullptr) {
    return Status::invalid_argument(std::string("--worker-index ") + std::to_string(worker_index) +
                                    ": cluster.nodes has no " + transport::role_name(role) +
                                    " worker of that index");
  }
  return resolve_bind_address(*host, "cluster.nodes[].host");
}

std::string tcp_endpoint(const std::string& address, int port) {
  const std::string host = address.find(':') != std::string::npos ? "[" + address + "]" : address;
  return "tcp://" + host + ":" + (port == 0 ? std::string("*") : std::to_string(port));
}

Result<transport::CurveOptions> learner_curve(const ServiceContext& context) {
  DICE_RETURN_IF_ERROR(check_keys_given(context));
  transport::CurveOptions curve;
  if (context.transport_keys.empty()) return curve;
  DICE_ASSIGN_OR_RETURN(transport::CurveKeyPair pair,
                        transport::read_curve_key_pair(context.transport_keys, "learner"));
  DICE_ASSIGN_OR_RETURN(curve.client_keys,
                        transport::read_curve_public_keys(context.transport_keys, "learner"));
  curve.public_key = std::move(pair.public_key);
  curve.secret_key = std::move(pair.secret_key);
  return curve;
}

Result<transport::CurveOptions> worker_curve(const ServiceContext& context, schema::Role role) {
  DICE_RETURN_IF_ERROR(check_keys_given(context));
  transport::CurveOptions curve;
  if (context.transport_keys.empty()) return curve;
  const std::string name = std::string(transport::role_name(role)) + "-" +
                           std::to_string(context.worker_index.value_or(0));
  DICE_ASSIGN_OR_RETURN(transport::CurveKeyPair pair,
                        transport::read_curve_key_pair(context.transport_keys, name));
  DICE_ASSIGN_OR_RETURN(curve.server_key,
                        transport::read_curve_public_key(context.transport_keys, "learner"));
  curve.public_key = std::move(pair.public_key);
  curve.secret_key = std::move(pair.secret_key);
  return curve;
}

}  // namespace dice::service
