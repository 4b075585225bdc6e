// The validation walk behind decode_message(): reads every field of a message that its schema
// knows, so that every lazy Cap'n Proto check (pointer bounds, pointer kinds, list element sizes,
// text NUL terminators, nesting and traversal limits) runs once, inside decode's try block.
//
// Only pointer fields can be malformed (data fields inside a bounds-checked struct always read),
// so the walk visits pointers alone, by slot, following a plan built once per struct type from
// its schema; reading fields through the dynamic API instead re-interprets the schema on every
// field of every message, which cost more than the rest of a small message's decode.
#pragma once

#include <capnp/any.h>
#include <capnp/schema.h>

namespace dice::wire {

// Reads every known pointer field of `value`, a struct of type `schema`, recursively (for
// unions, the active arm only; for groups, their fields). Throws kj::Exception on the first
// malformed field; callers catch it.
void walk_validate(capnp::AnyStruct::Reader value, capnp::StructSchema schema);

}  // namespace dice::wire
