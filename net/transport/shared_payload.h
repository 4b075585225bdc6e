// An encoded envelope shared by whoever still needs it: the dispatcher's record of a work item
// (kept for re-dispatch), each send of it, and ZeroMQ while it writes a large one without a copy.
#pragma once

#include <memory>
#include <string>

namespace dice::transport {

using SharedPayload = std::shared_ptr<const std::string>;

}  // namespace dice::transport
