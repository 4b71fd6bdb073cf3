#include "serve/served_model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <thread>

#include "engine/internals.h"
#include "kernels/cpu/thread_pool.h"
#include "serve/row_coupling.h"

namespace fusor::serve {
namespace {

// Why the model's outputs for one row depend on the other rows of its batch, or "", as far as
// its graph and declared shapes tell; rows_coupled_in_a_probe then runs it to find the rest.
std::string couples_rows(const Graph& g, const Signature& sig) {
  for (const Node& n : g.nodes)
    if (n.op == Op::DynamicQuantizeLinear)
      return n.describe() + " takes one scale over its whole input";
  const std::string batch = sig.inputs.empty() || sig.inputs[0].symbols.empty() ? "" : sig.inputs[0].symbols[0];
  for (const TensorInfo& out : sig.outputs) {
    if (out.dims.empty()) continue;  // a scalar is shared by the batch's requests
    const std::string symbol = out.symbols.empty() ? "" : out.symbols[0];
    if (out.dims[0] >= 0 || (!batch.empty() && !symbol.empty() && symbol != batch))
      return "output '" + out.name + "' has axis 0 " + (out.dims[0] >= 0 ? std::to_string(out.dims[0]) : symbol) +
             ", not the inputs' batch " + (batch.empty() ? "axis" : batch);
  }
  return "";
}

std::string dims_string(const std::map<std::string, Dims>& dims) {
  std::string s;
  for (const auto& [name, d] : dims) s += (s.empty() ? "" : " ") + name + "=" + shape_string(d);
  return s;
}

}  // namespace

ServedModel::ServedModel(std::string name, Engine engine, const ServeConfig& config, const SessionOptions& options,
                         int threads_per_context)
    : name_(std::move(name)), engine_(std::move(engine)), sig_(Signature::of(engine_.inputs(), engine_.outputs())), config_(config),
      stats_(class_names(config)), matrix_(std::make_shared<OptionsMatrix>(OptionsMatrix::of(config, options))) {
  // KServe has no datatype for float8, int4, int2 or the MX types: their tensors cannot go over
  // the wire (the JSON body came out without its data).
  for (const auto* list : {&sig_.inputs, &sig_.outputs})
    for (const TensorInfo& t : *list)
      if (*triton_dtype(t.dtype) == '\0')
        throw Error("model " + name_ + ": " + (list == &sig_.inputs ? "input '" : "output '") + t.name + "' is " +
                        dtype_name(t.dtype) + ", which has no KServe datatype",
                    ErrorKind::UnsupportedOp);
  if (sig_.batched) sig_.runs_alone = couples_rows(graph_of(engine_), sig_);
  if (sig_.batched && sig_.runs_alone.empty()) sig_.runs_alone = rows_coupled_in_a_probe(engine_, options);
  if (!sig_.runs_alone.empty())
    std::fprintf(stderr, "fusor serve: model %s: each request runs alone, unpadded: %s, so batch-mates would change it\n",
                 name_.c_str(), sig_.runs_alone.c_str());
  for (const std::string& line : matrix_->describe())
    std::fprintf(stderr, "fusor serve: model %s: batch sizes %s\n", name_.c_str(), line.c_str());
  if (sig_.pads_seq && sig_.runs_alone.empty()) {
    if (std::string why = padding_changes_outputs(engine_, sig_, options, config.pad_values); !why.empty()) {
      sig_.pads_seq = false;
      std::fprintf(stderr, "fusor serve: model %s: its mask does not hide padding (%s): a batch takes requests of one length\n",
                   name_.c_str(), why.c_str());
    }
  } else if (sig_.has_seq() && !sig_.pads_seq && sig_.runs_alone.empty())
    std::fprintf(stderr, "fusor serve: model %s: no mask input to hide padding: a batch takes requests of one length\n",
                 name_.c_str());
  for (int64_t i = 0; i < std::max<int64_t>(1, config.execution_contexts); ++i) {
    auto log = [this, i](int64_t rows, const std::map<std::string, Dims>& dims, const Session& s) {
      std::fprintf(stderr, "fusor serve: model %s context %lld: session for %lld row(s) %s: %zu fused item(s), %zu kernel(s); fusion %s\n",
                   name_.c_str(), static_cast<long long>(i), static_cast<long long>(rows), dims_string(dims).c_str(),
                   s.fusion_items().size(), s.kernels_per_inference(), describe_fusion(matrix_->for_rows(rows).fusion).c_str());
    };
    contexts_.push_back(std::make_unique<SessionCache>(engine_, matrix_, sig_.batched, log));
  }
  // Packed serving when the model packs (one session at a token bucket proves it), and its
  // requests may share a run at all.
  std::optional<PackedSession> probe;
  if (sig_.runs_alone.empty()) probe = probe_packing(engine_, config, options, not_packed_reason_);
  else not_packed_reason_ = "each request runs alone";
  if (probe) {
    std::fprintf(stderr, "fusor serve: model %s: packed serving, batches fill by tokens, plans per %lld-token step\n",
                 name_.c_str(), static_cast<long long>(config.token_bucket));
    for (size_t i = 0; i < contexts_.size(); ++i) {
      auto log = [this, i](int64_t tokens, const Session& s) {
        std::fprintf(stderr, "fusor serve: model %s context %zu: packed session for %lld tokens: %zu kernel(s)\n",
                     name_.c_str(), i, static_cast<long long>(tokens), s.kernels_per_inference());
      };
      packed_.push_back(std::make_unique<PackedCache>(engine_, matrix_, config.token_bucket, log));
    }
    packed_[0]->adopt(std::move(*probe), options);
  } else {
    std::fprintf(stderr, "fusor serve: model %s: not packed: %s\n", name_.c_str(), not_packed_reason_.c_str());
  }
  if (packed() && config.prebuild_plans) prebuild_packed_plans(threads_per_context);
  RunPacked run_packed;
  if (packed()) run_packed = [this](size_t ctx, const std::vector<const Tensors*>& requests) { return packed_[ctx]->run(requests); };
  cpu::release_openmp_team();  // this thread built the sessions; the contexts' threads run them
  batcher_ = std::make_unique<Batcher>(
      config, sig_, [this](size_t ctx, const Tensors& batch) { return contexts_[ctx]->run(batch); }, stats_,
      [threads_per_context](size_t) { cpu::become_compute_thread(threads_per_context); }, std::move(run_packed));
}

void ServedModel::prebuild_packed_plans(int threads_per_context) {
  int64_t budget = 1;
  for (const auto& [_, cls] : config_.classes) budget = std::max(budget, cls.max_batch_tokens);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> failed(packed_.size());
  std::vector<std::thread> builders;
  cpu::release_openmp_team();  // this thread's idle team would slow the builders' (thread_pool.h)
  for (size_t i = 0; i < packed_.size(); ++i)
    builders.emplace_back([&, i] {
      cpu::set_thread_width(threads_per_context);
      try {
        packed_[i]->build_up_to(budget);
      } catch (const std::exception& e) {
        failed[i] = e.what();
      }
    });
  for (auto& b : builders) b.join();
  for (const std::string& why : failed)
    if (!why.empty())
      throw Error("model " + name_ + ": building the packed plans up to " + std::to_string(budget) +
                  " tokens failed (serve.prebuild_plans: false builds them on first use): " + why);
  std::fprintf(stderr, "fusor serve: model %s: %zu packed plan(s) per context, up to %lld tokens, built in %.1f s\n",
               name_.c_str(), packed_[0]->size(), static_cast<long long>(budget),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

ServedModel::~ServedModel() { batcher_->drain(); }

Completion ServedModel::infer_sync(Tensors inputs, const std::string& cls, const ClientGone& gone) {
  auto promise = std::make_shared<std::promise<Completion>>();
  auto future = promise->get_future();
  auto left = std::make_shared<std::atomic<bool>>(false);
  infer(std::move(inputs), cls, [promise](Completion c) { promise->set_value(std::move(c)); },
        [left] { return left->load(std::memory_order_relaxed); });
  if (!gone) return future.get();
  constexpr auto kPoll = std::chrono::milliseconds(20);
  while (future.wait_for(kPoll) != std::future_status::ready)
    if (gone()) {
      left->store(true, std::memory_order_relaxed);
      return {client_cancelled(), {}};
    }
  return future.get();
}

}  // namespace fusor::serve
