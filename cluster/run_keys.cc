#include "cluster/run_keys.h"

#include "net/transport/curve_keys.h"

namespace dice::cluster {

Result<std::string> add_transport_keys(const ClusterOptions& cluster, const std::string& state_dir,
                                       const std::string& run_id,
                                       std::vector<ServiceSpec>* services) {
  if (!cluster.transport.curve_on(cluster.backend)) return std::string();
  const std::string dir = state_dir + "/keys/" + run_id;
  std::vector<std::string> names;
  for (const ServiceSpec& spec : *services) {
    names.push_back(spec.role == NodeRole::kLearner ? std::string("learner") : spec.name);
  }
  DICE_RETURN_IF_ERROR(transport::ensure_curve_keys(dir, names));
  for (ServiceSpec& spec : *services) {
    spec.args.push_back("--transport-keys");
    spec.args.push_back(dir);
  }
  return dir;
}

}  // namespace dice::cluster
