// Blocked layouts between kernels: a value whose producer can write it in a blocked layout
// (oneDNN's nChw16c, or channels-last) and whose every reader accepts that layout is stored that
// way, so the reorders to and from row-major disappear between consecutive convolutions and
// pools. A producer that can write several layouts gets the first that every reader takes. Elementwise kernels may follow a dense layout such as channels-last: fed in it, they
// write in it (Kernel::follows_layout), so a Conv -> HardSigmoid * x -> Conv chain stays
// channels-last too. A follower with several outputs (Split) writes them all in the layout or
// all row-major: if one part must go back, so do the others. Graph outputs, viewed values and
// values read by any other kernel stay row-major; step observers still see row-major tensors
// (the executor converts them).
#pragma once
#include "plan/plan.h"

namespace fusor {

// Chooses the blocked values of `plan`, tells the kernels, and fills plan.blocked_by.
void assign_blocked_layouts(Plan& plan);

}  // namespace fusor
