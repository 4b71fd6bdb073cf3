// The process-wide oneDNN CPU engine, a per-thread stream, and a cache of compiled primitives
// keyed by a shape string. Creating a primitive costs far more than running one, and every
// layer of a transformer repeats the same shapes, so kernels of equal shape share one.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace fusor::cpu::onednn {

dnnl::engine& engine();
// The calling thread's stream on engine() (CPU execution is synchronous with OpenMP).
dnnl::stream& stream();

// Arguments prepared once for the C API. The C++ execute() builds an argument map on every
// call; executing through a prepared list keeps fusor's side of a run allocation-free (oneDNN
// itself still makes a few small allocations per execute, inside the library).
using ArgList = std::vector<dnnl_exec_arg_t>;
ArgList arg_list(const std::unordered_map<int, dnnl::memory>& args);
// Runs `p` on this thread's stream and waits. Throws dnnl::error on failure.
void execute(const dnnl::primitive& p, const ArgList& args);
// A reorder between two memories, same rules.
void execute_reorder(const dnnl::reorder& r, const dnnl::memory& from, const dnnl::memory& to);

// Returns the cached object for `key`, creating it with `make` on first use. Thread-safe.
std::shared_ptr<void> cached(const std::string& key, const std::function<std::shared_ptr<void>()>& make);

template <class T>
std::shared_ptr<T> cached_as(const std::string& key, const std::function<std::shared_ptr<T>()>& make) {
  return std::static_pointer_cast<T>(cached(key, [&] { return std::shared_ptr<void>(make()); }));
}

// Sets this thread's OpenMP (and so oneDNN) thread count for a scope. oneDNN fixes a primitive's
// threads when it is created, so a primitive meant for one thread is created inside one.
class OmpThreads {
 public:
  explicit OmpThreads(int n);
  ~OmpThreads();
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int before_;
};

// "2x3x4" for dims; used in cache keys.
std::string dims_key(const dnnl::memory::dims& d);
std::string md_key(const dnnl::memory::desc& md);
// Every post-op whole: its kind, algorithm and parameters (scale, alpha, beta exactly), a binary
// one's operand. Keys that named the activation or rounded alpha to six decimals gave a GEMM the
// cached primitive of another that differed only there (tanh ran as relu).
std::string post_ops_key(const dnnl::post_ops& post_ops);

}  // namespace fusor::cpu::onednn
