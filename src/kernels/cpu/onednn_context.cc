#include "kernels/cpu/onednn_context.h"

#include <mutex>
#include <unordered_map>

namespace fusor::cpu::onednn {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

std::shared_ptr<void> cached(const std::string& key, const std::function<std::shared_ptr<void>()>& make) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<void>> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  std::shared_ptr<void> v = make();  // may throw; nothing is cached then
  std::lock_guard<std::mutex> lock(mu);
  return cache.emplace(key, std::move(v)).first->second;
}

std::string dims_key(const dnnl::memory::dims& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) s.push_back('x');
    s.append(std::to_string(d[i]));
  }
  return s;
}

std::string md_key(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& c = md.data;
  std::string s = "t";
  s.append(std::to_string(static_cast<int>(c.data_type)));
  s.push_back(':');
  s.append(dims_key(md.dims()));
  if (c.format_kind == dnnl_format_kind_any) {
    s.append(":any");
  } else if (c.format_kind == dnnl_blocked) {
    s.append(":s");
    for (int i = 0; i < c.ndims; ++i) {
      s.push_back(',');
      s.append(std::to_string(c.format_desc.blocking.strides[i]));
    }
    if (c.format_desc.blocking.inner_nblks) s.append(":blocked");  // not used for user descs
  }
  return s;
}

}  // namespace fusor::cpu::onednn
