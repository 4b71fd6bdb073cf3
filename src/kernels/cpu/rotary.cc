// Rotary (the fused kind fuse_rotary makes, float32): per row of D = 2h elements of x, with the
// row of cos and sin its position broadcasts to,
//   y[j]     = x[j] * cos[j]         - x[j + h] * sin[j]
//   y[j + h] = x[j + h] * cos[j + h] + x[j] * sin[j + h]          j < h
// one pass over x instead of the five kernels of the exported form (two slices, a negation, a
// concat and the multiply-add). The compiler may contract a product and its sum into one FMA
// (one rounding fewer than the exported nodes), as in the fused elementwise kernels. Rows are
// split over the thread pool.
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/simd.h"

namespace fusor::cpu {
namespace {

using simd::D;
using simd::V;
namespace hn = simd::hn;

class RotaryKernel final : public Kernel {
 public:
  // `x` is x's dims; `row_strides[i]`, for each axis of x before the last, is how many table
  // rows one step along it moves (0 where the tables broadcast).
  RotaryKernel(const Dims& x, std::vector<int64_t> row_strides)
      : outer_(x.begin(), x.end() - 1), row_strides_(std::move(row_strides)), dim_(x.back()) {}

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte>) override {
    const float* x = in[0].data<float>();
    const float* cos = in[1].data<float>();
    const float* sin = in[2].data<float>();
    float* y = out[0].data<float>();
    const int64_t rows = in[0].numel() / dim_;
    parallel_range(rows, in[0].numel() * 4, 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t t = table_row(r) * dim_;
        rotate(x + r * dim_, cos + t, sin + t, y + r * dim_);
      }
    });
  }

  std::string name() const override { return std::string("rotary_f32_") + kIsa; }

 private:
  int64_t table_row(int64_t row) const {
    int64_t t = 0;
    for (size_t a = outer_.size(); a-- > 0;) {
      t += row % outer_[a] * row_strides_[a];
      row /= outer_[a];
    }
    return t;
  }

  void rotate(const float* x, const float* c, const float* s, float* y) const {
    const D d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d)), h = dim_ / 2;
    auto pair = [&](int64_t j, auto load, auto store) {
      const V lo = load(x + j), hi = load(x + j + h);
      store(hn::Sub(hn::Mul(lo, load(c + j)), hn::Mul(hi, load(s + j))), y + j);
      store(hn::Add(hn::Mul(hi, load(c + j + h)), hn::Mul(lo, load(s + j + h))), y + j + h);
    };
    int64_t j = 0;
    for (; j + L <= h; j += L)
      pair(j, [&](const float* p) { return hn::LoadU(d, p); }, [&](V v, float* p) { hn::StoreU(v, d, p); });
    if (j < h) {
      const auto m = hn::FirstN(d, static_cast<size_t>(h - j));
      pair(j, [&](const float* p) { return hn::MaskedLoad(m, d, p); }, [&](V v, float* p) { hn::BlendedStore(v, m, d, p); });
    }
  }

  Dims outer_;
  std::vector<int64_t> row_strides_;
  int64_t dim_;
};

}  // namespace

// The pass has checked the form and that cos and sin broadcast to x's dims; an empty x is left
// to the reference.
KernelSelection make_rotary_kernel(const KernelRequest& r) {
  if (r.inputs.size() < 3 || !input_is(r, 0, DType::Float32) || !input_is(r, 1, DType::Float32) ||
      !input_is(r, 2, DType::Float32))
    return KernelSelection::declined("x, cos or sin is not float32");
  const Dims& x = r.inputs[0].dims;
  const Dims& table = r.inputs[1].dims;
  if (x.empty() || x.back() % 2 != 0 || table != r.inputs[2].dims || table.empty() || table.size() > x.size() ||
      table.back() != x.back())
    return KernelSelection::declined("cos and sin do not broadcast to x by rows of its last dim");
  if (numel_of(x) == 0) return nullptr;
  // Row strides of the tables along x's leading axes, right-aligned; 0 where a table axis is 1.
  std::vector<int64_t> row_strides(x.size() - 1, 0);
  int64_t stride = 1;
  for (size_t i = 2; i <= table.size(); ++i) {
    const int64_t n = table[table.size() - i];
    if (n != 1 && n != x[x.size() - i]) return KernelSelection::declined("cos and sin do not broadcast to x");
    row_strides[x.size() - i] = n == 1 ? 0 : stride;
    stride *= n;
  }
  return std::make_unique<RotaryKernel>(x, std::move(row_strides));
}

}  // namespace fusor::cpu
