// The validation walk behind decode_message(): reads every field of a message that its schema
// knows, so that every lazy Cap'n Proto check (pointer bounds, pointer kinds, list element sizes,
// text NUL terminators, nesting limit) runs once, inside decode's try block.
//
// Only pointer fields can be malformed (data fields inside a bounds-checked struct always read),
// so the walk visits pointers alone, by slot, following a plan built once per struct type from
// its schema; reading fields through the dynamic API instead re-interprets the schema on every
// field of every message, which cost more than the rest of a small message's decode.
//
// Traversal budget: the walk charges every object it follows (struct, list, text, data) its size
// in words, and lists of zero-sized elements a word per element, and fails once the budget is
// spent, as Cap'n Proto's own read limiter would. Counting here, not in the reader, lets one
// reader with no limit both validate the message and serve every later read: a reader's spent
// budget cannot be reset.
#pragma once

#include <capnp/any.h>
#include <capnp/schema.h>

#include <cstdint>

namespace dice::wire {

struct StructPlan;

// The plan for `schema`, built on first use and kept for the process.
const StructPlan* plan_for(capnp::StructSchema schema);

// Whether a message of this plan can hold an AnyPointer field anywhere (dice's schemas have none).
// Such a field is checked by Cap'n Proto's targetSize(), which only the reader's own limiter can
// bound; decode_message() then validates with a bounded reader first.
bool reaches_any_pointer(const StructPlan* plan);

// Reads every known pointer field of `value`, a struct planned by `plan`, recursively (for unions,
// the active arm only; for groups, their fields). `budget_words` is spent as described above; the
// root struct is charged too. Throws kj::Exception on the first malformed field or when the budget
// runs out ("traversal limit"); callers catch it.
void walk_validate(capnp::AnyStruct::Reader value, const StructPlan* plan,
                   std::uint64_t budget_words);

}  // namespace dice::wire
