// The model `fusor serve` runs with no --model, so the server works out of the box: a tiny
// text-shaped model (input_ids and attention_mask, int64 [batch, sequence]) that looks each id up
// in a 32 x 4 table and zeroes masked positions, giving "embeddings" float [batch, sequence, 4].
// Ids must be in [0, 32).
#pragma once
#include "fusor/engine.h"

namespace fusor::serve {

inline constexpr const char* kDemoModelName = "demo";
Engine load_demo_model();

}  // namespace fusor::serve
