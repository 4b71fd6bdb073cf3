// The public entry point. An Engine is a loaded, validated model; a Session is that model
// bound to concrete input shapes with its kernels prepared. Typical use:
//
//   auto engine = fusor::Engine::load("model.onnx");
//   auto session = engine.session({{"input_ids", {1, 128}}, ...});
//   auto outputs = session.run({{"input_ids", ids}, ...});
//
// A Session is one execution context: use one per concurrent stream.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fusor/config.h"
#include "fusor/tensor.h"

namespace fusor {

struct Graph;
struct Plan;
class Kernel;
struct KernelRequest;
class Backend;
class Executor;

struct TensorInfo {
  std::string name;
  DType dtype = DType::Undefined;
  Dims dims;                         // -1 where the dimension is symbolic or unknown
  std::vector<std::string> symbols;  // the symbol name per dimension, empty when static
  bool has_shape = false;
};

struct SessionOptions {
  bool reference = false;  // run the plain reference kernels only
  bool mem_reuse = true;   // intermediates share arena bytes where lifetimes do not overlap
  bool mem_guard = false;  // canaries checked after each kernel, dead values poisoned
  bool reorder = true;     // memory-aware step order (config: kernel.reorder_for_coalesce)
  // Fusion passes and their switches (config: fusion.*); empty runs the unfused plan.
  std::optional<FusionConfig> fusion = FusionConfig{};
  // Testing hook: replaces the kernel chosen for each fused step (precision gate faults).
  std::function<std::unique_ptr<Kernel>(const KernelRequest&, std::unique_ptr<Kernel>, const Backend&)>
      wrap_fused_kernel;
  // Inputs whose values are fixed for this session (shape-determining inputs); see PlanOptions.
  std::map<std::string, Tensor> frozen_inputs;
};

class Session {
 public:
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // Inputs by name; every model input must be given with its bound dtype and shape.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);
  // Kernels one inference launches (steps in the plan).
  size_t kernels_per_inference() const;
  struct MemoryStats {
    size_t arena_bytes;        // this session's arena
    size_t lower_bound_bytes;  // most bytes live at any one step
    size_t naive_bytes;        // every intermediate in its own buffer
    size_t weights_bytes;      // constants the plan holds (weights, folded values)
  };
  MemoryStats memory() const;
  const Plan& plan() const;
  Executor& executor();

 private:
  friend class Engine;
  Session(std::unique_ptr<Plan> plan, const SessionOptions& options);
  std::unique_ptr<Plan> plan_;
  std::unique_ptr<Executor> executor_;
};

class Engine {
 public:
  static Engine load(const std::string& path);

  std::vector<TensorInfo> inputs() const;
  std::vector<TensorInfo> outputs() const;
  size_t node_count() const;  // nodes in the ONNX file, Constant nodes included
  const Graph& graph() const { return *graph_; }

  // Resolves each input's dims: explicit `shapes` first, then symbolic dims bound as
  // dimension 0 -> batch, any other symbolic dimension -> seq.
  std::map<std::string, Dims> bind_dims(const std::map<std::string, Dims>& shapes, int64_t batch,
                                        int64_t seq) const;
  Session session(const std::map<std::string, Dims>& input_dims, const SessionOptions& options = {}) const;
  // Deterministic valid inputs: token ids inside the embedding table, masks of ones, normal floats.
  std::map<std::string, Tensor> sample_inputs(const std::map<std::string, Dims>& input_dims,
                                              uint64_t seed = 0) const;

 private:
  explicit Engine(std::shared_ptr<const Graph> graph) : graph_(std::move(graph)) {}
  std::shared_ptr<const Graph> graph_;
};

}  // namespace fusor
