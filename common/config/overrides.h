// Command-line overrides: "learner.optimizer.lr=2e-6", "cluster.nodes[0].host=gpu3" (or
// "cluster.nodes.0.host=gpu3"), "rollout.stop_token_ids=[151645]". The value is parsed as YAML
// (a scalar or a flow list/map; "a.b=" sets the empty string) and replaces the node at the key
// path before decoding, so a bad value is reported like a bad file value, naming the override.
// Missing sections on the way are created; an unknown key is then reported by decoding, with a
// suggestion. List elements must already exist.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "common/config/config_errors.h"
#include "common/status.h"

namespace dice::config {

// Applies `overrides` in order to `root` (a map, or null for an empty file) and tells `locator`
// which key paths they set. The first bad override ends it with an error naming it.
Status apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides,
                       ErrorLocator* locator);

}  // namespace dice::config
