// GEMM and convolution epilogues, run by oneDNN post-ops in the fused kernels:
//   MatMul (2-D constant weights) or Gemm  [+ bias]  [+ activation]  [+ residual]  -> FusedMatMul
//   Conv (constant weights, optional bias)  [+ residual]  [+ activation]           -> FusedConv
//   dynamic QuantizedMatMul (float32 out)   [+ activation]  [+ residual]           -> QuantizedMatMul
// (the last: quantize_dynamic's FFN up-projection and its Gelu, the attention output projection
// and its residual Add, which otherwise each pass over the float32 result once more).
// Each step is taken only when the value before it has that one consumer and is not a graph
// output. A bias is a float32 constant of shape [N] or [1, .., N]; a residual is a float32
// tensor with exactly the output's shape (either Add operand order). A MatMul's or Gemm's chain
// may also pass a Reshape that only regroups the rows (the last dim stays N) before a step it
// takes: GPT-2's Conv1D exports as Reshape -> Gemm -> Reshape back to [batch, tokens, N] before
// its GELU or residual Add, and the rows' bytes are the same; a chain never ends in a Reshape. The fused node's leading inputs
// are A (X), B (W), then the bias and the residual when present; its attributes tell the kernel
// the rest (has_bias, activation, alpha, has_residual, trans_b; a Conv's own attributes).
#include <algorithm>
#include <optional>

#include "passes/match.h"
#include "passes/passes.h"

namespace fusor::passes {
namespace {

constexpr const char* kPass = "fuse_gemm_epilogue";

struct Activation {
  std::string name;  // relu, leaky_relu, tanh, sigmoid, hardswish, silu, gelu_erf, gelu_tanh
  float alpha = 0.f;
};

// The activation `n` computes on its first input, if it is one the kernels run as a post-op.
std::optional<Activation> activation_of(const Node& n) {
  switch (n.op) {
    case Op::Relu: return Activation{"relu"};
    case Op::LeakyRelu: return Activation{"leaky_relu", n.attr_float("alpha", 0.01f)};
    case Op::Tanh: return Activation{"tanh"};
    case Op::Sigmoid: return Activation{"sigmoid"};
    case Op::HardSwish: return Activation{"hardswish"};
    case Op::Gelu: break;
    case Op::Fused:
      if (!is_fused_kind(n, FusedKind::Gelu)) return std::nullopt;
      break;
    default: return std::nullopt;
  }
  std::string approx = n.attr_string("approximate", "none");
  if (approx == "none") return Activation{"gelu_erf"};
  if (approx == "tanh") return Activation{"gelu_tanh"};
  return std::nullopt;
}

bool is_graph_output(const FusionContext& ctx, int v) {
  const auto& outs = ctx.graph().outputs;
  return std::find(outs.begin(), outs.end(), v) != outs.end();
}

// SiLU as exporters write it, y = x * Sigmoid(x): `cur` read by exactly a Sigmoid and the Mul of
// that Sigmoid's result (and nothing else). Returns {sigmoid node, mul node}.
std::optional<std::pair<int, int>> silu_at(const FusionContext& ctx, int cur) {
  const auto& users = ctx.consumers(cur);
  if (users.size() != 2 || is_graph_output(ctx, cur)) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    const Node& sig = ctx.node(users[k]);
    const Node& mul = ctx.node(users[1 - k]);
    if (sig.op != Op::Sigmoid || mul.op != Op::Mul || sig.inputs[0] != cur) continue;
    const int s = sig.outputs[0];
    if (ctx.consumers(s).size() != 1 || is_graph_output(ctx, s)) continue;
    const bool reads_both = (mul.inputs[0] == cur && mul.inputs[1] == s) || (mul.inputs[0] == s && mul.inputs[1] == cur);
    if (reads_both && ctx.type(mul.outputs[0]).dims == ctx.type(cur).dims) return std::pair{users[k], users[1 - k]};
  }
  return std::nullopt;
}

// `cur`'s readers begin an epilogue: an Add, an activation, or the SiLU pair.
bool starts_epilogue(const FusionContext& ctx, int cur) {
  for (int u : ctx.consumers(cur))
    if (ctx.node(u).op == Op::Add || activation_of(ctx.node(u))) return true;
  return silu_at(ctx, cur).has_value();
}

// True when `dims` is [n] or [1, .., 1, n] with no more dims than `rank`.
bool is_row(const Dims& dims, int64_t n, size_t rank) {
  if (dims.empty() || dims.size() > rank || dims.back() != n) return false;
  return std::all_of(dims.begin(), dims.end() - 1, [](int64_t d) { return d == 1; });
}

struct Chain {
  std::vector<int> nodes;  // the producer first
  int bias = -1, residual = -1;
  int bias_add = -1;  // the Add node that adds the bias, when the bias is not the Gemm's C
  std::optional<Activation> act;
  std::vector<std::string> steps;  // for the suffix
};

// Why the step from `cur` (the chain's current result) to its consumer cannot be taken, when a
// consumer that looks like an epilogue step exists; nullopt when there is simply nothing to take.
std::optional<std::string> blocked_step(const FusionContext& ctx, int cur) {
  const auto& users = ctx.consumers(cur);
  if (!starts_epilogue(ctx, cur)) return std::nullopt;
  const std::string name = "'" + ctx.graph().values[static_cast<size_t>(cur)].name + "'";
  if (is_graph_output(ctx, cur)) return name + " is a graph output";
  return name + " is used by " + std::to_string(users.size()) + " nodes";
}

std::string dims_str(const Dims& d) { return dims_to_string(d); }

// The Reshape that reads `cur` when it only regroups rows of `n_cols` and what reads its result
// looks like an epilogue step (the chain drops the Reshape again if that step is refused); -1
// otherwise.
int row_reshape_at(const FusionContext& ctx, int cur, int64_t n_cols) {
  const int r = match::only_consumer(ctx, cur, Op::Reshape);
  if (r < 0 || ctx.node(r).inputs[0] != cur) return -1;
  const Dims& from = ctx.type(cur).dims;
  const Dims& to = ctx.type(ctx.node(r).outputs[0]).dims;
  if (from.empty() || to.empty() || from.back() != n_cols || to.back() != n_cols) return -1;
  return starts_epilogue(ctx, ctx.node(r).outputs[0]) ? r : -1;
}

// Grows `c` from the value `cur` through the allowed steps. Returns the reason it stopped when it declined a near
// miss, nullopt when it stopped at a node that is no epilogue step. `reshapes`: row-regrouping
// Reshapes may be passed (the FusedMatMul kernel writes its rows into any such shape).
std::optional<std::string> grow(const FusionContext& ctx, Chain& c, int cur, int64_t n_cols, bool gemm,
                                bool bias_allowed, bool reshapes = false) {
  Dims out_dims = ctx.type(cur).dims;
  const int a = ctx.node(c.nodes[0]).inputs[0];
  // GEMM: bias, activation, residual. Conv: residual, activation (oneDNN's sum, then eltwise).
  enum Stage { kBias, kAct, kResidual, kDone };  // the first step still allowed
  int stage = bias_allowed ? kBias : kAct;
  bool residual_done = false;
  while (stage != kDone) {
    const auto& users = ctx.consumers(cur);
    if (auto silu = c.act ? std::nullopt : silu_at(ctx, cur)) {  // oneDNN's swish with alpha 1
      c.act = Activation{"silu", 1.f};
      c.steps.push_back("silu");
      c.nodes.push_back(silu->first);
      c.nodes.push_back(silu->second);
      cur = ctx.node(silu->second).outputs[0];
      stage = gemm ? kResidual : kDone;
      continue;
    }
    if (const int r = reshapes ? row_reshape_at(ctx, cur, n_cols) : -1; r >= 0) {
      c.nodes.push_back(r);
      cur = ctx.node(r).outputs[0];
      out_dims = ctx.type(cur).dims;
      continue;
    }
    if (users.size() != 1 || is_graph_output(ctx, cur)) return blocked_step(ctx, cur);
    const Node& u = ctx.node(users[0]);
    if (u.op == Op::Add) {
      int other = match::other_input(u, cur);
      if (other < 0) return std::string("the Add adds the result to itself");
      const TensorType& ot = ctx.type(other);
      if (ot.dtype != DType::Float32) return std::string("the added tensor is not float32");
      if (ctx.type(u.outputs[0]).dims != out_dims)
        return "the Add broadcasts the result to " + dims_str(ctx.type(u.outputs[0]).dims);
      const bool can_bias = stage == kBias;
      const bool can_residual = gemm || (!c.act && !residual_done);
      if (can_bias && ctx.constant(other) && is_row(ot.dims, n_cols, out_dims.size())) {
        c.bias = other;
        c.bias_add = users[0];
        c.steps.push_back("bias");
        stage = kAct;
      } else if (can_residual && ot.dims == out_dims) {
        if (other == a || other == ctx.node(c.nodes[0]).inputs[1])
          return std::string("the residual is the operation's own input");
        c.residual = other;
        c.steps.push_back("residual");
        residual_done = true;
        if (gemm) stage = kDone;
      } else if (can_bias && ctx.constant(other)) {
        return "bias shape " + dims_str(ot.dims) + " is not [" + std::to_string(n_cols) + "] or [1, .., " +
               std::to_string(n_cols) + "]";
      } else if (ot.dims != out_dims) {
        return "the added tensor " + dims_str(ot.dims) + " is neither a constant bias nor a residual of shape " +
               dims_str(out_dims);
      } else {
        return std::string("a second Add is not part of the epilogue");
      }
    } else if (auto act = activation_of(u); act && !c.act && u.inputs[0] == cur) {
      c.act = act;
      c.steps.push_back(act->name.rfind("gelu", 0) == 0 ? "gelu" : act->name);
      stage = gemm ? kResidual : kDone;
    } else {
      return std::nullopt;
    }
    c.nodes.push_back(users[0]);
    cur = u.outputs[0];
  }
  return std::nullopt;
}

std::string suffix_of(const Chain& c, const std::string& fallback) {
  std::string s;
  for (const std::string& step : c.steps) s += (s.empty() ? "" : "_") + step;
  return s.empty() ? fallback : s;
}

std::map<std::string, Attribute> epilogue_attrs(const Chain& c) {
  std::map<std::string, Attribute> attrs = {{"has_bias", int64_t{c.bias >= 0}},
                                            {"has_residual", int64_t{c.residual >= 0}},
                                            {"activation", c.act ? c.act->name : std::string("none")}};
  if (c.act && c.act->name == "leaky_relu") attrs["alpha"] = c.act->alpha;
  return attrs;
}

// Why the GEMM node cannot carry an epilogue (checked only when it has a candidate consumer).
std::optional<std::string> gemm_unsupported(const FusionContext& ctx, const Node& n, int64_t& n_cols, int& bias) {
  const TensorType& at = ctx.type(n.inputs[0]);
  const TensorType& bt = ctx.type(n.inputs[1]);
  if (at.dtype != DType::Float32 || bt.dtype != DType::Float32) return std::string("operands are not float32");
  if (!ctx.constant(n.inputs[1])) return std::string("the weight is not a plan-time constant");
  if (bt.dims.size() != 2) return "the weight has shape " + dims_to_string(bt.dims) + ", not [K, N]";
  if (n.op == Op::MatMul) {
    if (at.dims.size() < 2) return std::string("A is a vector");
    n_cols = bt.dims[1];
    return std::nullopt;
  }
  if (n.attr_int("transA", 0) != 0) return std::string("Gemm has transA");
  if (n.attr_float("alpha", 1.f) != 1.f) return std::string("Gemm has alpha != 1");
  n_cols = n.attr_int("transB", 0) ? bt.dims[0] : bt.dims[1];
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const int cv = n.inputs[2];
    if (n.attr_float("beta", 1.f) != 1.f) return std::string("Gemm has beta != 1");
    if (!ctx.constant(cv) || ctx.type(cv).dtype != DType::Float32 || !is_row(ctx.type(cv).dims, n_cols, 2))
      return std::string("Gemm's C is not a constant row bias");
    bias = cv;
  }
  return std::nullopt;
}

// Fuses the epilogue after node i; returns whether the graph changed.
bool fuse_gemm_at(FusionContext& ctx, int i) {
  const Node& n = ctx.node(i);
  const int out = n.outputs[0];
  int64_t n_cols = 0;
  int c_bias = -1;
  const Dims& out_dims = ctx.type(out).dims;
  if (!starts_epilogue(ctx, out) && (out_dims.empty() || row_reshape_at(ctx, out, out_dims.back()) < 0)) return false;
  if (auto why = gemm_unsupported(ctx, n, n_cols, c_bias)) {
    ctx.decline(kPass, {i}, *why);
    return false;
  }
  Chain c;
  c.nodes = {i};
  c.bias = c_bias;
  if (c_bias >= 0) c.steps.push_back("bias");
  auto why = grow(ctx, c, out, n_cols, /*gemm=*/true, /*bias_allowed=*/c_bias < 0, /*reshapes=*/true);
  if (why) ctx.decline(kPass, c.nodes, *why);
  while (ctx.node(c.nodes.back()).op == Op::Reshape) c.nodes.pop_back();  // no step was taken after it
  if (c.nodes.size() == 1) return false;
  std::vector<int> leading = {n.inputs[0], n.inputs[1]};
  if (c.bias >= 0) leading.push_back(c.bias);
  if (c.residual >= 0) leading.push_back(c.residual);
  auto attrs = epilogue_attrs(c);
  attrs["trans_b"] = int64_t{n.op == Op::Gemm && n.attr_int("transB", 0) != 0};
  // The item is named after the GEMM and its bias, not the activation or residual after them.
  std::vector<int> scope = {i};
  if (c.bias_add >= 0) scope.push_back(c.bias_add);
  return ctx.fuse(kPass, c.nodes, FusedKind::FusedMatMul, suffix_of(c, "epilogue"), std::move(attrs), {}, leading, scope);
}

bool fuse_conv_at(FusionContext& ctx, int i) {
  const Node& n = ctx.node(i);
  const int out = n.outputs[0];
  if (!starts_epilogue(ctx, out)) return false;
  const int x = n.inputs[0], w = n.inputs[1];
  const int b = n.inputs.size() > 2 ? n.inputs[2] : -1;
  std::optional<std::string> why;
  if (ctx.type(x).dtype != DType::Float32 || ctx.type(w).dtype != DType::Float32) why = "operands are not float32";
  else if (!ctx.constant(w)) why = "the weight is not a plan-time constant";
  else if (b >= 0 && !ctx.constant(b)) why = "the bias is not a plan-time constant";
  else if (ctx.type(x).dims.size() != 4 && ctx.type(x).dims.size() != 3) why = "the convolution is not 1-D or 2-D";
  if (why) {
    ctx.decline(kPass, {i}, *why);
    return false;
  }
  Chain c;
  c.nodes = {i};
  c.bias = b;
  why = grow(ctx, c, out, /*n_cols=*/0, /*gemm=*/false, /*bias_allowed=*/false);
  if (why) ctx.decline(kPass, c.nodes, *why);
  if (c.nodes.size() == 1) return false;
  std::vector<int> leading = {x, w};
  if (b >= 0) leading.push_back(b);
  if (c.residual >= 0) leading.push_back(c.residual);
  auto attrs = n.attrs;  // kernel_shape, strides, pads, dilations, group, auto_pad
  for (auto& [k, v] : epilogue_attrs(c)) attrs[k] = v;
  std::string suffix = "conv";
  for (const std::string& step : c.steps) suffix += "_" + step;
  return ctx.fuse(kPass, c.nodes, FusedKind::FusedConv, suffix, std::move(attrs), {}, leading, {i});
}

// A QuantizedMatMul that fuse_quantized made from MatMulInteger -> Cast -> Mul [-> Add(bias)]:
// its result is float32, so an activation and a residual can follow in oneDNN's output stage too.
bool fuse_quantized_matmul_at(FusionContext& ctx, int i) {
  const Node& n = ctx.node(i);
  const int out = n.outputs[0];
  const std::vector<int64_t> roles = n.attr_ints("operands");
  const auto role = [&](QuantizedOperand r) {
    const auto at = static_cast<size_t>(r);
    return at < roles.size() ? roles[at] : int64_t{-1};
  };
  if (role(QuantizedOperand::AccScale) < 0 || ctx.type(out).dtype != DType::Float32 ||
      n.attr_string("activation", "none") != "none" || role(QuantizedOperand::Residual) >= 0 || !starts_epilogue(ctx, out))
    return false;
  Chain c;
  c.nodes = {i};
  auto why = grow(ctx, c, out, ctx.type(out).dims.back(), /*gemm=*/true, /*bias_allowed=*/false);
  if (why) ctx.decline(kPass, c.nodes, *why);
  if (c.nodes.size() == 1) return false;
  std::vector<int> leading = n.inputs;
  std::vector<int64_t> operands = roles;
  operands.resize(static_cast<size_t>(QuantizedOperand::Count), -1);
  if (c.residual >= 0) {
    operands[static_cast<size_t>(QuantizedOperand::Residual)] = static_cast<int64_t>(leading.size());
    leading.push_back(c.residual);
  }
  std::map<std::string, Attribute> attrs = {{"operands", operands},
                                            {"activation", c.act ? c.act->name : std::string("none")}};
  if (c.act && c.act->name == "leaky_relu") attrs["alpha"] = c.act->alpha;
  return ctx.fuse(kPass, c.nodes, FusedKind::QuantizedMatMul, suffix_of(c, "epilogue"), std::move(attrs), {}, leading,
                  {i});
}

}  // namespace

void fuse_gemm_epilogue(FusionContext& ctx) {
  for (int i = 0; i < static_cast<int>(ctx.graph().nodes.size()); ++i) {
    const Node& n = ctx.node(i);
    if (n.outputs.empty() || n.outputs[0] < 0 || n.inputs.size() < 2) continue;
    bool fused = false;
    if (n.op == Op::MatMul || n.op == Op::Gemm) fused = fuse_gemm_at(ctx, i);
    else if (n.op == Op::Conv) fused = fuse_conv_at(ctx, i);
    else if (is_fused_kind(n, FusedKind::QuantizedMatMul)) fused = fuse_quantized_matmul_at(ctx, i);
    if (fused) i = -1;  // indices moved: rescan (fused nodes are skipped)
  }
}

}  // namespace fusor::passes
