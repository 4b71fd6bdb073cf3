// The public entry point. An Engine is a loaded, validated model; a Session is that model
// bound to concrete input shapes with its kernels prepared. Typical use:
//
//   auto engine = fusor::Engine::load("model.onnx");
//   auto session = engine.session({{"input_ids", {1, 128}}, ...});
//   auto outputs = session.run({{"input_ids", ids}, ...});
//
// A Session is one execution context: use one per concurrent stream. What a session does step
// by step is visible through an observer (Session::set_observer); the plan and executor behind
// it are not part of the API. Errors are fusor::Error with a kind (fusor/error.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fusor/config.h"
#include "fusor/tensor.h"

namespace fusor {

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
  // Inputs whose values are fixed for this session, like TensorRT's shape tensors: they fold as
  // constants, so values that determine shapes (Slice starts, Reshape targets) may come from
  // inputs. Each must match its bound dtype and dims, and run() must be given the same values.
  std::map<std::string, Tensor> frozen_inputs;
};

// One fusion item of a session: model nodes that run as one fused kernel.
struct FusionItemInfo {
  std::string name;  // stable, from the model's node names ("layer3.attention"); fusion.disabled takes it
  std::string kind;  // the fused op: LayerNorm, Gelu, Elementwise, FusedMatMul, Attention, ...
  std::string pass;  // the fusion pass that made it
};

// One step of a run, as an observer sees it right after the step's kernel finished. Steps run
// in a fixed order, the same for every run of a session. Views (Reshape and the like in the
// fast plan) and values folded when the session was built have no step.
struct StepEvent {
  size_t index = 0;          // position in the session's step order, from 0
  std::string_view node;     // the node's name; for a fused step, the fusion item's name
  std::string_view op;       // op type ("MatMul"), or the fused kind ("LayerNorm")
  std::string_view kernel;   // the kernel that ran ("matmul_f32_onednn", "ref.Softmax")
  // The step's tensors, row-major, in the node's input and output order; an omitted optional
  // one is an undefined Tensor. They are valid only during the call: clone() what you keep.
  std::span<const Tensor> inputs;
  std::span<const Tensor> outputs;
  double seconds = 0;        // the kernel's wall time
};

class Session {
 public:
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // Inputs by name; every model input must be given with its bound dtype and shape.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);
  // The same, writing each output into `outputs[name]` when that tensor has the output's dtype
  // and dims (a view of caller memory is written in place: the Python package's io_binding);
  // any other entry is replaced by a new tensor, and missing outputs are added.
  void run_into(const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>& outputs);
  // Kernels one inference launches (steps in the plan).
  size_t kernels_per_inference() const;
  struct MemoryStats {
    size_t arena_bytes;        // this session's arena
    size_t lower_bound_bytes;  // most bytes live at any one step
    size_t naive_bytes;        // every intermediate in its own buffer
    size_t weights_bytes;      // constants the plan holds (weights, folded values)
  };
  MemoryStats memory() const;
  // The fusion items this session runs, in the order the passes made them.
  std::vector<FusionItemInfo> fusion_items() const;

  // Called after every step of every run until replaced; an empty function removes it. Outputs
  // are unchanged by observing; the observer's own time adds to run()'s, not to `seconds`.
  using Observer = std::function<void(const StepEvent&)>;
  void set_observer(Observer observer);

 private:
  struct Impl;
  friend struct EngineInternals;  // src/engine/internals.h: fusor's own stages
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Engine {
 public:
  // Reads an ONNX file; external data files are found next to it.
  static Engine load(const std::string& path);
  // An ONNX model already in memory (a ModelProto's bytes). External data files are found in
  // `base_dir`, the folder the model file would be in ("" for the current folder); their
  // locations must stay inside it.
  static Engine load_bytes(const std::string& bytes, const std::string& base_dir = "");

  std::vector<TensorInfo> inputs() const;
  std::vector<TensorInfo> outputs() const;
  size_t node_count() const;  // nodes in the ONNX file, Constant nodes included

  // Resolves each input's dims: explicit `shapes` first, then symbolic dims bound as
  // dimension 0 -> batch, any other symbolic dimension -> seq, except a decoder's "total..."
  // length: the "past..." length plus "sequence_length", as given or bound. Throws an InvalidArgument
  // Error when `shapes` names no model input, or an input without a declared shape has none.
  std::map<std::string, Dims> bind_dims(const std::map<std::string, Dims>& shapes, int64_t batch,
                                        int64_t seq) const;
  Session session(const std::map<std::string, Dims>& input_dims, const SessionOptions& options = {}) const;
  // Deterministic valid inputs: token ids inside the embedding table, masks of ones, normal floats.
  std::map<std::string, Tensor> sample_inputs(const std::map<std::string, Dims>& input_dims,
                                              uint64_t seed = 0) const;

 private:
  struct Impl;
  friend struct EngineInternals;
  explicit Engine(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace fusor
