// Boost.JSON is used header-only: its implementation is compiled once, here, for the whole
// dice_tokenizer library (other files include <boost/json.hpp> only). Boost >= 1.75 has it.
#include <boost/json/src.hpp>
