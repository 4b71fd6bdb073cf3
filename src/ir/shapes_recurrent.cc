// Shape functions of the recurrent ops RNN, GRU and LSTM: they share inputs X, W, R, B,
// sequence_lens, initial_h (LSTM adds initial_c and P) and outputs Y, Y_h (LSTM adds Y_c).
#include "ir/op_functions.h"
#include "ir/recurrent_attrs.h"
#include "ir/shape_util.h"

namespace fusor {
namespace {

struct RecurrentOp {
  int64_t gates;                       // gate blocks stacked in W and R
  std::vector<const char*> functions;  // default activations of one direction
  bool has_cell;                       // LSTM: initial_c, P, Y_c
};

void expect_dims(const InferContext& ctx, size_t i, const char* name, const Dims& want) {
  if (ctx.inputs[i].dims != want)
    fail(ctx.node, std::string(name) + " must have shape " + dims_to_string(want) + ", got " +
                       dims_to_string(ctx.inputs[i].dims), ErrorKind::InvalidModel);
}

std::vector<TensorType> recurrent(const InferContext& ctx, const RecurrentOp& op) {
  const Node& node = ctx.node;
  for (size_t i = 0; i < 3; ++i)
    if (!ctx.has_input(i)) fail(node, "expects inputs X, W and R", ErrorKind::InvalidModel);
  RecurrentAttrs attrs = recurrent_attrs(node, op.functions);
  DType t = ctx.inputs[0].dtype;
  if (t != DType::Float32 && t != DType::Float64)
    fail(node, std::string("X must be float32 or float64, got ") + dtype_name(t));
  const Dims &x = ctx.inputs[0].dims, &w = ctx.inputs[1].dims, &r = ctx.inputs[2].dims;
  if (x.size() != 3 || w.size() != 3 || r.size() != 3)
    fail(node, "X, W and R must have rank 3, got " + dims_to_string(x) + ", " + dims_to_string(w) + ", " +
                   dims_to_string(r), ErrorKind::InvalidModel);
  const int64_t dirs = attrs.num_directions;
  const int64_t seq = attrs.layout == 0 ? x[0] : x[1], batch = attrs.layout == 0 ? x[1] : x[0];
  const int64_t hidden = attrs.hidden_size > 0 ? attrs.hidden_size : r[2];
  if (hidden < 1) fail(node, "hidden size must be positive", ErrorKind::InvalidModel);
  const size_t last = op.has_cell ? 8 : 6;
  for (size_t i = 1; i < last && i < ctx.inputs.size(); ++i)
    if (ctx.has_input(i) && i != 4 && ctx.inputs[i].dtype != t)
      fail(node, "input " + std::to_string(i) + " must have X's dtype " + dtype_name(t), ErrorKind::InvalidModel);
  expect_dims(ctx, 1, "W", {dirs, op.gates * hidden, x[2]});
  expect_dims(ctx, 2, "R", {dirs, op.gates * hidden, hidden});
  if (ctx.has_input(3)) expect_dims(ctx, 3, "B", {dirs, 2 * op.gates * hidden});
  if (ctx.has_input(4)) {
    DType st = ctx.inputs[4].dtype;
    if (st != DType::Int32 && st != DType::Int64)
      fail(node, std::string("sequence_lens must be int32, got ") + dtype_name(st), ErrorKind::InvalidModel);
    expect_dims(ctx, 4, "sequence_lens", {batch});
    if (const Tensor* lens = ctx.constant(4))
      for (int64_t v : lens->to_int64_vector())
        if (v < 0 || v > seq)
          fail(node, "sequence_lens value " + std::to_string(v) + " is outside [0, " + std::to_string(seq) + "]",
               ErrorKind::InvalidArgument);
  }
  const Dims state = attrs.layout == 0 ? Dims{dirs, batch, hidden} : Dims{batch, dirs, hidden};
  if (ctx.has_input(5)) expect_dims(ctx, 5, "initial_h", state);
  if (op.has_cell && ctx.has_input(6)) expect_dims(ctx, 6, "initial_c", state);
  if (op.has_cell && ctx.has_input(7)) expect_dims(ctx, 7, "P", {dirs, 3 * hidden});

  const Dims y = attrs.layout == 0 ? Dims{seq, dirs, batch, hidden} : Dims{batch, seq, dirs, hidden};
  std::vector<TensorType> out = {{t, y}, {t, state}};
  if (op.has_cell) out.push_back({t, state});
  if (node.outputs.size() > out.size())
    fail(node, "has " + std::to_string(node.outputs.size()) + " outputs, expects at most " + std::to_string(out.size()),
         ErrorKind::InvalidModel);
  out.resize(node.outputs.size());
  return out;
}

}  // namespace

std::vector<TensorType> shape::RNN(const InferContext& ctx) { return recurrent(ctx, {1, {"Tanh"}, false}); }

std::vector<TensorType> shape::GRU(const InferContext& ctx) {
  int64_t lbr = ctx.node.attr_int("linear_before_reset", 0);
  if (lbr != 0 && lbr != 1)
    fail(ctx.node, "linear_before_reset must be 0 or 1, got " + std::to_string(lbr), ErrorKind::InvalidModel);
  return recurrent(ctx, {3, {"Sigmoid", "Tanh"}, false});
}

std::vector<TensorType> shape::LSTM(const InferContext& ctx) {
  int64_t input_forget = ctx.node.attr_int("input_forget", 0);
  if (input_forget != 0 && input_forget != 1)
    fail(ctx.node, "input_forget must be 0 or 1, got " + std::to_string(input_forget), ErrorKind::InvalidModel);
  return recurrent(ctx, {4, {"Sigmoid", "Tanh", "Tanh"}, true});
}

}  // namespace fusor
