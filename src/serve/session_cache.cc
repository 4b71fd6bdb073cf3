#include "serve/session_cache.h"

namespace fusor::serve {

std::map<std::string, Tensor> SessionCache::run(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Dims> dims;
  for (const auto& [name, t] : inputs) dims[name] = t.dims();
  auto it = sessions_.find(dims);
  if (it == sessions_.end()) it = sessions_.emplace(dims, engine_.session(dims, options_)).first;
  return it->second.run(inputs);
}

}  // namespace fusor::serve
