// The one translation unit that compiles Boost.JSON (header-only mode): every other file
// includes <boost/json.hpp> and links dice_checkpoint.
#include <boost/json/src.hpp>
