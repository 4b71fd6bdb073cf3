#include "kernels/cpu/dense_layout.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>

namespace fusor::cpu {

namespace {
constexpr const char* kPrefix = "dense:";

Dims aligned(const Dims& dims, size_t rank) {
  Dims a(rank, 1);
  if (dims.size() <= rank) std::copy(dims.begin(), dims.end(), a.begin() + static_cast<long>(rank - dims.size()));
  return a;
}
}  // namespace

std::string dense_layout_name(const std::vector<int>& order) {
  std::string s = kPrefix;
  for (size_t i = 0; i < order.size(); ++i) s += (i ? "," : "") + std::to_string(order[i]);
  return s;
}

std::optional<std::vector<int>> dense_layout_order(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return std::nullopt;
  std::vector<int> order;
  std::istringstream in(name.substr(std::string(kPrefix).size()));
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty() || item.size() > 2 || !std::all_of(item.begin(), item.end(), ::isdigit)) return std::nullopt;
    order.push_back(std::stoi(item));
  }
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int>(i)) return std::nullopt;  // not a permutation
  if (order.empty()) return std::nullopt;
  return order;
}

Dims dims_in_order(const Dims& dims, const std::vector<int>& order) {
  const Dims a = aligned(dims, order.size());
  Dims out;
  for (int d : order) out.push_back(a[static_cast<size_t>(d)]);
  return out;
}

bool reads_alike(const Dims& dims, const std::vector<int>& order) {
  if (dims.size() > order.size()) return false;
  const Dims a = aligned(dims, order.size());
  int last = -1;
  for (int d : order) {
    if (a[static_cast<size_t>(d)] == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

void dense_to_plain(const void* stored_bytes, void* plain_bytes, size_t element_size, const Dims& dims,
                    const std::vector<int>& order) {
  const auto* stored = static_cast<const std::byte*>(stored_bytes);
  auto* plain = static_cast<std::byte*>(plain_bytes);
  const size_t r = dims.size();
  std::vector<int64_t> stride(r, 0);  // stored stride of each logical dim
  int64_t s = 1;
  for (size_t i = r; i-- > 0;) {
    stride[static_cast<size_t>(order[i])] = s;
    s *= dims[static_cast<size_t>(order[i])];
  }
  const int64_t n = numel_of(dims);
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t k = 0; k < r; ++k) off += idx[k] * stride[k];
    std::memcpy(plain + i * static_cast<int64_t>(element_size), stored + off * static_cast<int64_t>(element_size), element_size);
    for (size_t k = r; k-- > 0;) {  // odometer over the row-major index
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
}

}  // namespace fusor::cpu
