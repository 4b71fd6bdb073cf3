// An executable kernel: one step of a Plan. Kernels are built once per plan (after shapes are
// bound), so they can pack weights and create oneDNN primitives up front; run() does only the
// work and allocates nothing. A kernel may keep state between runs (cached oneDNN memory
// handles), so a plan's kernels serve one executor at a time. Every optimized kernel has a
// plain twin: the reference kernel of the same node. Kernels come from a Backend (backend.h).
#pragma once
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace fusor {

class Backend;

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Bytes of working memory run() needs. The executor plans them in its arena, live only
  // during this step, 64-byte aligned (oneDNN scratchpads, blocked-layout copies).
  virtual size_t scratch_bytes() const { return 0; }
  // Outputs arrive allocated with their planned shapes; `scratch` has scratch_bytes() bytes.
  virtual void run(std::span<const Tensor> inputs, std::span<Tensor> outputs, std::span<std::byte> scratch) = 0;
  // Names carry parameters: "matmul_f32_onednn", "add_f32_avx512", "ref.Softmax".
  virtual std::string name() const = 0;
  // Whether its parallel work runs on an OpenMP team (oneDNN's convolutions and small GEMMs, the
  // reference kernels) rather than fusor's thread pool. A plan with any such step runs all its
  // parallel work on the team, so that one set of threads stays hot (docs/threads.md).
  virtual bool uses_openmp() const { return false; }
  // Whether a NaN in its inputs can leave its outputs finite where the reference gives NaN:
  // oneDNN's ReLU post-op is max(x, 0) and its max pooling a running max, both 0 or the rest for
  // NaN. A session runs inputs holding NaN on reference kernels when any step says so.
  virtual bool drops_nan() const { return false; }
  // From now on only the first `rows` rows of output 0 (its dims but the last, flattened) carry
  // data: the rest are filler tokens, which nothing reads (set_live_tokens, plan/plan.h). A
  // kernel may store zeros there instead of computing them; by default it computes every row.
  virtual void set_live_rows(int64_t /*rows*/) {}

  // Blocked layouts between kernels (plan/layouts.h), so consecutive oneDNN convolutions skip
  // their reorders. A kernel that can write output 0 in a non-row-major layout of the same byte
  // size names it ("" when it cannot); consumers say which inputs may arrive in it.
  virtual std::string offered_output_layout() const { return {}; }
  // Other layouts it can write output 0 in, after the offered one: the plan takes the first of
  // them all that every reader takes, and names it in use_output_layout before use_layouts.
  virtual std::vector<std::string> other_output_layouts() const { return {}; }
  virtual void use_output_layout(const std::string& /*layout*/) {}
  virtual bool accepts_input_layout(size_t /*index*/, const std::string& /*layout*/) const { return false; }
  // An elementwise or data-movement kernel may instead follow a layout: when every input of
  // output 0's shape arrives in `layout`, it writes all its outputs in `layout` too (its other
  // inputs, such as a per-channel scale, read the same in both; a plan never splits a
  // follower's outputs between layouts). Then use_layouts names those inputs' layout.
  virtual bool follows_layout(const std::string& /*layout*/) const { return false; }
  // Inputs of another shape than output 0 that a follower still takes in the followed layout
  // (Concat's parts, Split's whole, Resize's image); by default only the inputs of its shape.
  virtual bool follows_input(size_t /*index*/) const { return false; }
  // At plan time, before any run: input i arrives in `inputs[i]` ("" = row-major); the outputs
  // are written in the offered (output 0) or followed (all) layout when `output_blocked`.
  virtual void use_layouts(std::span<const std::string> /*inputs*/, bool /*output_blocked*/) {}
  // Converts any output written in the offered or followed layout to row-major (for observers).
  virtual void output_to_plain(const Tensor& /*stored*/, Tensor& /*plain*/) const {}
};

// Everything kernel selection may look at for one node, with shapes bound.
struct KernelRequest {
  const Node& node;
  std::span<const TensorType> inputs;
  std::span<const Tensor* const> constants;  // plan-time constant inputs (weights), or nullptr
  std::span<const TensorType> outputs;
};

// Given a request, the kernel `backend` chose for it and that backend, returns the kernel to use
// instead (or the same): the precision gate's fault injection.
using KernelWrapper =
    std::function<std::unique_ptr<Kernel>(const KernelRequest&, std::unique_ptr<Kernel> chosen, const Backend& backend)>;

}  // namespace fusor
