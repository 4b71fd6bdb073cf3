#include "kernels/cpu/onednn_context.h"

#include <cstdio>

#include <omp.h>

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

ArgList arg_list(const std::unordered_map<int, dnnl::memory>& args) {
  ArgList list;
  for (const auto& [arg, mem] : args) list.push_back({arg, mem.get()});
  return list;
}

void execute(const dnnl::primitive& p, const ArgList& args) {
  dnnl::error::wrap_c_api(
      dnnl_primitive_execute(p.get(), stream().get(), static_cast<int>(args.size()), args.data()),
      "could not execute a primitive");
}

void execute_reorder(const dnnl::reorder& r, const dnnl::memory& from, const dnnl::memory& to) {
  const dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}};
  dnnl::error::wrap_c_api(dnnl_primitive_execute(r.get(), stream().get(), 2, args), "could not execute a reorder");
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

std::string post_ops_key(const dnnl::post_ops& post_ops) {
  std::string key = "po" + std::to_string(post_ops.len());
  for (int i = 0; i < post_ops.len(); ++i) {
    dnnl::algorithm alg;
    char text[128];
    if (post_ops.kind(i) == dnnl::primitive::kind::binary) {
      dnnl::memory::desc operand;
      post_ops.get_params_binary(i, alg, operand);
      std::snprintf(text, sizeof text, "|b%d:", static_cast<int>(alg));
      key.append(text).append(md_key(operand));
    } else if (post_ops.kind(i) == dnnl::primitive::kind::eltwise) {
      float scale, alpha, beta;
      post_ops.get_params_eltwise(i, scale, alg, alpha, beta);
      std::snprintf(text, sizeof text, "|e%d:%a:%a:%a", static_cast<int>(alg), scale, alpha, beta);
      key.append(text);
    } else {
      key.append("|k").append(std::to_string(static_cast<int>(post_ops.kind(i))));  // sum: fusor appends none
    }
  }
  return key;
}

OmpThreads::OmpThreads(int n) : before_(omp_get_max_threads()) { omp_set_num_threads(n); }
OmpThreads::~OmpThreads() { omp_set_num_threads(before_); }

}  // namespace fusor::cpu::onednn
