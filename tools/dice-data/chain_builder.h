// Level-2 op combinations: which element-wise ops may follow one another. A chain is built so
// that every intermediate value stays small enough (|v| <= 2000 for inputs |x| <= 5, whatever
// values its parameters take) for float16 and for exp, and so that no op repeats (each op's
// constructor arguments keep their names).
#pragma once

#include "tools/dice-data/dtype.h"
#include "tools/dice-data/elementwise_family.h"
#include "tools/dice-data/prng.h"

namespace dice::data {

// A chain of 2-4 ops (an optional binary head, then unary ops), parameters not yet chosen
// (value_index 0, literals).
ElementwiseTask draw_chain_shape(Prng& rng);

}  // namespace dice::data
