// Softmax over the last axis, float32: per row max, exp(x - max) with the sum in vector
// accumulators, then a scale by 1/sum. Also covers opset < 13 when the axis is the last one
// (the 2-D coercion then equals a per-row softmax).
#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/simd.h"

namespace fusor::cpu {
namespace {

using simd::D;
using simd::V;
namespace hn = simd::hn;

void softmax_row(const float* x, float* y, int64_t n) {
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const float ninf = -std::numeric_limits<float>::infinity();
  V vmax = hn::Set(d, ninf);
  int64_t i = 0;
  for (; i + L <= n; i += L) vmax = hn::Max(vmax, hn::LoadU(d, x + i));
  float mx = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  const V vm = hn::Set(d, mx);
  V acc = hn::Zero(d);
  simd::map1(x, y, n, [&](V v) { return simd::exp(hn::Sub(v, vm)); });
  for (i = 0; i + L <= n; i += L) acc = hn::Add(acc, hn::LoadU(d, y + i));
  float sum = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; i < n; ++i) sum += y[i];
  const V inv = hn::Set(d, 1.f / sum);
  simd::map1(y, y, n, [&](V v) { return hn::Mul(v, inv); });
}

class SoftmaxKernel final : public Kernel {
 public:
  explicit SoftmaxKernel(int64_t n) : n_(n) {}
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const float* x = in[0].data<float>();
    float* y = out[0].data<float>();
    const int64_t n = n_, rows = n ? in[0].numel() / n : 0;
    parallel_range(rows, rows * n * 4, 1, [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) softmax_row(x + r * n, y + r * n, n);
    });
  }
  std::string name() const override { return std::string("softmax_lastaxis_f32_") + kIsa; }

 private:
  int64_t n_;
};

}  // namespace

std::unique_ptr<Kernel> make_softmax_kernel(const KernelRequest& r) {
  const Node& node = r.node;
  if (node.op != Op::Softmax || !input_is(r, 0, DType::Float32) || used_outputs(r) != 1) return nullptr;
  const int64_t rank = static_cast<int64_t>(r.inputs[0].dims.size());
  if (rank == 0) return nullptr;
  int64_t axis = node.attr_int("axis", node.opset >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  if (axis != rank - 1) return nullptr;
  return std::make_unique<SoftmaxKernel>(r.inputs[0].dims.back());
}

}  // namespace fusor::cpu
