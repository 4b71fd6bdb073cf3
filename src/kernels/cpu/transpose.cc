// Transpose for 4- and 8-byte element types with any permutation.
//
// At build time adjacent input dims that stay adjacent in the permutation are merged. If the
// innermost input dim stays innermost, each output row is one memcpy. Otherwise every output
// slice is a 2-D transpose between the input's innermost dim and the output's innermost dim,
// done in cache tiles; the remaining dims are an outer loop split across OpenMP threads.
#include <array>
#include <cstring>
#include <numeric>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"

namespace fusor::cpu {
namespace {

constexpr size_t kMaxRank = 16;  // merged axes a kernel walks (more: the reference runs it)

struct TransposePlan {
  std::vector<int64_t> out_dims;   // merged output dims
  std::vector<int64_t> in_stride;  // input element stride for each merged output dim
  bool row_copy = false;           // innermost dim unchanged
  int a = -1;                      // output axis that is the input's innermost dim (tile case)
};

TransposePlan plan_transpose(const Dims& in, const std::vector<int64_t>& perm) {
  // Drop size-1 dims, then merge runs i, i+1 that appear consecutively in perm.
  std::vector<int64_t> keep;  // old input axis -> kept?
  std::vector<int64_t> new_index(in.size(), -1);
  Dims d;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1) { new_index[i] = static_cast<int64_t>(d.size()); d.push_back(in[i]); }
  std::vector<int64_t> p;
  for (int64_t ax : perm)
    if (new_index[static_cast<size_t>(ax)] >= 0) p.push_back(new_index[static_cast<size_t>(ax)]);
  // Group output axes: consecutive output positions with consecutive input axes merge.
  std::vector<std::vector<int64_t>> groups;  // in output order, each a run of input axes
  for (int64_t ax : p) {
    if (!groups.empty() && groups.back().back() + 1 == ax) groups.back().push_back(ax);
    else groups.push_back({ax});
  }
  // Input-order of groups gives the merged input dims and strides.
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return groups[x][0] < groups[y][0]; });
  std::vector<int64_t> gsize(groups.size()), gstride(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    gsize[g] = 1;
    for (int64_t ax : groups[g]) gsize[g] *= d[static_cast<size_t>(ax)];
  }
  int64_t s = 1;
  for (size_t k = order.size(); k-- > 0;) {
    gstride[order[k]] = s;
    s *= gsize[order[k]];
  }
  TransposePlan t;
  t.out_dims = gsize;
  t.in_stride = gstride;
  if (groups.empty()) { t.out_dims = {1}; t.in_stride = {1}; }
  const size_t r = t.out_dims.size();
  t.row_copy = t.in_stride[r - 1] == 1;
  if (!t.row_copy)
    for (size_t i = 0; i < r; ++i)
      if (t.in_stride[i] == 1) t.a = static_cast<int>(i);
  return t;
}

template <class T>
class TransposeKernel final : public Kernel {
 public:
  explicit TransposeKernel(TransposePlan p) : p_(std::move(p)) {}

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const T* x = static_cast<const T*>(in[0].raw());
    T* y = static_cast<T*>(out[0].raw());
    const size_t r = p_.out_dims.size();
    const int64_t total = out[0].numel();
    if (total == 0) return;  // rows and slices would divide by a zero dim
    if (p_.row_copy) {
      const int64_t len = p_.out_dims[r - 1], rows = total / len;
      outer_loop(r - 1, -1, rows, total, [&](int64_t row, int64_t off) {
        std::memcpy(y + row * len, x + off, static_cast<size_t>(len) * sizeof(T));
      });
      return;
    }
    // Slices over all output axes except `a` and the innermost one.
    const int a = p_.a;
    const int64_t na = p_.out_dims[static_cast<size_t>(a)], nb = p_.out_dims[r - 1];
    const int64_t ld_in = p_.in_stride[r - 1];  // input stride along the output's innermost axis
    int64_t ld_out = 1;                          // output stride along axis a
    for (size_t i = static_cast<size_t>(a) + 1; i < r; ++i) ld_out *= p_.out_dims[i];
    const int64_t slices = total / (na * nb);
    outer_loop(r - 1, a, slices, total, [&](int64_t slice, int64_t off) {
      // Output offset of this slice: recompute from the slice index over the non-a axes.
      int64_t rem = slice, yo = 0, stride = nb;
      for (size_t k = r - 1; k-- > 0;) {
        if (static_cast<int>(k) == a) { stride *= na; continue; }
        yo += (rem % p_.out_dims[k]) * stride;
        rem /= p_.out_dims[k];
        stride *= p_.out_dims[k];
      }
      constexpr int64_t kTile = 16;
      for (int64_t i0 = 0; i0 < na; i0 += kTile)
        for (int64_t j0 = 0; j0 < nb; j0 += kTile) {
          const int64_t i1 = std::min(na, i0 + kTile), j1 = std::min(nb, j0 + kTile);
          for (int64_t i = i0; i < i1; ++i)
            for (int64_t j = j0; j < j1; ++j) y[yo + i * ld_out + j] = x[off + i + j * ld_in];
        }
    });
  }
  std::string name() const override {
    return std::string(p_.row_copy ? "transpose_rows_x" : "transpose_tiled_x") + std::to_string(sizeof(T) * 8);
  }

 private:
  // Calls f(i, input_offset) for i in [0, count) over output axes [0, nd) except `skip`.
  template <class F>
  void outer_loop(size_t nd, int skip, int64_t count, int64_t work, F&& f) const {
    parallel_range(count, work, 1, [&](int64_t s, int64_t e) {
      std::array<int64_t, kMaxRank> idx{};  // no allocation per run
      int64_t rem = s, off = 0;
      for (size_t k = nd; k-- > 0;) {
        if (static_cast<int>(k) == skip) continue;
        idx[k] = rem % p_.out_dims[k];
        rem /= p_.out_dims[k];
        off += idx[k] * p_.in_stride[k];
      }
      for (int64_t i = s; i < e; ++i) {
        f(i, off);
        for (size_t k = nd; k-- > 0;) {
          if (static_cast<int>(k) == skip) continue;
          off += p_.in_stride[k];
          if (++idx[k] < p_.out_dims[k]) break;
          off -= p_.in_stride[k] * p_.out_dims[k];
          idx[k] = 0;
        }
      }
    });
  }

  TransposePlan p_;
};

}  // namespace

std::unique_ptr<Kernel> make_transpose_kernel(const KernelRequest& r) {
  if (r.node.op != Op::Transpose || r.inputs.empty() || used_outputs(r) != 1) return nullptr;
  const Dims& in = r.inputs[0].dims;
  const size_t rank = in.size();
  if (rank > kMaxRank) return nullptr;
  std::vector<int64_t> perm = r.node.attr_ints("perm");
  if (perm.empty())
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  if (perm.size() != rank || rank == 0) return nullptr;
  std::vector<bool> seen(rank, false);
  for (auto& a : perm) {
    if (a < 0) a += static_cast<int64_t>(rank);
    if (a < 0 || a >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(a)]) return nullptr;
    seen[static_cast<size_t>(a)] = true;
  }
  if (numel_of(in) == 0) return nullptr;
  TransposePlan p = plan_transpose(in, perm);
  switch (dtype_size(r.inputs[0].dtype)) {
    case 4: return std::make_unique<TransposeKernel<uint32_t>>(std::move(p));
    case 8: return std::make_unique<TransposeKernel<uint64_t>>(std::move(p));
    default: return nullptr;
  }
}

}  // namespace fusor::cpu
