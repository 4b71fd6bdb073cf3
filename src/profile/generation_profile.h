// The text table of a DecoderBatch's kernel times (fusor/decoder.h: GenerationProfile), as
// `fusor generate --profile` prints it: per kind of step, its runs and time, then its kernels,
// most time first.
#pragma once
#include <cstddef>
#include <string>

#include "fusor/decoder.h"

namespace fusor {

// At most `top` kernel rows per kind; the rest are summed in one line.
std::string render_generation_profile(const GenerationProfile& profile, size_t top = 15);

}  // namespace fusor
