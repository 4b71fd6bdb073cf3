// The process-wide oneDNN CPU engine, a per-thread stream, and a cache of compiled primitives
// keyed by a shape string. Creating a primitive costs far more than running one, and every
// layer of a transformer repeats the same shapes, so kernels of equal shape share one.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <memory>
#include <string>

namespace fusor::cpu::onednn {

dnnl::engine& engine();
// The calling thread's stream on engine() (CPU execution is synchronous with OpenMP).
dnnl::stream& stream();

// Returns the cached object for `key`, creating it with `make` on first use. Thread-safe.
std::shared_ptr<void> cached(const std::string& key, const std::function<std::shared_ptr<void>()>& make);

template <class T>
std::shared_ptr<T> cached_as(const std::string& key, const std::function<std::shared_ptr<T>()>& make) {
  return std::static_pointer_cast<T>(cached(key, [&] { return std::shared_ptr<void>(make()); }));
}

// "2x3x4" for dims; used in cache keys.
std::string dims_key(const dnnl::memory::dims& d);
std::string md_key(const dnnl::memory::desc& md);

}  // namespace fusor::cpu::onednn
