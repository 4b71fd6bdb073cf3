// A Backend is one device's source of kernels. The plan asks it for the kernel of every step and
// never names a device: selection, weight packing and scratch needs all sit behind this interface,
// so another device (a GPU backend) or another kernel (attention over a KV cache, a new fused
// kind) plugs in here without touching the passes or the planner. The CPU backend
// (kernels/cpu/backend.h) is the one implementation today.
//
// Invariants every backend keeps:
// - select() and reference_kernel() are const and thread-safe: plans for several batch buckets
//   may be built at once. A backend lives as long as the program (plans keep a pointer to it).
// - A kernel is prepared when it is returned: weights packed into the layout it prefers (the CPU
//   backend shares equal packed weights between kernels and plans: kernels/cpu/packed_weights.h),
//   primitives created, and Kernel::scratch_bytes() giving the working memory run() needs.
// - A kernel copies what it keeps from the request's spans; it may keep a reference to
//   request.node, whose graph the plan holds for as long as the kernel lives.
// - Declining is never an error. For a standard op the plan then runs reference_kernel(); a fused
//   node it puts back as its body's nodes and records the reason (Plan::fusion.not_fused).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "kernels/kernel.h"

namespace fusor {

// A backend's answer to one KernelRequest: a kernel, or the reason it has none.
struct KernelSelection {
  std::unique_ptr<Kernel> kernel;  // nullptr when declined
  std::string reason;              // why declined; "" when there is nothing more to say than "no kernel"

  // Converts from what kernel factories return: a kernel, or nullptr (declined, no reason).
  KernelSelection() = default;
  KernelSelection(std::nullptr_t) {}
  template <class K>
  KernelSelection(std::unique_ptr<K> k) : kernel(std::move(k)) {}
  static KernelSelection declined(std::string why) {
    KernelSelection s;
    s.reason = std::move(why);
    return s;
  }
  explicit operator bool() const { return kernel != nullptr; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The device and its kernel family, for reports: "cpu".
  virtual std::string_view name() const = 0;
  // An optimized kernel for the request when one applies (dtype, shapes and attributes), built
  // and prepared; otherwise declined, with a reason where the backend has one.
  virtual KernelSelection select(const KernelRequest& request) const = 0;
  // The plain twin of the node on this device: what runs where select() declines, and what its
  // kernels are tested against.
  virtual std::unique_ptr<Kernel> reference_kernel(const Node& node) const = 0;
};

}  // namespace fusor
