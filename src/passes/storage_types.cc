#include "passes/storage_types.h"

#include <algorithm>
#include <unordered_set>

namespace fusor {
namespace {

bool is_storage(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

bool mentions_storage_types(const Graph& g, std::span<const TensorType> input_types) {
  for (const TensorType& t : input_types)
    if (is_storage(t.dtype)) return true;
  for (const Value& v : g.values)
    if (is_storage(v.dtype) || (v.constant && is_storage(v.constant->dtype()))) return true;
  for (const Node& n : g.nodes)
    for (const auto& [name, a] : n.attrs) {
      if (const DType* t = std::get_if<DType>(&a); t && is_storage(*t)) return true;
      if (const Tensor* t = std::get_if<Tensor>(&a); t && is_storage(t->dtype())) return true;
    }
  return false;
}

// Builds the rewritten graph node by node, typing (and folding, like bind_graph) each node as it
// is added, so the next node's input types are known.
class Widener {
 public:
  Widener(const Graph& g, std::span<const TensorType> input_types, std::span<const Tensor> frozen,
          EvaluateFn evaluate)
      : out_(g), evaluate_(evaluate) {
    out_.nodes.clear();
    for (const Node& n : g.nodes) source_names_.insert(n.name);
    types_.resize(g.values.size());
    constants_.resize(g.values.size());
    for (size_t i = 0; i < g.values.size(); ++i)
      if (g.values[i].constant) {
        constants_[i] = *g.values[i].constant;
        types_[i] = {constants_[i].dtype(), constants_[i].dims()};
      }
    for (size_t i = 0; i < g.inputs.size() && i < input_types.size(); ++i) {
      auto id = static_cast<size_t>(g.inputs[i]);
      types_[id] = input_types[i];
      if (i < frozen.size() && frozen[i].defined()) constants_[id] = frozen[i];
    }
  }

  void add(Node n) {
    DType storage = DType::Undefined;
    for (int v : n.inputs)
      if (v >= 0 && is_storage(type(v).dtype)) {
        storage = type(v).dtype;
        break;
      }
    // Fused bodies come from the fusion passes, which run after this one; control-flow bodies
    // are bound on their own.
    const bool opaque = n.op == Op::Fused || !n.subgraphs.empty();
    if (storage == DType::Undefined || keeps_storage_types(n.op) || opaque) {
      auto types = infer(n);
      emit(std::move(n), types);
      return;
    }
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      int v = n.inputs[i];
      if (v >= 0 && is_storage(type(v).dtype)) n.inputs[i] = cast(v, DType::Float32, n.name + "/to_float32");
    }
    std::vector<TensorType> types = infer(n);
    // Results the node now makes in float32 go back to the storage type, unless the model
    // declares them float32; the others (indices, bools) are what they were.
    std::vector<std::pair<int, int>> narrow;  // (float32 result, the model's value)
    for (size_t o = 0; o < n.outputs.size() && o < types.size(); ++o) {
      int v = n.outputs[o];
      if (v < 0 || types[o].dtype != DType::Float32 || out_.values[static_cast<size_t>(v)].dtype == DType::Float32)
        continue;
      int wide = new_value(out_.values[static_cast<size_t>(v)].name + "_float32");
      n.outputs[o] = wide;
      narrow.emplace_back(wide, v);
    }
    const std::string name = n.name;
    emit(std::move(n), types);
    for (auto [wide, v] : narrow) cast(wide, storage, name + "/to_" + dtype_name(storage), v);
  }

  Graph take() { return std::move(out_); }

 private:
  const TensorType& type(int v) const { return types_[static_cast<size_t>(v)]; }
  bool is_constant(int v) const { return constants_[static_cast<size_t>(v)].defined(); }

  std::string unique_name(const std::string& base) const {
    std::string name = base;
    for (int i = 1; out_.find_value(name) >= 0; ++i) name = base + "_" + std::to_string(i);
    return name;
  }

  int new_value(const std::string& base) {
    Value v;
    v.name = unique_name(base);
    int id = out_.add_value(std::move(v));
    types_.resize(out_.values.size());
    constants_.resize(out_.values.size());
    return id;
  }

  // Adds Cast(from) -> `into` (a new value when -1); returns `into`.
  int cast(int from, DType to, const std::string& node_name, int into = -1) {
    if (into < 0) into = new_value(out_.values[static_cast<size_t>(from)].name + "_" + dtype_name(to));
    Node c;
    c.op = Op::Cast;
    c.op_type = "Cast";
    c.opset = static_cast<int>(std::max<int64_t>(out_.opset, 13));
    c.name = node_name;
    for (int i = 1; node_names_.count(c.name) || source_names_.count(c.name); ++i)
      c.name = node_name + "_" + std::to_string(i);
    c.attrs["to"] = to;
    c.inputs = {from};
    c.outputs = {into};
    auto types = infer(c);
    emit(std::move(c), types);
    return into;
  }

  std::vector<TensorType> infer(const Node& n) const {
    std::vector<TensorType> in_types;
    std::vector<const Tensor*> in_consts;
    for (int v : n.inputs) {
      in_types.push_back(v >= 0 ? type(v) : TensorType{});
      in_consts.push_back(v >= 0 && is_constant(v) ? &constants_[static_cast<size_t>(v)] : nullptr);
    }
    return op_info(n.op).infer(InferContext{n, in_types, in_consts, evaluate_});
  }

  void emit(Node n, const std::vector<TensorType>& types) {
    const int index = static_cast<int>(out_.nodes.size());
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      int v = n.outputs[o];
      if (v < 0) continue;
      if (o >= types.size()) throw Error(n.describe() + ": shape function returned too few outputs");
      types_[static_cast<size_t>(v)] = types[o];
      Value& val = out_.values[static_cast<size_t>(v)];
      val.producer = index;
      if (val.dtype == DType::Undefined) val.dtype = types[o].dtype;
    }
    bool foldable = n.op == Op::Shape ||
                    (!op_writes_inputs(n.op) &&
                     std::all_of(n.inputs.begin(), n.inputs.end(), [&](int v) { return v < 0 || is_constant(v); }));
    if (foldable) fold(n, types);
    node_names_.insert(n.name);
    out_.nodes.push_back(std::move(n));
  }

  void fold(const Node& n, const std::vector<TensorType>& types) {
    std::vector<Tensor> ins, outs;
    for (int v : n.inputs) {
      if (v < 0) ins.emplace_back();
      else if (is_constant(v)) ins.push_back(constants_[static_cast<size_t>(v)]);
      else ins.push_back(Tensor::view(type(v).dtype, type(v).dims, nullptr));  // Shape: type only
    }
    for (const TensorType& t : types) outs.emplace_back(t.dtype, t.dims);
    evaluate_(n, ins, outs);
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) constants_[static_cast<size_t>(n.outputs[o])] = outs[o];
  }

  Graph out_;
  std::unordered_set<std::string> source_names_, node_names_;  // the casts' names stay unique
  EvaluateFn evaluate_;
  std::vector<TensorType> types_;
  std::vector<Tensor> constants_;
};

}  // namespace

bool keeps_storage_types(Op op) {
  switch (op) {
    case Op::Cast: case Op::CastLike: case Op::Shape: case Op::Size: case Op::ConstantOfShape:
    case Op::Identity: case Op::Reshape: case Op::Flatten: case Op::Squeeze: case Op::Unsqueeze:
    case Op::Transpose: case Op::Concat: case Op::Split: case Op::Slice: case Op::Gather:
    case Op::QLinearMatMul:  // integer in and out; its float16 scales round as ONNX's reference does
      return true;
    default:
      return false;
  }
}

std::shared_ptr<const Graph> compute_storage_types_in_float32(std::shared_ptr<const Graph> graph,
                                                              std::span<const TensorType> input_types,
                                                              std::span<const Tensor> frozen, EvaluateFn evaluate) {
  if (!mentions_storage_types(*graph, input_types)) return graph;
  Widener w(*graph, input_types, frozen, evaluate);
  for (const Node& n : graph->nodes) w.add(n);
  return std::make_shared<const Graph>(w.take());
}

}  // namespace fusor
