// The packed runner: lays requests end to end in preallocated [1, T] inputs, fills the
// per-sequence positions and sequence starts, runs the packed plan, and cuts each request's rows
// out of the [1, T, ...] outputs. Tokens past the requests are filler: id 0, each its own
// one-token sequence, so they touch no request. The GEMMs skip their rows (set_live_tokens: zeros
// instead), and the other row-wise steps cost one row of work each.
#include "fusor/packed.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "engine/internals.h"
#include "ir/data_dependent.h"
#include "passes/pack_tokens.h"

namespace fusor {

struct PackedSession::Impl {
  std::optional<Session> session;  // set once the plan is built
  PackedSignature sig;
  int64_t capacity = 0;
  std::map<std::string, Tensor> feed;     // every packed-plan input, [1, capacity]
  std::vector<std::string> output_names;  // the model's outputs, each [1, capacity, ...]
};

PackedSession::PackedSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PackedSession::PackedSession(PackedSession&&) noexcept = default;
PackedSession& PackedSession::operator=(PackedSession&&) noexcept = default;
PackedSession::~PackedSession() = default;

int64_t PackedSession::capacity() const { return impl_->capacity; }
const std::vector<std::string>& PackedSession::request_inputs() const { return impl_->sig.token_inputs; }
Session& PackedSession::session() { return *impl_->session; }

int64_t PackedSession::tokens_of(const std::map<std::string, Tensor>& request) const {
  const Dims* shape = nullptr;
  for (const std::string& name : impl_->sig.token_inputs) {
    auto it = request.find(name);
    if (it == request.end()) throw Error("missing input '" + name + "'", ErrorKind::InvalidArgument);
    const Tensor& t = it->second;
    const DType want = impl_->feed.at(name).dtype();
    if (t.dtype() != want || t.rank() != 2 || t.dim(1) < 1)
      throw Error("input '" + name + "' must be " + dtype_name(want) + " [rows, length] with length >= 1, got " +
                      dtype_name(t.dtype()) + " " + dims_to_string(t.dims()),
                  ErrorKind::InvalidArgument);
    if (shape && t.dims() != *shape)
      throw Error("input '" + name + "' is " + dims_to_string(t.dims()) + ", but '" + impl_->sig.token_inputs[0] +
                      "' is " + dims_to_string(*shape),
                  ErrorKind::InvalidArgument);
    shape = &t.dims();
  }
  for (const auto& [name, t] : request)
    if (std::find(impl_->sig.token_inputs.begin(), impl_->sig.token_inputs.end(), name) == impl_->sig.token_inputs.end())
      throw Error("model has no input named '" + name + "'", ErrorKind::InvalidArgument);
  return (*shape)[0] * (*shape)[1];
}

std::vector<std::map<std::string, Tensor>> PackedSession::run(std::span<const std::map<std::string, Tensor>> requests) {
  Impl& m = *impl_;
  int64_t total = 0;
  for (const auto& r : requests) total += tokens_of(r);
  if (total > m.capacity)
    throw Error("the requests hold " + std::to_string(total) + " tokens; this packed session holds " +
                    std::to_string(m.capacity),
                ErrorKind::InvalidArgument);
  int64_t* starts = m.feed.at(m.sig.sequence_starts).data<int64_t>();
  const bool own_positions = m.sig.positions == kPackedPositions;
  int64_t* positions = own_positions ? m.feed.at(m.sig.positions).data<int64_t>() : nullptr;
  int64_t t = 0;
  for (const auto& r : requests) {
    const Dims& d = r.at(m.sig.token_inputs[0]).dims();
    for (const std::string& name : m.sig.token_inputs) {
      const Tensor& in = r.at(name);
      Tensor& dst = m.feed.at(name);
      std::memcpy(static_cast<std::byte*>(dst.raw()) + t * static_cast<int64_t>(dtype_size(in.dtype())), in.raw(), in.nbytes());
    }
    for (int64_t row = 0; row < d[0]; ++row)
      for (int64_t j = 0; j < d[1]; ++j, ++t) {
        starts[t] = t - j;
        if (positions) positions[t] = j;
      }
  }
  for (auto& [name, tensor] : m.feed) {  // filler: id 0, a sequence of its own
    const size_t es = dtype_size(tensor.dtype());
    std::memset(static_cast<std::byte*>(tensor.raw()) + total * static_cast<int64_t>(es), 0,
                static_cast<size_t>(m.capacity - total) * es);
  }
  for (int64_t f = total; f < m.capacity; ++f) starts[f] = f;

  // Only for this run: the session stays a plain plan of T tokens to anyone who runs it directly.
  struct LiveTokens {
    const Plan& plan;
    ~LiveTokens() { set_live_tokens(plan, INT64_MAX); }
  } live{plan_of(*m.session)};
  set_live_tokens(live.plan, total);
  std::map<std::string, Tensor> outs = m.session->run(m.feed);
  std::vector<std::map<std::string, Tensor>> per_request(requests.size());
  for (const std::string& name : m.output_names) {
    const Tensor& packed = outs.at(name);
    const size_t row_bytes = packed.nbytes() / static_cast<size_t>(m.capacity);
    int64_t at = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      const Dims& d = requests[i].at(m.sig.token_inputs[0]).dims();
      Dims dims = packed.dims();
      dims[0] = d[0];
      dims[1] = d[1];
      Tensor out(packed.dtype(), dims);
      std::memcpy(out.raw(), static_cast<const std::byte*>(packed.raw()) + static_cast<size_t>(at) * row_bytes, out.nbytes());
      at += d[0] * d[1];
      per_request[i][name] = std::move(out);
    }
  }
  return per_request;
}

PackedSession packed_session(const Engine& engine, int64_t tokens, const SessionOptions& options) {
  if (tokens < 1) throw Error("a packed session needs at least one token", ErrorKind::InvalidArgument);
  Graph prepared = graph_of(engine);
  auto impl = std::make_unique<PackedSession::Impl>();
  impl->sig = prepare_packed_graph(prepared);
  impl->capacity = tokens;
  auto graph = std::make_shared<const Graph>(std::move(prepared));
  std::map<std::string, Dims> dims;
  for (int id : graph->inputs) {
    const Value& v = graph->values[static_cast<size_t>(id)];
    dims[v.name] = {1, tokens};
    impl->feed[v.name] = Tensor(v.dtype, {1, tokens});
  }
  for (int id : graph->outputs) impl->output_names.push_back(graph->values[static_cast<size_t>(id)].name);
  PlanOptions po = plan_options(options, {});
  po.packed_tokens = true;
  po.token_rows = tokens;
  try {
    impl->session = EngineInternals::session(std::make_unique<Plan>(build_plan(graph, dims, po)), options);
  } catch (const DataDependentShape& e) {
    throw Error(std::string("cannot pack tokens: a shape depends on input values (") + e.what() + ")",
                ErrorKind::UnsupportedOp);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::UnsupportedOp) throw;
    // The rewrite missed something the model does with the sequence length: a packing refusal.
    throw Error(std::string("cannot pack tokens: the packed graph does not bind (") + e.what() + ")",
                ErrorKind::UnsupportedOp);
  }
  return PackedSession(std::move(impl));
}

}  // namespace fusor
