// Scan: runs its body once per element of the scan inputs along their scan axes; the iteration
// count is a dimension, so shapes are always static. Opset 9+ puts the scan axes and directions
// in attributes; opset 8 has a batch axis 0, a sequence axis 1 and an optional sequence_lens
// input first (only full-length sequences are supported).
#include <algorithm>

#include "ir/control_flow_detail.h"
#include "ir/shape_util.h"

namespace fusor::control {
namespace {

struct ScanAxes {
  std::vector<int64_t> in_axes, in_reverse, out_axes, out_reverse;
};

std::vector<int64_t> flags(const Node& n, const char* name, size_t count) {
  auto v = n.attr_ints(name, std::vector<int64_t>(count, 0));
  if (v.size() != count)
    fail(n, std::string("attribute ") + name + " has " + std::to_string(v.size()) + " entries, expected " +
                std::to_string(count));
  return v;
}

bool all_unknown(std::span<const KnownValue> vs) {
  return std::none_of(vs.begin(), vs.end(), [](const KnownValue& v) { return v.value.defined(); });
}

// One scan over `states` and `scan_inputs` (any batch axis already taken off).
std::vector<KnownValue> scan_once(const Node& n, const Graph& body, std::vector<KnownValue> state,
                                  std::span<const KnownValue> scan_inputs, std::span<const KnownValue> captured,
                                  const ScanAxes& axes, EvaluateFn evaluate) {
  const size_t carried = state.size(), scans_in = scan_inputs.size();
  if (body.outputs.size() < carried)
    fail(n, "the body has " + std::to_string(body.outputs.size()) + " outputs, fewer than the " +
                std::to_string(carried) + " state variables");
  const size_t scans_out = body.outputs.size() - carried;
  std::vector<int64_t> in_axis(scans_in);
  int64_t length = -1;
  for (size_t j = 0; j < scans_in; ++j) {
    const Dims& d = scan_inputs[j].type.dims;
    if (d.empty()) fail(n, "scan input " + std::to_string(j) + " is a scalar: it has no axis to scan");
    in_axis[j] = normalize_axis(axes.in_axes[j], static_cast<int64_t>(d.size()), n);
    const int64_t len = d[static_cast<size_t>(in_axis[j])];
    if (length >= 0 && len != length)
      fail(n, "scan inputs have different lengths (" + std::to_string(length) + " and " + std::to_string(len) + ")");
    length = len;
    if (axes.in_reverse[j] != 0 && axes.in_reverse[j] != 1) fail(n, "scan directions must be 0 or 1");
  }
  std::vector<TensorType> out_types(scans_out);
  std::vector<std::vector<Tensor>> parts(scans_out);
  auto args_for = [&](int64_t t) {
    std::vector<KnownValue> args = state;
    for (size_t j = 0; j < scans_in; ++j) {
      if (t < length) {
        args.push_back(take_along(scan_inputs[j], in_axis[j], axes.in_reverse[j] ? length - 1 - t : t));
      } else {  // no element to take (length 0): its type only, to type the outputs
        Dims d = scan_inputs[j].type.dims;
        d.erase(d.begin() + in_axis[j]);
        args.push_back({{scan_inputs[j].type.dtype, d}, {}});
      }
    }
    args.insert(args.end(), captured.begin(), captured.end());
    return args;
  };
  const bool inputs_unknown = all_unknown(scan_inputs);
  for (int64_t t = 0; t < std::max<int64_t>(length, 1); ++t) {
    auto out = run_subgraph(n, body, "body", args_for(t), evaluate);
    const auto new_state = std::span<const KnownValue>(out).subspan(0, carried);
    const auto scan_out = std::span<const KnownValue>(out).subspan(carried);
    bool same_state_types = true;
    for (size_t k = 0; k < carried; ++k) {
      if (new_state[k].type.dtype != state[k].type.dtype || new_state[k].type.dims != state[k].type.dims)
        same_state_types = false;
      if (new_state[k].type.dtype != state[k].type.dtype)
        fail(n, "state " + std::to_string(k) + " changes from " + dtype_name(state[k].type.dtype) + " to " +
                    dtype_name(new_state[k].type.dtype));
    }
    for (size_t k = 0; k < scans_out; ++k) {
      if (t == 0) out_types[k] = scan_out[k].type;
      else if (out_types[k].dims != scan_out[k].type.dims)
        fail(n, "scan output " + std::to_string(k) + " changes shape between iterations");
      if (t < length) parts[k].push_back(scan_out[k].value);
    }
    if (length == 0) break;  // typed the outputs; the state stays as given
    const bool stationary = inputs_unknown && all_unknown(state) && all_unknown(new_state) && all_unknown(scan_out) &&
                            same_state_types;
    state.assign(new_state.begin(), new_state.end());
    if (stationary) break;  // every later iteration binds to the same types
  }
  std::vector<KnownValue> result = state;
  for (size_t k = 0; k < scans_out; ++k) {
    const int64_t axis = normalize_axis(axes.out_axes[k], static_cast<int64_t>(out_types[k].dims.size()) + 1, n);
    if (axes.out_reverse[k] != 0 && axes.out_reverse[k] != 1) fail(n, "scan output directions must be 0 or 1");
    result.push_back(stack_along(parts[k], out_types[k], length, axis, axes.out_reverse[k] != 0));
  }
  return result;
}

// Opset 8: batch axis 0 on every input and output; each batch entry is one scan over axis 0.
std::vector<KnownValue> eval_scan8(const Node& n, const Graph& body, std::span<const KnownValue> formal,
                                   std::span<const KnownValue> captured, size_t scans_in, EvaluateFn evaluate) {
  const size_t carried = formal.size() - 1 - scans_in;
  const auto states = formal.subspan(1, carried);
  const auto scan_inputs = formal.subspan(1 + carried);
  int64_t batch = -1, length = -1;
  for (size_t i = 1; i < formal.size(); ++i) {
    const KnownValue& v = formal[i];
    const size_t min_rank = i > carried ? 2 : 1;
    if (v.type.dims.size() < min_rank)
      fail(n, "opset 8 inputs need a batch axis (and scan inputs a sequence axis), got shape " +
                  dims_to_string(v.type.dims));
    if (batch >= 0 && v.type.dims[0] != batch) fail(n, "inputs have different batch sizes");
    batch = v.type.dims[0];
    if (min_rank == 2) length = v.type.dims[1];
  }
  if (batch <= 0) fail(n, "needs a batch of at least 1");
  if (formal[0].type.dtype != DType::Undefined) {
    if (!formal[0].value.defined())
      fail(n, "sequence_lens is only known at run time; fusor supports only full-length sequences");
    for (int64_t len : formal[0].value.to_int64_vector())
      if (len != length) fail(n, "sequence_lens entries shorter than the sequence are not supported");
  }
  ScanAxes axes{std::vector<int64_t>(scans_in, 0), flags(n, "directions", scans_in),
                std::vector<int64_t>(body.outputs.size() - carried, 0),
                std::vector<int64_t>(body.outputs.size() - carried, 0)};
  std::vector<std::vector<KnownValue>> per_batch;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<KnownValue> state, slices;
    for (const KnownValue& v : states) state.push_back(take_along(v, 0, b));
    for (const KnownValue& v : scan_inputs) slices.push_back(take_along(v, 0, b));
    per_batch.push_back(scan_once(n, body, std::move(state), slices, captured, axes, evaluate));
  }
  std::vector<KnownValue> result;
  for (size_t o = 0; o < per_batch[0].size(); ++o) {
    std::vector<Tensor> parts;
    for (const auto& outs : per_batch) parts.push_back(outs[o].value);
    result.push_back(stack_along(parts, per_batch[0][o].type, batch, 0, false));
  }
  return result;
}

}  // namespace

std::vector<KnownValue> eval_scan(const Node& n, std::span<const KnownValue> in, EvaluateFn evaluate) {
  const Graph& body = subgraph(n, "body");
  const size_t outer = outer_input_count(n);
  const size_t formal = in.size() - outer;
  const bool v8 = n.opset > 0 && n.opset < 9;  // opset 8 has sequence_lens first
  const int64_t scans_in = n.attr_int("num_scan_inputs", -1);
  if (v8 && formal < 1) fail(n, "needs the sequence_lens input (it may be empty)");
  if (scans_in < 1 || static_cast<size_t>(scans_in) > formal - (v8 ? 1 : 0))
    fail(n, "num_scan_inputs is " + std::to_string(scans_in) + ", expected 1 to the number of inputs");
  const size_t carried = formal - (v8 ? 1 : 0) - static_cast<size_t>(scans_in);
  if (body.inputs.size() != carried + static_cast<size_t>(scans_in) + outer)
    fail(n, "body has " + std::to_string(body.inputs.size() - std::min(body.inputs.size(), outer)) +
                " inputs, expected " + std::to_string(carried + static_cast<size_t>(scans_in)) +
                " (state variables and scan inputs)");
  if (body.outputs.size() < carried || n.outputs.size() != body.outputs.size())
    fail(n, "has " + std::to_string(n.outputs.size()) + " outputs and its body " +
                std::to_string(body.outputs.size()) + "; they must match, with the " + std::to_string(carried) +
                " states first");
  for (size_t i = v8 ? 1 : 0; i < formal; ++i)
    if (in[i].type.dtype == DType::Undefined) fail(n, "input " + std::to_string(i) + " is missing");
  const auto captured = in.subspan(formal);
  if (v8) return eval_scan8(n, body, in.subspan(0, formal), captured, static_cast<size_t>(scans_in), evaluate);
  const size_t scans_out = body.outputs.size() - carried;
  ScanAxes axes{flags(n, "scan_input_axes", static_cast<size_t>(scans_in)),
                flags(n, "scan_input_directions", static_cast<size_t>(scans_in)),
                flags(n, "scan_output_axes", scans_out), flags(n, "scan_output_directions", scans_out)};
  std::vector<KnownValue> state(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(carried));
  return scan_once(n, body, std::move(state), in.subspan(carried, static_cast<size_t>(scans_in)), captured, axes,
                   evaluate);
}

}  // namespace fusor::control
