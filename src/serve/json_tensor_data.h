// A tensor's values as KServe v2 JSON "data": read from a parsed request straight into a new
// tensor, and printed straight into a response body.
#pragma once
#include <string>

#include "fusor/tensor.h"
#include "serve/tensor_codec.h"

namespace simdjson::dom {
class element;
}

namespace fusor::serve {

// `data`: a flat or nested (row-major) array of numbers, or of booleans for BOOL. Values are
// counted before anything is allocated; throws RequestError (400) on a wrong count, datatype,
// value type or nesting deeper than 32.
Tensor decode_tensor_data(const WireTensor& w, const simdjson::dom::element& data);

// Appends `t`'s values as one flat JSON array. Reals print in the shortest form that reads back
// to the same float or double, also when a float32 is read as a double and then rounded, as JSON
// clients do; whole numbers keep ".0" so they stay reals; NaN and infinities print as null
// (JSON has neither).
void append_tensor_data(std::string& out, const Tensor& t);

}  // namespace fusor::serve
