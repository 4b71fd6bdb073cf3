// Reference MatMul (numpy semantics) and Gemm. Dot products accumulate in double for floats
// (int64 for integers), one output row at a time in i-k-j order so B is read row-wise.
#include <type_traits>
#include <vector>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

template <class T>
using acc_t = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Offsets (in matrices) into a batch-broadcast operand for each output batch index.
std::vector<int64_t> batch_offsets(const Dims& in_batch, const Dims& out_batch) {
  int64_t n = numel_of(out_batch);
  auto bs = broadcast_strides(in_batch, out_batch);
  auto os = strides_of(out_batch);
  std::vector<int64_t> offs(static_cast<size_t>(n));
  for (int64_t b = 0; b < n; ++b) {
    int64_t off = 0, rem = b;
    for (size_t d = 0; d < out_batch.size(); ++d) {
      off += (rem / os[d]) * bs[d];
      rem %= os[d];
    }
    offs[static_cast<size_t>(b)] = off;
  }
  return offs;
}

}  // namespace

void MatMul(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& a = inputs[0];
  const Tensor& b = inputs[1];
  Dims ad = a.dims(), bd = b.dims();
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  Dims ab(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2);
  Dims ob = broadcast_dims(ab, bb, node);
  auto a_off = batch_offsets(ab, ob);
  auto b_off = batch_offsets(bb, ob);
  int64_t rows = numel_of(ob) * m;
  visit_dtype(a.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (!std::is_same_v<T, float> && !std::is_same_v<T, double> &&
                  !std::is_same_v<T, int32_t> && !std::is_same_v<T, int64_t>) {
      fail(node, std::string("unsupported dtype ") + dtype_name(a.dtype()));
    } else {
      using Acc = acc_t<T>;
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* py = outputs[0].data<T>();
#pragma omp parallel
      {
        std::vector<Acc> acc(static_cast<size_t>(n));
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
          int64_t bi = r / m, i = r % m;
          const T* arow = pa + a_off[static_cast<size_t>(bi)] * m * k + i * k;
          const T* bmat = pb + b_off[static_cast<size_t>(bi)] * k * n;
          std::fill(acc.begin(), acc.end(), Acc(0));
          Acc* ac = acc.data();
          for (int64_t kk = 0; kk < k; ++kk) {
            Acc av = static_cast<Acc>(arow[kk]);
            const T* brow = bmat + kk * n;
            for (int64_t j = 0; j < n; ++j) ac[j] += av * static_cast<Acc>(brow[j]);
          }
          T* yrow = py + r * n;
          for (int64_t j = 0; j < n; ++j) yrow[j] = static_cast<T>(ac[j]);
        }
      }
    }
  });
}

void Gemm(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& a = inputs[0];
  const Tensor& b = inputs[1];
  const Tensor* c = inputs.size() > 2 && inputs[2].defined() ? &inputs[2] : nullptr;
  bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  double alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  int64_t n = tb ? b.dim(0) : b.dim(1);
  Dims out = {m, n};
  std::vector<int64_t> cs = c ? broadcast_strides(c->dims(), out) : std::vector<int64_t>{0, 0};
  visit_float(a.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    // beta 0 leaves C out (0 * NaN would be NaN), as ONNX Runtime and fusor's fast Gemm do.
    const T* pc = c && beta != 0.0 ? c->data<T>() : nullptr;
    T* py = outputs[0].data<T>();
#pragma omp parallel
    {
      std::vector<double> arow(static_cast<size_t>(k)), acc(static_cast<size_t>(n));
#pragma omp for schedule(static)
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t kk = 0; kk < k; ++kk)
          arow[static_cast<size_t>(kk)] = static_cast<double>(ta ? pa[kk * m + i] : pa[i * k + kk]);
        if (tb) {
          for (int64_t j = 0; j < n; ++j) {
            const T* brow = pb + j * k;
            double s = 0;
            for (int64_t kk = 0; kk < k; ++kk) s += arow[static_cast<size_t>(kk)] * static_cast<double>(brow[kk]);
            acc[static_cast<size_t>(j)] = s;
          }
        } else {
          std::fill(acc.begin(), acc.end(), 0.0);
          double* ac = acc.data();
          for (int64_t kk = 0; kk < k; ++kk) {
            double av = arow[static_cast<size_t>(kk)];
            const T* brow = pb + kk * n;
            for (int64_t j = 0; j < n; ++j) ac[j] += av * static_cast<double>(brow[j]);
          }
        }
        T* yrow = py + i * n;
        for (int64_t j = 0; j < n; ++j) {
          double v = alpha * acc[static_cast<size_t>(j)];
          if (pc) v += beta * static_cast<double>(pc[i * cs[0] + j * cs[1]]);
          yrow[j] = static_cast<T>(v);
        }
      }
    }
  });
}

}  // namespace fusor::ref
