#include "serve/session_cache.h"

#include <algorithm>
#include <optional>

#include "engine/internals.h"

namespace fusor::serve {

OptionsMatrix OptionsMatrix::of(const ServeConfig& config, const SessionOptions& base) {
  OptionsMatrix m;
  m.fallback = base;
  if (!base.fusion || base.reference) return m;
  for (const MatrixEntry& e : config.matrix) {
    SessionOptions o = base;
    o.fusion = e.fusion;
    o.fusion->precision_check = base.fusion->precision_check;
    for (const std::string& name : base.fusion->disabled)
      if (std::find(o.fusion->disabled.begin(), o.fusion->disabled.end(), name) == o.fusion->disabled.end())
        o.fusion->disabled.push_back(name);
    if (e.max_tokens > 0)
      m.token_buckets.push_back({e.max_tokens, std::move(o)});
    else
      m.buckets.push_back({e.max_batch, std::move(o)});
  }
  return m;
}

const SessionOptions& OptionsMatrix::for_rows(int64_t rows) const {
  for (const Bucket& b : buckets)
    if (rows <= b.max_batch) return b.options;
  return fallback;
}

const SessionOptions& OptionsMatrix::for_tokens(int64_t tokens) const {
  for (const Bucket& b : token_buckets)
    if (tokens <= b.max_batch) return b.options;
  return fallback;
}

std::string describe_fusion(const std::optional<FusionConfig>& f) {
  if (!f) return "off";
  std::string s;
  for (const FusionSwitch& w : kFusionSwitches) s += std::string(w.label) + "=" + ((*f).*w.member ? "1" : "0") + " ";
  s += "disabled=[";
  for (size_t i = 0; i < f->disabled.size(); ++i) s += (i ? "," : "") + f->disabled[i];
  return s + "]";
}

std::vector<std::string> OptionsMatrix::describe() const {
  std::vector<std::string> out;
  for (const Bucket& b : buckets) out.push_back("<=" + std::to_string(b.max_batch) + ": " + describe_fusion(b.options.fusion));
  for (const Bucket& b : token_buckets)
    out.push_back("<=" + std::to_string(b.max_batch) + " tokens (packed): " + describe_fusion(b.options.fusion));
  std::string rest = buckets.empty() ? "all" : ">" + std::to_string(buckets.back().max_batch);
  out.push_back(rest + ": " + describe_fusion(fallback.fusion));
  return out;
}

std::map<std::string, Tensor> SessionCache::run(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Dims> dims;
  for (const auto& [name, t] : inputs) dims[name] = t.dims();
  auto it = sessions_.find(dims);
  if (it == sessions_.end()) {
    int64_t rows = batched_ && !inputs.empty() && !inputs.begin()->second.dims().empty() ? inputs.begin()->second.dims()[0] : 1;
    std::optional<Session> built;
    try {
      built.emplace(engine_.session(dims, options_->for_rows(rows)));
    } catch (const Error& e) {
      // The model plans at other shapes: one it cannot run at (wav2vec2 given fewer samples than
      // its first convolution's window) is the request's, a 400.
      if (e.kind() != ErrorKind::Runtime) throw;
      throw Error("the model cannot run at these input shapes: " + std::string(e.what()), ErrorKind::InvalidArgument);
    }
    if (sessions_.size() >= kMaxSessions) {
      auto oldest = std::min_element(last_used_.begin(), last_used_.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
      sessions_.erase(oldest->first);
      last_used_.erase(oldest);
    }
    it = sessions_.emplace(dims, std::move(*built)).first;
    share_arena(it->second, arena_);
    if (on_build_) on_build_(rows, dims, it->second);
  }
  last_used_[dims] = ++runs_;
  return it->second.run(inputs);
}

}  // namespace fusor::serve
