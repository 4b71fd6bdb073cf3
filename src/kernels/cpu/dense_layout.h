// Dense layouts: a tensor stored as a permutation of its dims with no blocking or padding, such
// as channels-last (NHWC bytes for NCHW dims), which oneDNN's convolutions pick on AVX-512. Such
// a layout is named "dense:" + the dims from outermost to innermost ("dense:0,2,3,1"), so that
// elementwise kernels can follow it (Kernel::follows_layout) and the reorders to and from
// row-major disappear between a convolution and the elementwise ops around it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernel.h"

namespace fusor::cpu {

std::string dense_layout_name(const std::vector<int>& order);
// The order a dense layout name gives, or nullopt for any other name.
std::optional<std::vector<int>> dense_layout_order(const std::string& name);

// `dims` (right-aligned to order.size() dims with leading 1s) in `order`.
Dims dims_in_order(const Dims& dims, const std::vector<int>& order);
// Whether a row-major tensor of `dims` has the same bytes as one stored in `order`: its dims
// other than 1 keep their relative order (a per-channel [N, C, 1, 1] under channels-last).
bool reads_alike(const Dims& dims, const std::vector<int>& order);

// Converts `stored` (dims `dims`, elements of `element_size` bytes in `order`) into row-major `plain`.
void dense_to_plain(const void* stored, void* plain, size_t element_size, const Dims& dims, const std::vector<int>& order);

// The base of the elementwise kernels that follow a dense layout: the order followed, and the
// conversion of their output back to row-major for step observers.
class FollowsDenseLayout : public Kernel {
 public:
  void output_to_plain(const Tensor& stored, Tensor& plain) const override {
    dense_to_plain(stored.raw(), plain.raw(), dtype_size(stored.dtype()), stored.dims(), order_);
  }

 protected:
  std::vector<int> order_;  // the dense layout followed; empty while row-major
};

}  // namespace fusor::cpu
