// The one translation unit that compiles Boost.JSON (header-only mode) for all of dice: every
// other file includes <boost/json.hpp> and links dice_json. Compiling src.hpp in two libraries
// would define the same symbols twice in any binary that links both.
#include <boost/json/src.hpp>
