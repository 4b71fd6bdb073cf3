// QLinearMatMul and QLinearConv as the int8 kernel of MatMulInteger or ConvInteger on the same
// operands (oneDNN, exact int32 into scratch), then requantized with the reference's own
// multipliers and rounding (ref::requantize_multipliers, ref::store_requantized), so the result
// equals the reference exactly. oneDNN's output scales would round acc * scale in float32 and
// could differ at ties. Scales, the output zero point and QLinearConv's int32 bias must be
// plan-time constants; what the integer kernel declines (see int8_support.h) runs the reference.
#include <array>
#include <memory>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/ref/integer_ops.h"

namespace fusor::cpu {
namespace {

size_t aligned64(size_t n) { return (n + 63) / 64 * 64; }

class QLinearKernel final : public Kernel {
 public:
  struct Requantize {
    std::vector<double> multipliers;  // per channel (one for all)
    std::vector<double> bias;         // per channel, added to the int32 sums; empty when none
    double zero_point = 0;
    int64_t inner = 1;                // elements per channel step: (i / inner) % channels
    bool wrap = false;
  };
  QLinearKernel(std::unique_ptr<Node> integer_node, std::unique_ptr<Kernel> integer, Dims acc_dims,
                std::array<size_t, 3> operands, Requantize q)
      : integer_node_(std::move(integer_node)), integer_(std::move(integer)), acc_dims_(std::move(acc_dims)),
        operands_(operands), q_(std::move(q)) {
    acc_bytes_ = aligned64(static_cast<size_t>(numel_of(acc_dims_)) * sizeof(int32_t));
  }
  size_t scratch_bytes() const override { return acc_bytes_ + integer_->scratch_bytes(); }
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    Tensor acc[1] = {Tensor::view(DType::Int32, acc_dims_, scratch.data())};
    const Tensor integer_in[4] = {in[operands_[0]], in[operands_[1]], in[operands_[2]], Tensor()};
    integer_->run(integer_in, acc, scratch.subspan(acc_bytes_));
    const int32_t* a = acc[0].data<int32_t>();
    const auto channels = static_cast<int64_t>(q_.multipliers.size());
    for (int64_t i = 0; i < acc[0].numel(); ++i) {
      const auto c = static_cast<size_t>(channels == 1 ? 0 : (i / q_.inner) % channels);
      const double sum = static_cast<double>(a[i]) + (q_.bias.empty() ? 0.0 : q_.bias[c]);
      ref::store_requantized(out[0], i, sum, q_.multipliers[c], q_.zero_point, q_.wrap);
    }
  }
  std::string name() const override { return "qlinear_" + integer_->name(); }
  bool uses_openmp() const override { return integer_->uses_openmp(); }

 private:
  std::unique_ptr<Node> integer_node_;  // the node the integer kernel was built for
  std::unique_ptr<Kernel> integer_;
  Dims acc_dims_;
  std::array<size_t, 3> operands_;  // the inputs that are the integer op's x, w, x_zero_point
  Requantize q_;
  size_t acc_bytes_ = 0;
};

// QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
// QLinearConv:   x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
std::unique_ptr<Kernel> make_qlinear(const KernelRequest& r, Op integer_op) {
  const Node& n = r.node;
  if (used_outputs(r) != 1 || r.inputs.size() < 8) return nullptr;
  const DType y_type = r.outputs[0].dtype;
  if (y_type != DType::UInt8 && y_type != DType::Int8) return nullptr;
  const Tensor *a_scale = constant_input(r, 1), *b_scale = constant_input(r, 4), *y_scale = constant_input(r, 6);
  const Tensor* y_zp = has_input(r, 7) ? constant_input(r, 7) : nullptr;
  if (!a_scale || !b_scale || !y_scale || (has_input(r, 7) && !y_zp)) return nullptr;
  if (a_scale->numel() != 1 || y_scale->numel() != 1 || (y_zp && y_zp->numel() != 1)) return nullptr;
  const bool conv = integer_op == Op::ConvInteger;
  const Tensor* bias = conv && has_input(r, 8) ? constant_input(r, 8) : nullptr;
  if (conv && has_input(r, 8) && (!bias || bias->dtype() != DType::Int32)) return nullptr;

  const std::array<size_t, 4> from = {0, 3, 2, 5};  // x, w, x_zero_point, w_zero_point
  auto node = std::make_unique<Node>(n);
  node->op = integer_op;
  node->op_type = op_info(integer_op).name;
  node->inputs.clear();
  std::vector<TensorType> types;
  std::vector<const Tensor*> constants;
  for (size_t i : from) {
    node->inputs.push_back(n.inputs[i]);
    types.push_back(r.inputs[i]);
    constants.push_back(constant_input(r, i));
  }
  const Dims& y_dims = r.outputs[0].dims;
  const TensorType acc_type[1] = {{DType::Int32, y_dims}};
  std::unique_ptr<Kernel> integer =
      conv ? make_conv_integer_kernel(KernelRequest{*node, types, constants, acc_type})
           : make_matmul_integer_kernel(KernelRequest{*node, types, constants, acc_type});
  if (!integer) return nullptr;

  QLinearKernel::Requantize q;
  q.multipliers = ref::requantize_multipliers(*a_scale, *b_scale, *y_scale);
  const auto channels = static_cast<int64_t>(q.multipliers.size());
  if (conv) {
    q.inner = numel_of(y_dims) / (y_dims[0] * y_dims[1]);
    if (channels != 1 && channels != y_dims[1]) return nullptr;
    if (bias) {
      if (bias->numel() != y_dims[1]) return nullptr;
      q.bias.assign(bias->data<int32_t>(), bias->data<int32_t>() + bias->numel());
      if (channels == 1) q.multipliers.assign(q.bias.size(), q.multipliers[0]);
    }
  } else if (channels != 1 && channels != y_dims.back()) {
    return nullptr;
  }
  q.zero_point = y_zp ? y_zp->scalar_as_double(0) : 0.0;
  q.wrap = false;  // saturates, as the reference (ref/integer_matmul.cc)
  return std::make_unique<QLinearKernel>(std::move(node), std::move(integer), y_dims,
                                         std::array<size_t, 3>{0, 3, 2}, std::move(q));
}

}  // namespace

std::unique_ptr<Kernel> make_qlinear_matmul_kernel(const KernelRequest& r) {
  return r.node.op == Op::QLinearMatMul ? make_qlinear(r, Op::MatMulInteger) : nullptr;
}

std::unique_ptr<Kernel> make_qlinear_conv_kernel(const KernelRequest& r) {
  return r.node.op == Op::QLinearConv ? make_qlinear(r, Op::ConvInteger) : nullptr;
}

}  // namespace fusor::cpu
