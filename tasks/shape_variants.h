// A task's other shapes (Task.shapeVariants in schemas/task.capnp): module-level integers of the
// reference, such as batch_size, set to other values before get_inputs(), so that a kernel fixed
// to the task's own shapes fails (reward/python/judge.py --shape-variant). In a task file:
//
//   "shape_variants": [{"batch_size": 3}, {"batch_size": 1, "dim": 129}]
//
// Optional; each variant is an object of one or more identifier -> integer members.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "schemas/task.capnp.h"

namespace dice {

// Sizes of one variant, in the file's order.
using ShapeVariant = std::vector<std::pair<std::string, std::int64_t>>;

// The "shape_variants" member of a task object (none when absent). InvalidArgument naming
// `where`, the variant's index and the member for anything but an array of non-empty objects of
// identifier -> integer.
Result<std::vector<ShapeVariant>> read_shape_variants(const boost::json::object& task,
                                                      const std::string& where);

// `variants` as a task file writes them: an array of objects in their order; null when none.
boost::json::value shape_variants_json(const std::vector<ShapeVariant>& variants);

// Writes `variants` into the Task message.
void set_shape_variants(const std::vector<ShapeVariant>& variants, schema::Task::Builder task);

// judge.py's --shape-variant values for a Task: "batch_size=3,dim=129", one per variant.
std::vector<std::string> shape_variant_args(schema::Task::Reader task);

}  // namespace dice
