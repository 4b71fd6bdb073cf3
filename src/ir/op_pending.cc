#include "ir/op_pending.h"

#include <array>

namespace fusor {
namespace {
// Filled before main runs and only read afterwards, so it needs no lock.
std::array<bool, static_cast<size_t>(Op::Count)>& pending() {
  static std::array<bool, static_cast<size_t>(Op::Count)> flags{};
  return flags;
}
}  // namespace

void mark_op_pending(Op op) { pending()[static_cast<size_t>(op)] = true; }
bool op_is_pending(Op op) { return pending()[static_cast<size_t>(op)]; }

}  // namespace fusor
