// Shape functions of the spectral ops: DFT, STFT, the Hann/Hamming/Blackman windows and
// MelWeightMatrix. Lengths and axes that shape the output must be plan-time constants.
#include <variant>

#include "ir/op_functions.h"
#include "ir/shape_util.h"
#include "ir/spectral_params.h"

namespace fusor {
namespace {

constexpr int64_t kMaxGeneratedElements = int64_t{1} << 30;

bool is_float(DType t) { return t == DType::Float32 || t == DType::Float64; }

int64_t constant_scalar(const InferContext& ctx, size_t i, const char* what) {
  std::vector<int64_t> v = constant_ints(ctx, i, what);
  if (v.size() != 1) fail(ctx.node, std::string(what) + " must be a scalar", ErrorKind::InvalidModel);
  return v[0];
}

// The element type a generator op writes (`output_datatype`, float32 by default). The importer
// turns the ONNX code into a DType.
DType output_datatype(const InferContext& ctx) {
  auto it = ctx.node.attrs.find("output_datatype");
  if (it == ctx.node.attrs.end()) return DType::Float32;
  const DType* t = std::get_if<DType>(&it->second);
  if (!t) fail(ctx.node, "attribute 'output_datatype' must name an element type", ErrorKind::InvalidModel);
  if (*t == DType::Float16 || *t == DType::BFloat16 || *t == DType::Bool || *t == DType::Undefined)
    fail(ctx.node, std::string("unsupported output_datatype ") + dtype_name(*t));
  return *t;
}

void require_complex_last(const InferContext& ctx, const Dims& x, const char* what) {
  if (x.empty() || (x.back() != 1 && x.back() != 2))
    fail(ctx.node, std::string(what) + " must end in a dim of 1 (real) or 2 (complex), got " + dims_to_string(x),
         ErrorKind::InvalidModel);
}

std::vector<TensorType> window(const InferContext& ctx) {
  if (!ctx.has_input(0)) fail(ctx.node, "expects input size", ErrorKind::InvalidModel);
  int64_t size = constant_scalar(ctx, 0, "size");
  if (size < 0 || size > kMaxGeneratedElements)
    fail(ctx.node, "size " + std::to_string(size) + " is out of range", ErrorKind::InvalidArgument);
  int64_t periodic = ctx.node.attr_int("periodic", 1);
  if (periodic != 0 && periodic != 1)
    fail(ctx.node, "periodic must be 0 or 1, got " + std::to_string(periodic), ErrorKind::InvalidModel);
  return {{output_datatype(ctx), {size}}};
}

}  // namespace

std::vector<TensorType> shape::DFT(const InferContext& ctx) {
  const Node& node = ctx.node;
  if (!ctx.has_input(0)) fail(node, "expects input", ErrorKind::InvalidModel);
  if (!is_float(ctx.inputs[0].dtype))
    fail(node, std::string("input must be float32 or float64, got ") + dtype_name(ctx.inputs[0].dtype));
  Dims x = ctx.inputs[0].dims;
  require_complex_last(ctx, x, "input");
  if (x.size() < 2) fail(node, "input must have rank >= 2, got " + dims_to_string(x), ErrorKind::InvalidModel);
  const Tensor* axis_input = nullptr;
  if (node.opset >= 20 && ctx.has_input(2)) {
    constant_scalar(ctx, 2, "axis");
    axis_input = ctx.constant(2);
  }
  const auto axis = static_cast<size_t>(dft_axis(node, axis_input, static_cast<int64_t>(x.size())));
  int64_t length = ctx.has_input(1) ? constant_scalar(ctx, 1, "dft_length") : x[axis];
  if (length < 1 || length > kMaxGeneratedElements)
    fail(node, "dft_length " + std::to_string(length) + " is out of range", ErrorKind::InvalidArgument);
  for (const char* key : {"inverse", "onesided"}) {
    int64_t v = node.attr_int(key, 0);
    if (v != 0 && v != 1) fail(node, std::string(key) + " must be 0 or 1, got " + std::to_string(v), ErrorKind::InvalidModel);
  }
  x[axis] = node.attr_int("onesided", 0) ? length / 2 + 1 : length;
  x.back() = 2;
  return {{ctx.inputs[0].dtype, x}};
}

std::vector<TensorType> shape::STFT(const InferContext& ctx) {
  const Node& node = ctx.node;
  if (!ctx.has_input(0) || !ctx.has_input(1)) fail(node, "expects inputs signal and frame_step", ErrorKind::InvalidModel);
  DType t = ctx.inputs[0].dtype;
  if (!is_float(t)) fail(node, std::string("signal must be float32 or float64, got ") + dtype_name(t));
  const Dims& x = ctx.inputs[0].dims;
  if (x.size() != 3) fail(node, "signal must be [batch, length, 1 or 2], got " + dims_to_string(x), ErrorKind::InvalidModel);
  require_complex_last(ctx, x, "signal");
  int64_t step = constant_scalar(ctx, 1, "frame_step");
  if (step < 1) fail(node, "frame_step must be positive, got " + std::to_string(step), ErrorKind::InvalidArgument);
  int64_t length = -1;
  if (ctx.has_input(2)) {
    const TensorType& w = ctx.inputs[2];
    if (w.dims.size() != 1 || w.dtype != t)
      fail(node, "window must be a 1-D tensor of the signal's dtype, got " + dims_to_string(w.dims), ErrorKind::InvalidModel);
    length = w.dims[0];
  }
  if (ctx.has_input(3)) {
    int64_t given = constant_scalar(ctx, 3, "frame_length");
    if (length >= 0 && given != length)
      fail(node, "frame_length " + std::to_string(given) + " differs from the window's length " + std::to_string(length),
           ErrorKind::InvalidModel);
    length = given;
  }
  if (length < 0) length = x[1];
  if (length < 1 || length > x[1])
    fail(node, "frame length " + std::to_string(length) + " must be in [1, " + std::to_string(x[1]) + "]",
         ErrorKind::InvalidArgument);
  int64_t onesided = node.attr_int("onesided", 1);
  if (onesided != 0 && onesided != 1)
    fail(node, "onesided must be 0 or 1, got " + std::to_string(onesided), ErrorKind::InvalidModel);
  int64_t frames = 1 + (x[1] - length) / step;
  return {{t, {x[0], frames, onesided ? length / 2 + 1 : length, 2}}};
}

std::vector<TensorType> shape::HannWindow(const InferContext& ctx) { return window(ctx); }
std::vector<TensorType> shape::HammingWindow(const InferContext& ctx) { return window(ctx); }
std::vector<TensorType> shape::BlackmanWindow(const InferContext& ctx) { return window(ctx); }

std::vector<TensorType> shape::MelWeightMatrix(const InferContext& ctx) {
  for (size_t i = 0; i < 5; ++i)
    if (!ctx.has_input(i))
      fail(ctx.node, "expects inputs num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz",
           ErrorKind::InvalidModel);
  int64_t bins = constant_scalar(ctx, 0, "num_mel_bins"), length = constant_scalar(ctx, 1, "dft_length");
  int64_t rate = constant_scalar(ctx, 2, "sample_rate");
  if (bins < 1 || length < 1 || rate < 1 || bins > kMaxGeneratedElements || length > kMaxGeneratedElements ||
      (length / 2 + 1) * bins > kMaxGeneratedElements)
    fail(ctx.node, "num_mel_bins, dft_length and sample_rate must be positive (got " + std::to_string(bins) + ", " +
                       std::to_string(length) + ", " + std::to_string(rate) + ")", ErrorKind::InvalidArgument);
  for (size_t i = 3; i < 5; ++i)
    if (!is_float(ctx.inputs[i].dtype))
      fail(ctx.node, "lower_edge_hertz and upper_edge_hertz must be float32 or float64", ErrorKind::InvalidModel);
  return {{output_datatype(ctx), {length / 2 + 1, bins}}};
}

}  // namespace fusor
