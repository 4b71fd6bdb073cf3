#include "kernels/ref/reference.h"

namespace fusor {
namespace {
class ReferenceKernel final : public Kernel {
 public:
  explicit ReferenceKernel(const Node& node) : node_(node), fn_(ref::kernel_for(node.op)) {}
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte>) override {
    fn_(node_, in, out);
  }
  std::string name() const override { return std::string("ref.") + op_info(node_.op).name; }
  bool uses_openmp() const override { return true; }  // several (MatMul, Conv, norms) do

 private:
  const Node& node_;
  RefKernelFn fn_;
};
}  // namespace

std::unique_ptr<Kernel> make_reference_kernel(const Node& node) {
  return std::make_unique<ReferenceKernel>(node);
}

}  // namespace fusor
