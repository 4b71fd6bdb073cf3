// A shape that depends on input values the planner does not know. NonZero, Unique, Compress and
// NonMaxSuppression size their outputs by what their inputs hold; Reshape, Slice, TopK and the
// like by a shape-setting input. When such an input is not a plan-time constant the shape
// function throws DataDependentShape. It is a fusor::Error, so code that catches Error is
// unchanged; the engine catches it in particular and plans that model per run, with every input's
// value frozen (engine/session.cc). Any shape function may throw it (Loop trip counts too).
#pragma once
#include <cstddef>
#include <string>

#include "fusor/error.h"
#include "ir/graph.h"

namespace fusor {

class DataDependentShape : public Error {
 public:
  explicit DataDependentShape(const std::string& message) : Error(message) {}
};

// Input i's value when it is a plan-time constant; otherwise throws DataDependentShape
// "<node>: <what> must be known when the plan is built (input i is computed at run time)".
const Tensor& known_value(const InferContext& ctx, size_t i, const char* what);

}  // namespace fusor
