// QDQ node units -> int8 kernels (issue #19). A model quantized in the QDQ form (ONNX Runtime's
// quantize_static, NNCF) keeps float ops between DequantizeLinear and QuantizeLinear; taken
// literally, every Conv runs in float32 on dequantized weights. This pass finds
//
//   DequantizeLinear(x) ------+
//   DequantizeLinear(W) ------+-- Conv [-> Relu] -> QuantizeLinear        => QuantizedConv
//   [DequantizeLinear(B) | B] +
//
//   DequantizeLinear(x) -> MaxPool -> QuantizeLinear, one scale and zero point => QuantizedMaxPool
//
//   DequantizeLinear(x), DequantizeLinear(W) -> MatMul or Gemm [-> Relu] -> QuantizeLinear
//                                                                                    => QuantizedMatMul
//   MatMulInteger(x, W) -> Cast(float) -> Mul(scale) [-> Add(bias)]                  => QuantizedMatMul
//     (quantize_dynamic's form: x from DynamicQuantizeLinear, scale = x_scale * w_scale per column)
//
// A Conv or MatMul unit's kernel multiplies the int8 operands, accumulates in int32 and
// requantizes in its epilogue. It rounds once where the native graph rounds the float32 result,
// so the two may differ by one quantization step at a tie; the gate allows a quantized output
// exactly that (check/compare.h).
// A maximum commutes with the increasing DequantizeLinear, and QuantizeLinear with the same
// parameters gives the integers back, so QuantizedMaxPool pools the integers and is exact.
// QuantizedMatMul's epilogue (the int32 result times the scale, plus the bias) is the float32
// arithmetic of the Cast, Mul and Add it replaces, in oneDNN's output stage.
//
// Conditions: x is uint8 or int8 with a scalar scale and zero point, W an int8 constant with a
// scalar or per-output-channel scale (a Conv's axis 0, a MatMul's columns) and zero points all
// zero (symmetric weights, what oneDNN's int8 primitives take), the bias an int32 constant behind
// a DequantizeLinear or a float constant, and the output's QuantizeLinear per-tensor; every value
// between the Conv or MatMul and the QuantizeLinear has that one reader. The fused node's "operands" attribute gives, per role
// (QuantizedOperand), the node input holding it.
//
// A DequantizeLinear read by several nodes is first copied per reader, as ONNX Runtime's
// EnsureUniqueDQForNodeUnit does, so one reader's unit can take its copy while the others keep
// theirs (a residual Add reading the block input that the next Conv reads too).
#include <algorithm>

#include "passes/match.h"
#include "passes/passes.h"

namespace fusor::passes {
namespace {

constexpr const char* kPass = "fuse_quantized";

bool is_graph_output(const FusionContext& ctx, int v) {
  const auto& outs = ctx.graph().outputs;
  return std::find(outs.begin(), outs.end(), v) != outs.end();
}

// Gives every reader after the first of a DequantizeLinear's output its own copy of the node,
// where one of the readers is a unit this pass fuses.
void unique_dequantize_per_reader(FusionContext& ctx) {
  Graph& g = ctx.mutable_graph();
  bool changed = false;
  const size_t count = g.nodes.size();
  for (size_t i = 0; i < count; ++i) {
    if (g.nodes[i].op != Op::DequantizeLinear || g.nodes[i].outputs.empty() || g.nodes[i].outputs[0] < 0) continue;
    const int out = g.nodes[i].outputs[0];
    if (is_graph_output(ctx, out)) continue;
    const std::vector<int> readers = ctx.consumers(out);
    auto unit = [&](int r) { const Op op = ctx.node(r).op; return op == Op::Conv || op == Op::MatMul || op == Op::Gemm; };
    if (std::none_of(readers.begin(), readers.end(), unit)) continue;
    for (size_t k = 1; k < readers.size(); ++k) {
      Node copy = g.nodes[i];
      copy.name += "_copy" + std::to_string(k);
      Value v = g.values[static_cast<size_t>(out)];
      v.name += "_copy" + std::to_string(k);
      v.producer = -1;
      copy.outputs = {g.add_value(std::move(v))};
      for (int& in : g.nodes[static_cast<size_t>(readers[k])].inputs)
        if (in == out) in = copy.outputs[0];
      g.nodes.push_back(std::move(copy));
      changed = true;
    }
  }
  if (!changed) return;
  g.reorder_nodes();
  ctx.refresh();
}

// A DequantizeLinear that makes `value`, with plan-time constant scale and zero point.
struct Dequantized {
  int node = -1;
  int data = -1, scale = -1, zero_point = -1;
};

std::optional<Dequantized> dequantized(const FusionContext& ctx, int value) {
  const int p = match::producer_of(ctx, value, Op::DequantizeLinear);
  if (p < 0) return std::nullopt;
  const Node& n = ctx.node(p);
  if (n.attr_int("block_size", 0) != 0) return std::nullopt;
  Dequantized d{p, n.inputs[0], n.inputs.size() > 1 ? n.inputs[1] : -1, n.inputs.size() > 2 ? n.inputs[2] : -1};
  if (d.scale < 0 || !ctx.constant(d.scale) || ctx.type(d.scale).dtype != DType::Float32) return std::nullopt;
  if (d.zero_point >= 0 && !ctx.constant(d.zero_point)) return std::nullopt;
  return d;
}

bool is_scalar(const FusionContext& ctx, int v) { return v < 0 || (ctx.constant(v) && ctx.constant(v)->numel() == 1); }

bool all_zero(const Tensor* t) {
  if (!t) return true;
  for (int64_t i = 0; i < t->numel(); ++i)
    if (t->scalar_as_double(i) != 0) return false;
  return true;
}

// Why the activation's DequantizeLinear does not suit an int8 kernel, or nullopt.
std::optional<std::string> activation_problem(const FusionContext& ctx, const Dequantized& x) {
  const DType t = ctx.type(x.data).dtype;
  if (t != DType::UInt8 && t != DType::Int8) return "the input is dequantized from " + std::string(dtype_name(t));
  if (!is_scalar(ctx, x.scale) || !is_scalar(ctx, x.zero_point)) return std::string("the input is quantized per axis");
  return std::nullopt;
}

// Why the weight's DequantizeLinear does not suit an int8 kernel, or nullopt: its output
// channels lie on `channel_axis` (0 for a Conv's [OC, C, ..], 1 for a MatMul's [K, N]).
std::optional<std::string> weight_problem(const FusionContext& ctx, const Dequantized& w, int64_t out_channels,
                                          int64_t channel_axis) {
  if (!ctx.constant(w.data) || ctx.type(w.data).dtype != DType::Int8) return std::string("the weight is not an int8 constant");
  const int64_t scales = ctx.constant(w.scale)->numel();
  const int64_t rank = static_cast<int64_t>(ctx.type(w.data).dims.size());
  int64_t axis = ctx.node(w.node).attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (scales != 1 && (scales != out_channels || axis != channel_axis))
    return std::string("the weight's scale is not per output channel");
  if (!all_zero(ctx.constant(w.zero_point))) return std::string("the weight's zero point is not zero (asymmetric weights)");
  return std::nullopt;
}

// Conv's bias as the fused node takes it: the DequantizeLinear's int32 operands, or a float constant.
std::optional<std::string> bias_problem(const FusionContext& ctx, int bias, std::optional<Dequantized>& dq) {
  if (bias < 0) return std::nullopt;
  dq = dequantized(ctx, bias);
  if (dq) {
    if (!ctx.constant(dq->data) || ctx.type(dq->data).dtype != DType::Int32) return std::string("the bias is not an int32 constant");
    if (!all_zero(ctx.constant(dq->zero_point))) return std::string("the bias has a zero point");
    return std::nullopt;
  }
  if (!ctx.constant(bias) || ctx.type(bias).dtype != DType::Float32) return std::string("the bias is not a constant");
  return std::nullopt;
}

// The QuantizeLinear that ends the unit, through an optional Relu; appends the nodes taken.
std::optional<std::string> output_chain(const FusionContext& ctx, int value, std::vector<int>& nodes, bool& relu,
                                        int& q) {
  int next = match::only_consumer(ctx, value);
  if (next < 0) return "'" + ctx.graph().values[static_cast<size_t>(value)].name + "' is read by several nodes or is a graph output";
  if (ctx.node(next).op == Op::Relu) {
    relu = true;
    nodes.push_back(next);
    next = match::only_consumer(ctx, ctx.node(next).outputs[0]);
    if (next < 0) return std::string("the Relu's result is read by several nodes or is a graph output");
  }
  if (ctx.node(next).op != Op::QuantizeLinear) return std::string("the result is not quantized (no QuantizeLinear follows)");
  const Node& qn = ctx.node(next);
  const int scale = qn.inputs.size() > 1 ? qn.inputs[1] : -1, zp = qn.inputs.size() > 2 ? qn.inputs[2] : -1;
  const DType t = ctx.type(qn.outputs[0]).dtype;
  if (t != DType::UInt8 && t != DType::Int8) return "the result is quantized to " + std::string(dtype_name(t));
  if (scale < 0 || !ctx.constant(scale) || ctx.type(scale).dtype != DType::Float32 || !is_scalar(ctx, scale) ||
      !is_scalar(ctx, zp) || (zp >= 0 && !ctx.constant(zp)))
    return std::string("the result is not quantized per tensor with constant parameters");
  nodes.push_back(next);
  q = next;
  return std::nullopt;
}

// Leading inputs in role order, each value once, and per role its position among them (-1: absent).
struct Operands {
  std::vector<int> leading;
  std::vector<int64_t> position = std::vector<int64_t>(static_cast<size_t>(QuantizedOperand::Count), -1);
  void set(QuantizedOperand role, int value) {
    if (value < 0) return;
    auto it = std::find(leading.begin(), leading.end(), value);
    position[static_cast<size_t>(role)] = it - leading.begin();
    if (it == leading.end()) leading.push_back(value);
  }
};

// The rest of a Conv or MatMul/Gemm unit once its own checks ran (`why` holds their verdict):
// the bias, the output chain, and the operands in role order. nullopt, declined with the reason,
// when the unit does not fit; `nodes` gains the chain and the bias's DequantizeLinear.
std::optional<Operands> unit_operands(FusionContext& ctx, const Dequantized& x, const Dequantized& w, int bias,
                                      int result, std::vector<int>& nodes, std::optional<std::string> why, bool& relu) {
  std::optional<Dequantized> b;
  if (!why) why = bias_problem(ctx, bias, b);
  int q = -1;
  if (!why) why = output_chain(ctx, result, nodes, relu, q);
  if (why) {
    ctx.decline(kPass, nodes, *why);
    return std::nullopt;
  }
  if (b) nodes.push_back(b->node);
  const Node& qn = ctx.node(q);
  Operands ops;
  using R = QuantizedOperand;
  ops.set(R::X, x.data);
  ops.set(R::XScale, x.scale);
  ops.set(R::XZeroPoint, x.zero_point);
  ops.set(R::W, w.data);
  ops.set(R::WScale, w.scale);
  ops.set(R::WZeroPoint, w.zero_point);
  ops.set(R::Bias, b ? b->data : bias);
  if (b) ops.set(R::BiasScale, b->scale);
  ops.set(R::YScale, qn.inputs[1]);
  ops.set(R::YZeroPoint, qn.inputs.size() > 2 ? qn.inputs[2] : -1);
  return ops;
}

bool fuse_conv_at(FusionContext& ctx, int i) {
  const Node& conv = ctx.node(i);
  auto x = dequantized(ctx, conv.inputs[0]);
  auto w = dequantized(ctx, conv.inputs[1]);
  if (!x || !w) return false;  // not a QDQ unit: nothing to report
  std::vector<int> nodes = {x->node, w->node, i};
  std::optional<std::string> why = activation_problem(ctx, *x);
  const TensorType& wt = ctx.type(conv.inputs[1]);
  if (!why && wt.dims.size() != 4 && wt.dims.size() != 3) why = "the convolution is not 1-D or 2-D";
  if (!why) why = weight_problem(ctx, *w, wt.dims.empty() ? 0 : wt.dims[0], 0);
  bool relu = false;
  auto ops = unit_operands(ctx, *x, *w, conv.inputs.size() > 2 ? conv.inputs[2] : -1, conv.outputs[0], nodes, why, relu);
  if (!ops) return false;
  auto attrs = conv.attrs;  // kernel_shape, strides, pads, dilations, group, auto_pad
  attrs["operands"] = ops->position;
  attrs["activation"] = std::string(relu ? "relu" : "none");
  std::sort(nodes.begin(), nodes.end());
  return ctx.fuse(kPass, nodes, FusedKind::QuantizedConv, relu ? "qconv_relu" : "qconv", std::move(attrs), {},
                  ops->leading, {i});
}

// [N], [1, .., N] or one element: what broadcasts along the last axis of a [.., N] result.
bool is_column_vector(const Dims& dims, int64_t n) {
  const int64_t size = numel_of(dims);
  if (size == 1) return true;
  return !dims.empty() && dims.back() == n && size == n;
}

bool fuse_matmul_integer_at(FusionContext& ctx, int i) {
  const Node& mm = ctx.node(i);
  const int a = mm.inputs[0], w = mm.inputs[1];
  const int a_zp = mm.inputs.size() > 2 ? mm.inputs[2] : -1, w_zp = mm.inputs.size() > 3 ? mm.inputs[3] : -1;
  std::vector<int> nodes = {i};
  const Tensor* weights = ctx.constant(w);
  std::optional<std::string> why;
  if (!weights || weights->dtype() != DType::Int8 || weights->rank() != 2) why = "the weight is not a 2-D int8 constant";
  else if (a_zp >= 0 && numel_of(ctx.type(a_zp).dims) != 1)
    why = "the input's zero point is not one value";
  else if (!all_zero(ctx.constant(w_zp)) || (w_zp >= 0 && !ctx.constant(w_zp)))
    why = "the weight's zero point is not zero (asymmetric weights)";
  if (why) {
    ctx.decline(kPass, nodes, *why);
    return false;
  }
  const int64_t n_cols = weights->dim(1);
  const int cast = match::only_consumer(ctx, mm.outputs[0], Op::Cast);
  if (cast < 0 || ctx.type(ctx.node(cast).outputs[0]).dtype != DType::Float32) return false;  // no epilogue here
  nodes.push_back(cast);
  const int mul = match::only_consumer(ctx, ctx.node(cast).outputs[0], Op::Mul);
  const int scale = mul < 0 ? -1 : match::other_input(ctx.node(mul), ctx.node(cast).outputs[0]);
  if (scale < 0 || ctx.type(scale).dtype != DType::Float32 || !is_column_vector(ctx.type(scale).dims, n_cols)) {
    ctx.decline(kPass, nodes, "the int32 result is not multiplied by a per-column scale");
    return false;
  }
  nodes.push_back(mul);
  int bias = -1;
  const int add = match::only_consumer(ctx, ctx.node(mul).outputs[0], Op::Add);
  if (add >= 0) {
    const int other = match::other_input(ctx.node(add), ctx.node(mul).outputs[0]);
    const Tensor* b = ctx.constant(other);
    if (b && b->dtype() == DType::Float32 && b->numel() == n_cols && ctx.type(other).dims.back() == n_cols) {
      bias = other;
      nodes.push_back(add);
    }
  }
  Operands ops;
  using R = QuantizedOperand;
  ops.set(R::X, a);
  ops.set(R::W, w);
  ops.set(R::XZeroPoint, a_zp);
  ops.set(R::WZeroPoint, w_zp);
  ops.set(R::AccScale, scale);
  ops.set(R::Bias, bias);
  std::map<std::string, Attribute> attrs = {{"operands", ops.position}};
  return ctx.fuse(kPass, nodes, FusedKind::QuantizedMatMul, bias >= 0 ? "qmatmul_bias" : "qmatmul", std::move(attrs), {},
                  ops.leading, {i});
}

// A QDQ MatMul or Gemm unit: DQ(x) x DQ(int8 W) [+ C] [-> Relu] -> Q, W per output column.
bool fuse_qdq_matmul_at(FusionContext& ctx, int i) {
  const Node& mm = ctx.node(i);
  auto x = dequantized(ctx, mm.inputs[0]);
  auto w = dequantized(ctx, mm.inputs[1]);
  if (!x || !w) return false;  // not a QDQ unit
  std::vector<int> nodes = {x->node, w->node, i};
  const bool gemm = mm.op == Op::Gemm, trans_b = gemm && mm.attr_int("transB", 0) != 0;
  const TensorType& wt = ctx.type(mm.inputs[1]);
  std::optional<std::string> why = activation_problem(ctx, *x);
  if (!why && (wt.dims.size() != 2 || ctx.type(mm.inputs[0]).dims.size() < 2)) why = "the weight is not 2-D";
  if (!why && gemm && (mm.attr_int("transA", 0) != 0 || mm.attr_float("alpha", 1.f) != 1.f || mm.attr_float("beta", 1.f) != 1.f))
    why = "Gemm has transA, alpha or beta";
  const int64_t n_cols = wt.dims.size() == 2 ? wt.dims[trans_b ? 0 : 1] : 0;
  if (!why) why = weight_problem(ctx, *w, n_cols, trans_b ? 0 : 1);
  const int bias = gemm && mm.inputs.size() > 2 ? mm.inputs[2] : -1;
  // [M, 1] has N elements when M == N, but it is a column, one value per row.
  if (!why && bias >= 0 && (numel_of(ctx.type(bias).dims) != n_cols || ctx.type(bias).dims.empty() ||
                            ctx.type(bias).dims.back() != n_cols))
    why = "Gemm's C is not a row of the output's width";
  bool relu = false;
  auto ops = unit_operands(ctx, *x, *w, bias, mm.outputs[0], nodes, why, relu);
  if (!ops) return false;
  std::map<std::string, Attribute> attrs = {{"operands", ops->position},
                                            {"trans_b", int64_t{trans_b}},
                                            {"activation", std::string(relu ? "relu" : "none")}};
  std::sort(nodes.begin(), nodes.end());
  return ctx.fuse(kPass, nodes, FusedKind::QuantizedMatMul, relu ? "qmatmul_relu" : "qmatmul", std::move(attrs), {},
                  ops->leading, {i});
}

bool same_constant(const FusionContext& ctx, int a, int b) {
  if (a == b) return true;
  const Tensor *x = ctx.constant(a), *y = ctx.constant(b);
  return x && y && x->dtype() == y->dtype() && x->numel() == 1 && y->numel() == 1 &&
         x->scalar_as_double(0) == y->scalar_as_double(0);
}

bool fuse_max_pool_at(FusionContext& ctx, int i) {
  const Node& pool = ctx.node(i);
  auto x = dequantized(ctx, pool.inputs[0]);
  if (!x || std::any_of(pool.outputs.begin() + 1, pool.outputs.end(), [](int v) { return v >= 0; })) return false;
  std::vector<int> nodes = {x->node, i};
  const int q = match::only_consumer(ctx, pool.outputs[0], Op::QuantizeLinear);
  std::optional<std::string> why = activation_problem(ctx, *x);
  if (!why && q < 0) why = "the result is not quantized by one QuantizeLinear";
  if (!why) {
    nodes.push_back(q);
    const Node& qn = ctx.node(q);
    const int scale = qn.inputs.size() > 1 ? qn.inputs[1] : -1, zp = qn.inputs.size() > 2 ? qn.inputs[2] : -1;
    const bool same_zero_point = (zp < 0 && x->zero_point < 0) || (zp >= 0 && x->zero_point >= 0 && same_constant(ctx, zp, x->zero_point));
    if (scale < 0 || !same_constant(ctx, scale, x->scale) || !same_zero_point || ctx.constant(x->scale)->scalar_as_double(0) <= 0 ||
        ctx.type(qn.outputs[0]).dtype != ctx.type(x->data).dtype)
      why = "the QuantizeLinear's scale, zero point or type is not the DequantizeLinear's";
  }
  if (why) {
    ctx.decline(kPass, nodes, *why);
    return false;
  }
  std::sort(nodes.begin(), nodes.end());
  return ctx.fuse(kPass, nodes, FusedKind::QuantizedMaxPool, "qmaxpool", pool.attrs, {}, {x->data}, {i});
}

}  // namespace

void fuse_quantized(FusionContext& ctx) {
  unique_dequantize_per_reader(ctx);
  for (int i = 0; i < static_cast<int>(ctx.graph().nodes.size()); ++i) {
    const Node& n = ctx.node(i);
    if (n.inputs.empty() || n.outputs.empty() || n.outputs[0] < 0) continue;
    const bool fused = (n.op == Op::Conv && n.inputs.size() >= 2 && fuse_conv_at(ctx, i)) ||
                       (n.op == Op::MaxPool && fuse_max_pool_at(ctx, i)) ||
                       (n.op == Op::MatMulInteger && n.inputs.size() >= 2 && fuse_matmul_integer_at(ctx, i)) ||
                       ((n.op == Op::MatMul || n.op == Op::Gemm) && n.inputs.size() >= 2 && fuse_qdq_matmul_at(ctx, i));
    if (fused) i = -1;  // indices moved: rescan (fused nodes are skipped)
  }
}

}  // namespace fusor::passes
