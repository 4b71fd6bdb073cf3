// simdjson's DOM for the request decoders, with the one reader they share.
#pragma once
#include <simdjson.h>

namespace fusor::serve {

// An array element's items, for a range-for: returned by value, because the loop would keep
// only a reference into get_array()'s temporary result.
inline simdjson::dom::array items(const simdjson::dom::element& array) { return array.get_array().value_unsafe(); }

}  // namespace fusor::serve
