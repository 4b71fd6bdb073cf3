// Index values read from a tensor at run time (gathers and scatters): negative values count from
// the end, and anything else out of range is a one-line error naming the node, never a wild read.
#pragma once
#include <cstdint>
#include <string>

#include "ir/graph.h"
#include "ir/shape_util.h"

namespace fusor::ref {

inline int64_t wrap_index(const Node& node, int64_t i, int64_t extent, size_t axis) {
  if (i < -extent || i >= extent)
    fail(node, "index " + std::to_string(i) + " is out of range for axis " + std::to_string(axis) + " of size " +
                   std::to_string(extent),
         ErrorKind::InvalidArgument);  // the values fed, not the model
  return i < 0 ? i + extent : i;
}

}  // namespace fusor::ref
