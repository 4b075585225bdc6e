// The validation walk behind decode_message(): reads every field of a message that its schema
// knows, so that every lazy Cap'n Proto check (pointer bounds, pointer kinds, list element sizes,
// text NUL terminators, nesting and traversal limits) runs once, inside decode's try block.
#pragma once

#include <capnp/dynamic.h>

namespace dice::wire {

// Reads every known field of `value` recursively (for unions, the active arm only).
// Throws kj::Exception on the first malformed field; callers catch it.
void walk_validate(capnp::DynamicStruct::Reader value);

}  // namespace dice::wire
