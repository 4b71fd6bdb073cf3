// ReduceMean / ReduceSum (float32) over a set of trailing axes, which makes each output element
// the reduction of one contiguous row (keepdims does not change the layout). GlobalAveragePool
// is the same kernel over the spatial dims, or over the middle dim when its input arrives
// channels-last from a convolution.
#include <algorithm>

#include "kernels/cpu/common.h"
#include "kernels/cpu/dense_layout.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/simd.h"

namespace fusor::cpu {
namespace {

using simd::D;
using simd::V;
namespace hn = simd::hn;

float row_sum(const float* x, int64_t n) {
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  V a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    a0 = hn::Add(a0, hn::LoadU(d, x + i));
    a1 = hn::Add(a1, hn::LoadU(d, x + i + L));
    a2 = hn::Add(a2, hn::LoadU(d, x + i + 2 * L));
    a3 = hn::Add(a3, hn::LoadU(d, x + i + 3 * L));
  }
  for (; i + L <= n; i += L) a0 = hn::Add(a0, hn::LoadU(d, x + i));
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) s += x[i];
  return s;
}

// GlobalAveragePool of channels-last x ([N, spatial, C] in memory) into y ([N, C]).
void channels_last_mean(const float* x, float* y, int64_t images, int64_t spatial, int64_t channels) {
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const int64_t width = 4 * L, blocks = (channels + width - 1) / width;  // channels per work unit
  const V scale = hn::Set(d, 1.f / static_cast<float>(spatial));
  parallel_range(images * blocks, images * spatial * channels, 1, [&](int64_t s, int64_t e) {
    for (int64_t u = s; u < e; ++u) {
      const int64_t c0 = (u % blocks) * width, c1 = std::min(channels, c0 + width);
      const float* xi = x + u / blocks * spatial * channels;
      float* yi = y + u / blocks * channels;
      int64_t c = c0;
      for (; c + L <= c1; c += L) {
        V acc = hn::Zero(d);
        for (int64_t p = 0; p < spatial; ++p) acc = hn::Add(acc, hn::LoadU(d, xi + p * channels + c));
        hn::StoreU(hn::Mul(acc, scale), d, yi + c);
      }
      for (; c < c1; ++c) {
        float acc = 0.f;
        for (int64_t p = 0; p < spatial; ++p) acc += xi[p * channels + c];
        yi[c] = acc * (1.f / static_cast<float>(spatial));
      }
    }
  });
}

class ReduceRowsKernel final : public Kernel {
 public:
  ReduceRowsKernel(int64_t n, bool mean, Dims pooled = {}) : n_(n), mean_(mean), pooled_(std::move(pooled)) {}
  // GlobalAveragePool also reads channels-last (dense_layout.h): its output reads alike.
  bool accepts_input_layout(size_t index, const std::string& layout) const override {
    if (index != 0 || pooled_.empty()) return false;
    std::vector<int> channels_last = {0};
    for (int i = 2; i < static_cast<int>(pooled_.size()); ++i) channels_last.push_back(i);
    channels_last.push_back(1);
    return dense_layout_order(layout) == channels_last;
  }
  void use_layouts(std::span<const std::string> inputs, bool) override {
    channels_last_ = !inputs.empty() && !inputs[0].empty();
  }
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const float* x = in[0].data<float>();
    float* y = out[0].data<float>();
    if (channels_last_) {
      channels_last_mean(x, y, pooled_[0], n_, pooled_[1]);
      return;
    }
    const int64_t n = n_, rows = out[0].numel();
    const float scale = mean_ && n ? 1.f / static_cast<float>(n) : 1.f;
    parallel_range(rows, rows * n, 1, [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) {
        float v = row_sum(x + r * n, n);
        y[r] = mean_ ? v * scale : v;
      }
    });
  }
  std::string name() const override {
    return std::string(mean_ ? "reduce_mean" : "reduce_sum") + (channels_last_ ? "_channels_last" : "_lastaxes") +
           "_f32_" + kIsa;
  }

 private:
  int64_t n_;
  bool mean_;
  Dims pooled_;  // GlobalAveragePool: the input's dims
  bool channels_last_ = false;
};

}  // namespace

std::unique_ptr<Kernel> make_reduce_kernel(const KernelRequest& r) {
  const Node& node = r.node;
  if (node.op == Op::GlobalAveragePool) {  // a mean over the spatial dims [2, rank)
    if (!input_is(r, 0, DType::Float32) || r.inputs[0].dims.size() < 3 || used_outputs(r) != 1) return nullptr;
    int64_t n = 1;
    for (size_t i = 2; i < r.inputs[0].dims.size(); ++i) n *= r.inputs[0].dims[i];
    if (n == 0) return nullptr;
    return std::make_unique<ReduceRowsKernel>(n, true, r.inputs[0].dims);
  }
  if ((node.op != Op::ReduceMean && node.op != Op::ReduceSum) || !input_is(r, 0, DType::Float32) ||
      used_outputs(r) != 1 || r.outputs[0].dtype != DType::Float32)
    return nullptr;
  const Dims& dims = r.inputs[0].dims;
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> axes;
  if (has_input(r, 1)) {
    const Tensor* t = constant_input(r, 1);
    if (!t) return nullptr;
    axes = t->to_int64_vector();
  } else {
    axes = node.attr_ints("axes");
  }
  if (axes.empty()) {
    if (node.attr_int("noop_with_empty_axes", 0)) return nullptr;
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (auto& a : axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return nullptr;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  // Must be exactly the trailing axes [rank - k, rank).
  const int64_t k = static_cast<int64_t>(axes.size());
  for (int64_t i = 0; i < k; ++i)
    if (axes[static_cast<size_t>(i)] != rank - k + i) return nullptr;
  int64_t n = 1;
  for (int64_t i = rank - k; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
  if (n == 0) return nullptr;
  return std::make_unique<ReduceRowsKernel>(n, node.op == Op::ReduceMean);
}

}  // namespace fusor::cpu
