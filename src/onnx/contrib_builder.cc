#include "onnx/contrib_builder.h"

#include "fusor/error.h"

namespace fusor::contrib {
namespace {
const std::string kNone;
}

std::string NodeBuilder::scope(const onnx::NodeProto& source) {
  const std::string& name = source.name().empty() ? source.op_type() : source.name();
  // Under the scope of the first output ("/encoder/layer.0/attention/self/Reshape_3_output_0"
  // -> "/encoder/layer.0/attention/self"), so fusion items get the plain export's layer names.
  std::string dir;
  if (source.output_size() > 0) {
    const std::string& o = source.output(0);
    if (auto slash = o.rfind('/'); slash != std::string::npos && slash > 0) dir = o.substr(0, slash) + "/";
  }
  return dir + name;
}

NodeBuilder::NodeBuilder(const onnx::NodeProto& source, int64_t opset, int repeat)
    : source_(source), opset_(opset), scope_(scope(source)) {
  if (repeat > 0) scope_ += "_" + std::to_string(repeat);
  where_ = "node '" + (source.name().empty() ? source.op_type() : source.name()) + "' (op " + source.op_type() +
           ", domain '" + (source.domain().empty() ? "ai.onnx" : source.domain()) + "')";
  // ORT's optimizer leaves its fused nodes unnamed: the output says which one.
  if (source.name().empty() && source.output_size() > 0) where_ += " writing '" + source.output(0) + "'";
}

const std::string& NodeBuilder::in(size_t i) const {
  return i < static_cast<size_t>(source_.input_size()) ? source_.input(static_cast<int>(i)) : kNone;
}

const std::string& NodeBuilder::out(size_t i) const {
  return i < static_cast<size_t>(source_.output_size()) ? source_.output(static_cast<int>(i)) : kNone;
}

const onnx::AttributeProto* NodeBuilder::find_attr(const char* name) const {
  for (const auto& a : source_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t NodeBuilder::attr_int(const char* name, int64_t fallback) const {
  const auto* a = find_attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INT) invalid(std::string("attribute '") + name + "' is not an int");
  return a->i();
}

float NodeBuilder::attr_float(const char* name, float fallback) const {
  const auto* a = find_attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::FLOAT) invalid(std::string("attribute '") + name + "' is not a float");
  return a->f();
}

std::vector<int64_t> NodeBuilder::attr_ints(const char* name) const {
  const auto* a = find_attr(name);
  if (!a) return {};
  if (a->type() != onnx::AttributeProto::INTS) invalid(std::string("attribute '") + name + "' is not a list of ints");
  return {a->ints().begin(), a->ints().end()};
}

std::string NodeBuilder::attr_string(const char* name, const std::string& fallback) const {
  const auto* a = find_attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::STRING) invalid(std::string("attribute '") + name + "' is not a string");
  return a->s();
}

std::vector<onnx::AttributeProto> NodeBuilder::attrs_named(std::initializer_list<const char*> names) const {
  std::vector<onnx::AttributeProto> out;
  for (const char* name : names)
    if (const auto* a = find_attr(name)) out.push_back(*a);
  return out;
}

void NodeBuilder::unsupported(const std::string& why) const {
  throw Error(where_ + ": " + why, ErrorKind::UnsupportedOp);
}

void NodeBuilder::invalid(const std::string& why) const { throw Error(where_ + ": " + why, ErrorKind::InvalidModel); }

void NodeBuilder::require_inputs(std::initializer_list<size_t> required) const {
  for (size_t i : required)
    if (!has_in(i)) invalid("input " + std::to_string(i) + " is required");
}

void NodeBuilder::expect_inputs(size_t min, size_t max) const {
  const size_t n = input_count();
  if (n < min || n > max)
    invalid("takes " + (min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max)) +
            " inputs, got " + std::to_string(n));
}

void NodeBuilder::forbid_inputs(size_t first, size_t last, const char* what) const {
  for (size_t i = first; i <= last; ++i)
    if (has_in(i)) unsupported("input " + std::to_string(i) + " (" + what + ") is not supported");
}

void NodeBuilder::forbid_outputs(size_t first, const char* what) const {
  for (size_t i = first; i < static_cast<size_t>(source_.output_size()); ++i)
    if (has_out(i)) unsupported("output " + std::to_string(i) + " (" + what + ") is not supported");
}

std::string NodeBuilder::fresh(const char* what) { return scope_ + "/" + what + "_" + std::to_string(counter_++); }

std::string NodeBuilder::add(const char* op, std::vector<std::string> inputs, std::vector<onnx::AttributeProto> attrs,
                             std::string out) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(fresh(op));
  if (out.empty()) out = n.name() + "_output";
  while (!inputs.empty() && inputs.back().empty()) inputs.pop_back();  // absent optional inputs
  for (auto& i : inputs) n.add_input(std::move(i));
  n.add_output(out);
  for (auto& a : attrs) *n.add_attribute() = std::move(a);
  nodes_.push_back(std::move(n));
  return out;
}

std::vector<std::string> NodeBuilder::add_outputs(const char* op, std::vector<std::string> inputs, size_t outputs) {
  std::vector<std::string> names{add(op, std::move(inputs))};
  auto& node = nodes_.back();
  for (size_t i = 1; i < outputs; ++i)
    names.push_back(*node.add_output() = node.name() + "_output_" + std::to_string(i));
  return names;
}

std::string NodeBuilder::constant(onnx::TensorProto t) {
  onnx::AttributeProto a;
  a.set_name("value");
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = std::move(t);
  return add("Constant", {}, {std::move(a)});
}

std::string NodeBuilder::scalar(float v) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_float_data(v);
  return constant(std::move(t));
}

std::string NodeBuilder::scalar_i64(int64_t v) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_int64_data(v);
  return constant(std::move(t));
}

std::string NodeBuilder::ints(const std::vector<int64_t>& v) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t.add_int64_data(x);
  return constant(std::move(t));
}

std::string NodeBuilder::reduce_mean(const std::string& x, const std::vector<int64_t>& axes, std::string out) {
  if (opset_ >= 18) return add("ReduceMean", {x, ints(axes)}, {attr("keepdims", int64_t{1})}, std::move(out));
  return add("ReduceMean", {x}, {attr("axes", axes), attr("keepdims", int64_t{1})}, std::move(out));
}

std::string NodeBuilder::unsqueeze(const std::string& x, const std::vector<int64_t>& axes) {
  return add("Unsqueeze", {x, ints(axes)});  // axes as an input since opset 13
}

std::string NodeBuilder::slice(const std::string& x, int64_t axis, int64_t begin, int64_t end) {
  return add("Slice", {x, ints({begin}), ints({end}), ints({axis})});
}

std::string NodeBuilder::dim(const std::string& x, int64_t axis) {
  return add("Gather", {add("Shape", {x}), ints({axis})}, {attr("axis", int64_t{0})});
}

std::string NodeBuilder::dim_scalar(const std::string& x, int64_t axis) {
  return add("Gather", {add("Shape", {x}), scalar_i64(axis)}, {attr("axis", int64_t{0})});
}

std::string NodeBuilder::arange(const std::string& limit) { return add("Range", {scalar_i64(0), limit, scalar_i64(1)}); }

std::string NodeBuilder::cast(const std::string& x, int to) { return add("Cast", {x}, {attr("to", int64_t{to})}); }

onnx::AttributeProto NodeBuilder::attr(const char* name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

onnx::AttributeProto NodeBuilder::attr(const char* name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

onnx::AttributeProto NodeBuilder::attr(const char* name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

std::vector<int64_t> trailing_axes(NodeBuilder& b, int64_t axis, std::optional<size_t> rank) {
  const auto r = static_cast<int64_t>(rank.value_or(0));
  if (axis >= 0) {
    if (!rank) b.unsupported("a non-negative axis needs the input's rank, which is not known at import");
    if (axis >= r) b.invalid("axis " + std::to_string(axis) + " is out of range");
    axis -= r;
  } else if (rank && axis < -r) {
    b.invalid("axis " + std::to_string(axis) + " is out of range");
  }
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < 0; ++a) axes.push_back(a);
  return axes;
}

std::string rms_norm(NodeBuilder& b, const std::string& x, const std::string& scale, float eps,
                     const std::vector<int64_t>& axes, const std::string& out, const std::string& inv_std_out) {
  auto ms = b.reduce_mean(b.add("Pow", {x, b.scalar(2.0f)}), axes);
  auto rms = b.add("Sqrt", {b.add("Add", {ms, b.scalar(eps)})});
  if (!inv_std_out.empty()) b.add("Reciprocal", {rms}, {}, inv_std_out);
  auto normed = b.add("Div", {x, rms}, {}, scale.empty() ? out : "");
  return scale.empty() ? normed : b.add("Mul", {normed, scale}, {}, out);
}

}  // namespace fusor::contrib
