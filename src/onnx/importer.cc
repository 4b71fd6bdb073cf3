#include "onnx/importer.h"

#include <sys/wait.h>
#include <unistd.h>

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/control_flow.h"
#include "onnx/contrib_ops.h"
#include "onnx/dtype_codes.h"
#include "onnx/exporter.h"
#include "onnx/legacy_broadcast.h"
#include "onnx/op_support.h"
#include "onnx/tensor_proto.h"

namespace fusor {
namespace {

constexpr int64_t kMinOpset = 1;
constexpr int64_t kMaxOpset = 25;

std::optional<Shape> shape_from_type(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  Shape shape;
  for (const auto& d : type.tensor_type().shape().dim()) {
    Dim dim;
    if (d.has_dim_value()) dim.value = d.dim_value();
    else if (d.has_dim_param()) dim.symbol = d.dim_param();
    shape.push_back(dim);
  }
  return shape;
}

Attribute convert_attribute(const onnx::AttributeProto& a, const std::string& where,
                            const std::string& base_dir) {
  using A = onnx::AttributeProto;
  if (!a.ref_attr_name().empty())
    throw Error(where + ": attribute '" + a.name() + "' refers to a function attribute (not supported)",
                ErrorKind::UnsupportedOp);
  switch (a.type()) {
    case A::INT: return static_cast<int64_t>(a.i());
    case A::FLOAT: return a.f();
    case A::STRING: return a.s();
    case A::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case A::FLOATS: return std::vector<float>(a.floats().begin(), a.floats().end());
    case A::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case A::TENSOR: return tensor_from_proto(a.t(), base_dir);
    default:
      throw Error(where + ": attribute '" + a.name() + "' has a kind fusor does not support (" +
                      A::AttributeType_Name(a.type()) + ")",
                  ErrorKind::UnsupportedOp);
  }
}

// ONNX attributes that name an element type, by op. The IR holds them as DType, so nothing after
// import reads ONNX's type codes.
constexpr std::pair<const char*, const char*> kDTypeAttributes[] = {
    {"Cast", "to"}, {"EyeLike", "dtype"},
    {"HannWindow", "output_datatype"}, {"HammingWindow", "output_datatype"},
    {"BlackmanWindow", "output_datatype"}, {"MelWeightMatrix", "output_datatype"},
    {"QuantizeLinear", "output_dtype"}};

void dtype_attributes_to_dtype(Node& n, const std::string& where) {
  for (const auto& [op, name] : kDTypeAttributes) {
    auto it = n.op_type == op ? n.attrs.find(name) : n.attrs.end();
    const int64_t* code = it == n.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
    if (!code) continue;  // absent or of another kind: the op's shape function says so
    DType t = dtype_from_onnx(static_cast<int>(*code));
    if (t == DType::Undefined)
      throw Error(where + ": unsupported dtype " + onnx_type_name(static_cast<int>(*code)) + " for attribute '" +
                      name + "'",
                  ErrorKind::UnsupportedOp);
    it->second = t;
  }
}

// Constant nodes become constant values directly (they are data, not work).
Tensor constant_node_value(const Node& n) {
  if (const Tensor* t = n.attr_tensor("value")) return *t;
  auto scalar = [](auto v, DType t) {
    Tensor out(t, {});
    *out.data<decltype(v)>() = v;
    return out;
  };
  if (n.has_attr("value_float")) return scalar(n.attr_float("value_float", 0), DType::Float32);
  if (n.has_attr("value_int")) return scalar(n.attr_int("value_int", 0), DType::Int64);
  if (n.has_attr("value_floats")) {
    auto v = n.attr_floats("value_floats");
    Tensor out(DType::Float32, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), out.data<float>());
    return out;
  }
  if (n.has_attr("value_ints")) {
    auto v = n.attr_ints("value_ints");
    Tensor out(DType::Int64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), out.data<int64_t>());
    return out;
  }
  throw Error(n.describe() + ": Constant node has no supported value attribute", ErrorKind::UnsupportedOp);
}

// The opsets that apply inside one graph or function body, by domain ("" for ONNX's).
using Opsets = std::map<std::string, int64_t>;
using NodeList = google::protobuf::RepeatedPtrField<onnx::NodeProto>;
using ValueInfos = std::unordered_map<std::string, const onnx::ValueInfoProto*>;

// Bodies of fused nodes nest (a fused node inside a body); this bounds the depth.
constexpr size_t kMaxBodyNesting = 16;
// Nested bodies can share functions, so a small file could expand to a huge graph: bound it.
constexpr size_t kMaxExpandedNodes = 1'000'000;

int64_t default_opset(const Opsets& opsets, const char* what) {
  auto it = opsets.find("");
  if (it == opsets.end()) throw Error(std::string(what) + " does not import the default ONNX domain");
  int64_t v = it->second;
  if (v < kMinOpset || v > kMaxOpset)
    throw Error("ONNX opset " + std::to_string(v) + " is not supported (supported: " +
                    std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + ")",
                ErrorKind::UnsupportedOp);
  return v;
}

template <class OpsetList>
Opsets read_opsets(const OpsetList& list) {
  Opsets out;
  for (const auto& o : list) out[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  return out;
}

// The shape the model declares for value `id` (-1 for a dim of unknown size), else the one a
// Cast (ORT's optimizer casts masks and ids to int32), Transpose, Reshape to a constant shape,
// MatMul by a 2-D weight or a broadcasting Add, Sub, Mul or Div gives from its inputs': an export without value_info declares none, and the expansions need
// ranks and head counts.
// `recorded` gives the shapes earlier expansions recorded for their outputs.
std::optional<std::vector<int64_t>> known_shape(const Graph& g, int id, const ShapeLookup& recorded, int depth = 0) {
  constexpr int kMaxDepth = 16;
  if (id < 0 || depth > kMaxDepth) return std::nullopt;
  const Value& v = g.values[static_cast<size_t>(id)];
  if (v.shape) {
    std::vector<int64_t> dims;
    for (const Dim& d : *v.shape) dims.push_back(d.value);
    return dims;
  }
  if (auto dims = recorded(v.name)) return dims;
  if (v.producer < 0) return std::nullopt;
  const Node& n = g.nodes[static_cast<size_t>(v.producer)];
  if (n.op == Op::Cast) return known_shape(g, n.inputs[0], recorded, depth + 1);
  if (n.op == Op::Transpose && n.has_attr("perm")) {
    const std::vector<int64_t> perm = n.attr_ints("perm");
    auto in = known_shape(g, n.inputs[0], recorded, depth + 1);
    std::vector<int64_t> dims(perm.size(), -1);
    if (in && in->size() == perm.size())
      for (size_t i = 0; i < perm.size(); ++i)
        if (perm[i] >= 0 && perm[i] < static_cast<int64_t>(in->size())) dims[i] = (*in)[static_cast<size_t>(perm[i])];
    return dims;
  }
  if ((n.op == Op::Add || n.op == Op::Sub || n.op == Op::Mul || n.op == Op::Div) && n.inputs.size() == 2) {
    auto a = known_shape(g, n.inputs[0], recorded, depth + 1), b = known_shape(g, n.inputs[1], recorded, depth + 1);
    if (!a || !b) return std::nullopt;
    if (a->size() < b->size()) std::swap(a, b);
    const size_t lead = a->size() - b->size();
    for (size_t i = 0; i < b->size(); ++i) {  // broadcast: a dim of 1 takes the other's
      int64_t& d = (*a)[lead + i];
      const int64_t e = (*b)[i];
      if (d == 1 || (d < 0 && e > 1)) d = e;
    }
    return a;
  }
  if (n.op == Op::MatMul && n.inputs.size() == 2) {  // a projection: [..., K] x [K, N] -> [..., N]
    auto a = known_shape(g, n.inputs[0], recorded, depth + 1), w = known_shape(g, n.inputs[1], recorded, depth + 1);
    if (!a || !w || a->size() < 2 || w->size() != 2) return std::nullopt;
    a->back() = w->back();
    return a;
  }
  if (n.op == Op::Reshape && n.inputs.size() >= 2 && n.inputs[1] >= 0) {
    const auto& target = g.values[static_cast<size_t>(n.inputs[1])].constant;
    if (!target || target->dtype() != DType::Int64 || target->dims().size() != 1) return std::nullopt;
    auto in = known_shape(g, n.inputs[0], recorded, depth + 1);
    std::vector<int64_t> dims(target->data<int64_t>(), target->data<int64_t>() + target->numel());
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i] == 0 && !n.attr_int("allowzero", 0)) dims[i] = in && i < in->size() ? (*in)[i] : -1;
      else if (dims[i] < 0) dims[i] = -1;
    return dims;
  }
  return std::nullopt;
}

class Importer {
 public:
  Importer(onnx::ModelProto& model, std::string base_dir)
      : model_(model), base_dir_(std::move(base_dir)) {}

  Graph run() {
    if (model_.opset_import_size() == 0) throw Error("model declares no opset_import");
    opsets_ = read_opsets(model_.opset_import());
    // A model of ai.onnx.ml nodes alone may import no default domain: give it the newest.
    opsets_.emplace("", kMaxOpset);
    opset_ = default_opset(opsets_, "model");
    // Every unsupported op at once: a user fixing a model should not discover them one by one.
    if (std::string missing = unsupported_summary(op_uses(model_)); !missing.empty())
      throw Error(missing, ErrorKind::UnsupportedOp);
    for (const auto& f : model_.functions())
      if (f.domain() == kFusorDomain && !functions_.emplace(f.name(), &f).second)
        throw Error("model-local function '" + f.name() + "' is defined twice");
    const auto& g = model_.graph();
    Graph graph;
    graph.name = g.name();
    graph.opset = opset_;
    graph.source_node_count = static_cast<size_t>(g.node_size());
    for (const auto& m : model_.metadata_props()) graph.metadata.emplace_back(m.key(), m.value());
    for (auto& init : *model_.mutable_graph()->mutable_initializer()) {
      Value v;
      v.name = init.name();
      v.constant = tensor_from_proto(init, base_dir_);
      std::string().swap(*init.mutable_raw_data());  // the bytes live in the tensor now: free them
      v.dtype = v.constant->dtype();
      Shape s;
      for (int64_t d : v.constant->dims()) s.push_back(Dim{d, ""});
      v.shape = s;
      graph.add_value(std::move(v));
    }
    for (const auto& in : g.input()) {
      if (graph.find_value(in.name()) >= 0) continue;  // IR < 4: initializers listed as inputs
      graph.inputs.push_back(graph.add_value(value_from_info(in, "graph input")));
    }
    ValueInfos value_info;
    for (const auto& vi : g.value_info()) value_info[vi.name()] = &vi;
    for (const auto& vi : g.output()) value_info[vi.name()] = &vi;
    scopes_.push_back({&graph, {}, true});
    for (const auto* np : sorted_nodes(g.node())) add_node(graph, *np, opsets_, &value_info);
    scopes_.pop_back();
    for (const auto& out : g.output()) {
      int id = graph.find_value(out.name());
      if (id < 0) throw Error("graph output '" + out.name() + "' is not produced by any node");
      graph.outputs.push_back(id);
    }
    if (graph.outputs.empty()) throw Error("model has no graph outputs");
    return graph;
  }

 private:
  Value value_from_info(const onnx::ValueInfoProto& vi, const char* what) {
    Value v;
    v.name = vi.name();
    if (v.name.empty()) throw Error(std::string(what) + " has an empty name");
    if (!vi.type().has_tensor_type())
      throw Error(std::string(what) + " '" + v.name + "' is not a tensor (sequences and maps are not supported)",
                  ErrorKind::UnsupportedOp);
    int et = vi.type().tensor_type().elem_type();
    v.dtype = dtype_from_onnx(et);
    if (v.dtype == DType::Undefined)
      throw Error(std::string(what) + " '" + v.name + "' has unsupported dtype " + onnx_type_name(et),
                  ErrorKind::UnsupportedOp);
    v.shape = shape_from_type(vi.type());
    return v;
  }

  // ONNX requires topological order, but some exporters break it: sort defensively (Kahn).
  // A node depends on its inputs and on every name its subgraphs read (outer-scope values).
  static void add_subgraph_reads(const onnx::NodeProto& node, std::vector<std::string>& names, size_t depth = 0) {
    if (depth > kMaxBodyNesting) return;  // the import refuses deeper nesting with its own error
    for (const auto& a : node.attribute())
      if (a.type() == onnx::AttributeProto::GRAPH)
        for (const auto& inner : a.g().node()) {
          names.insert(names.end(), inner.input().begin(), inner.input().end());
          add_subgraph_reads(inner, names, depth + 1);
        }
  }

  static std::vector<const onnx::NodeProto*> sorted_nodes(const NodeList& nodes) {
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < nodes.size(); ++i)
      for (const auto& o : nodes.Get(i).output())
        if (!o.empty()) producer[o] = i;
    std::vector<std::vector<std::string>> deps(static_cast<size_t>(nodes.size()));
    for (int i = 0; i < nodes.size(); ++i) {
      const auto& node = nodes.Get(i);
      std::vector<std::string> reads;
      add_subgraph_reads(node, reads);
      std::erase_if(reads, [&](const std::string& name) {  // the node's own outputs, by a name clash
        auto it = producer.find(name);
        return it != producer.end() && it->second == i;
      });
      deps[i].assign(node.input().begin(), node.input().end());
      deps[i].insert(deps[i].end(), reads.begin(), reads.end());
    }
    std::vector<int> state(static_cast<size_t>(nodes.size()), 0);
    std::vector<const onnx::NodeProto*> order;
    std::vector<std::pair<int, int>> stack;
    for (int root = 0; root < nodes.size(); ++root) {
      if (state[root]) continue;
      stack.push_back({root, 0});
      state[root] = 1;
      while (!stack.empty()) {
        auto& [n, next] = stack.back();
        const auto& node = nodes.Get(n);
        if (next < static_cast<int>(deps[n].size())) {
          auto it = producer.find(deps[n][static_cast<size_t>(next++)]);
          if (it == producer.end()) continue;
          int p = it->second;
          if (state[p] == 1) throw Error("graph has a cycle through node '" + nodes.Get(p).name() + "'");
          if (state[p] == 0) {
            state[p] = 1;
            stack.push_back({p, 0});
          }
        } else {
          state[n] = 2;
          order.push_back(&node);
          stack.pop_back();
        }
      }
    }
    return order;
  }

  // `value_info` types the node's outputs where it names them (none inside function bodies).
  void add_node(Graph& graph, const onnx::NodeProto& np, const Opsets& opsets, const ValueInfos* value_info) {
    if (is_expanded_contrib_op(np.domain() == "ai.onnx" ? "" : np.domain(), np.op_type()))
      return add_contrib_node(graph, np, opsets, value_info);
    Node n;
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.name = np.name().empty() ? n.op_type + "_" + std::to_string(graph.nodes.size()) : np.name();
    auto dom = opsets.find(n.domain);
    n.opset = dom == opsets.end() ? 0 : static_cast<int>(dom->second);
    std::string where = "node '" + n.name + "' (op " + n.op_type + ", domain '" +
                        (n.domain.empty() ? "ai.onnx" : n.domain) + "', opset " +
                        std::to_string(n.opset) + ")";
    auto op = op_for_node(n.domain, n.op_type);
    if (n.domain == kFusorDomain && !op) op = Op::Fused;  // a call of a model-local function
    const bool is_constant = n.domain.empty() && n.op_type == "Constant";
    if (!op && !is_constant) throw Error(where + ": unsupported operator", ErrorKind::UnsupportedOp);
    Subgraphs subgraphs;
    for (const auto& a : np.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH) {
        if (op != Op::If && op != Op::Loop && op != Op::Scan)
          throw Error(where + ": attribute '" + a.name() + "' is a graph; only If, Loop and Scan take graphs",
                      ErrorKind::UnsupportedOp);
        subgraphs.push_back({a.name(), {}, {}});
        subgraphs.back().graph = import_subgraph(a.g(), opsets, where + ", attribute '" + a.name() + "'",
                                                 subgraphs.back().captured);
        continue;
      }
      if (a.name() == kOuterInputsAttr) throw Error(where + ": attribute '" + a.name() + "' is fusor's own");
      n.attrs[a.name()] = convert_attribute(a, where, base_dir_);
    }
    if (n.domain.empty()) dtype_attributes_to_dtype(n, where);
    for (const auto& name : np.input()) {
      if (name.empty()) { n.inputs.push_back(-1); continue; }
      int id = graph.find_value(name);
      if (id < 0) id = capture(graph, name);
      if (id < 0) throw Error(where + ": input '" + name + "' is not defined");
      n.inputs.push_back(id);
    }
    if (!subgraphs.empty()) link_outer_scope(graph, n, subgraphs, where);
    if (is_constant) {
      if (np.output_size() != 1) throw Error(where + ": Constant must have one output");
      Value v;
      v.name = np.output(0);
      v.constant = constant_node_value(n);
      v.dtype = v.constant->dtype();
      Shape s;
      for (int64_t d : v.constant->dims()) s.push_back(Dim{d, ""});
      v.shape = s;
      graph.add_value(std::move(v));
      return;
    }
    n.op = *op;
    if (n.op == Op::Fused) make_fused(n, np, where);
    align_legacy_broadcast(graph, n, where);
    int node_index = static_cast<int>(graph.nodes.size());
    for (const auto& name : np.output()) {
      if (name.empty()) { n.outputs.push_back(-1); continue; }
      Value v;
      v.name = name;
      v.producer = node_index;
      const onnx::ValueInfoProto* vi = nullptr;
      if (value_info)
        if (auto it = value_info->find(name); it != value_info->end()) vi = it->second;
      if (vi) {
        v.dtype = dtype_from_onnx(vi->type().tensor_type().elem_type());
        v.shape = shape_from_type(vi->type());
      }
      n.outputs.push_back(graph.add_value(std::move(v)));
    }
    graph.nodes.push_back(std::move(n));
  }

  // An ONNX Runtime contrib node becomes the ONNX nodes that compute it (onnx/contrib_ops.h), read
  // at the default opset or at 13 (the forms the expansions write), whichever is later.
  void add_contrib_node(Graph& graph, const onnx::NodeProto& np, const Opsets& opsets, const ValueInfos* value_info) {
    Opsets expanded = opsets;
    expanded[""] = std::max<int64_t>(expanded[""], 13);
    const ShapeLookup recorded = [this](const std::string& name) { return contrib_.recorded_shape(name); };
    auto shape_of = [&](const std::string& name) {
      const int id = graph.find_value(name);  // an output of this node is not in the graph yet
      return id < 0 ? recorded(name) : known_shape(graph, id, recorded);
    };
    auto constant_of = [&graph](const std::string& name) -> const Tensor* {
      int id = graph.find_value(name);
      if (id < 0 || !graph.values[static_cast<size_t>(id)].constant) return nullptr;
      return &*graph.values[static_cast<size_t>(id)].constant;
    };
    auto type_of = [&graph](const std::string& name) {
      int id = graph.find_value(name);
      return id < 0 ? DType::Undefined : graph.values[static_cast<size_t>(id)].dtype;
    };
    for (const auto& node : contrib_.expand(np, expanded[""], shape_of, type_of, constant_of))
      add_node(graph, node, expanded, value_info);
  }

  // A call of a model-local function in domain "fusor" is a fused node: the function is its
  // body, attribute fusor_kind its op_type (see onnx/exporter.h).
  void make_fused(Node& n, const onnx::NodeProto& np, const std::string& where) {
    n.opset = 1;
    n.body = function_body(np.op_type(), where);
    if (static_cast<size_t>(np.input_size()) != n.body->inputs.size() ||
        static_cast<size_t>(np.output_size()) != n.body->outputs.size())
      throw Error(where + ": the node has " + std::to_string(np.input_size()) + " inputs and " +
                  std::to_string(np.output_size()) + " outputs, its function " +
                  std::to_string(n.body->inputs.size()) + " and " + std::to_string(n.body->outputs.size()));
    auto unnamed = [](const std::string& name) { return name.empty(); };
    if (std::any_of(np.input().begin(), np.input().end(), unnamed) ||
        std::any_of(np.output().begin(), np.output().end(), unnamed))
      throw Error(where + ": a fused node's inputs and outputs must all be named");
    // Bodies run once per call, nested ones once per call of the caller: bound the total.
    if (importing_.empty() && (expanded_nodes_ += body_size_.at(n.body.get())) > kMaxExpandedNodes)
      throw Error(where + ": fused bodies expand to over " + std::to_string(kMaxExpandedNodes) + " nodes");
    if (auto it = n.attrs.find(kFusedKindAttr); it != n.attrs.end()) {
      const auto* kind = std::get_if<std::string>(&it->second);
      if (!kind || kind->empty()) throw Error(where + ": attribute '" + kFusedKindAttr + "' must be a non-empty string");
      n.op_type = *kind;
      n.attrs.erase(it);
    }
  }

  std::shared_ptr<const Graph> function_body(const std::string& name, const std::string& where) {
    if (auto it = bodies_.find(name); it != bodies_.end()) return it->second;
    auto f = functions_.find(name);
    if (f == functions_.end())
      throw Error(where + ": no model-local function '" + name + "' in domain 'fusor' (a fused node needs its body)");
    if (std::find(importing_.begin(), importing_.end(), name) != importing_.end())
      throw Error(where + ": function '" + name + "' calls itself");
    if (importing_.size() >= kMaxBodyNesting)
      throw Error(where + ": fused bodies nest deeper than " + std::to_string(kMaxBodyNesting) + " levels");
    importing_.push_back(name);
    const onnx::FunctionProto& fp = *f->second;
    Opsets opsets = read_opsets(fp.opset_import());
    if (!opsets.count("")) opsets[""] = opset_;
    auto body = std::make_shared<Graph>();
    body->name = name;
    body->opset = default_opset(opsets, "function");
    const std::string context = "function '" + name + "'";
    for (const auto& in : fp.input()) {
      if (in.empty()) throw Error(context + " has an input without a name");
      if (body->find_value(in) >= 0) throw Error(context + ": input '" + in + "' is listed twice");
      Value v;
      v.name = in;
      body->inputs.push_back(body->add_value(std::move(v)));
    }
    try {
      scopes_.push_back({body.get(), {}, true});  // a function body reads no outer names
      for (const auto* np : sorted_nodes(fp.node())) add_node(*body, *np, opsets, nullptr);
      scopes_.pop_back();
    } catch (const Error& e) {
      throw Error(context + ": " + e.what(), e.kind());  // a node name alone would not say where it is
    }
    for (const auto& out : fp.output()) {
      int id = body->find_value(out);
      if (id < 0) throw Error(context + ": output '" + out + "' is not produced by any node");
      body->outputs.push_back(id);
    }
    if (body->outputs.empty()) throw Error(context + " has no outputs");
    importing_.pop_back();
    size_t size = 0;
    for (const Node& inner : body->nodes)  // saturates, so deep sharing cannot overflow it
      size = std::min(size + 1 + (inner.body ? body_size_[inner.body.get()] : 0), kMaxExpandedNodes + 1);
    body_size_[body.get()] = size;
    bodies_[name] = body;
    return body;
  }

  // A graph attribute of a node, imported, with the outer names it reads.
  struct Subgraph {
    std::string attribute;
    std::shared_ptr<Graph> graph;
    std::vector<std::string> captured;
  };
  using Subgraphs = std::vector<Subgraph>;

  // Resolves `name`, which `graph` does not define, against the scopes enclosing it: returns a
  // new value of `graph` standing for the outer one (recorded as captured), or -1 when no
  // enclosing scope defines it (or `graph` is not a subgraph being imported).
  int capture(Graph& graph, const std::string& name) {
    if (scopes_.empty() || scopes_.back().graph != &graph || scopes_.back().isolated) return -1;
    for (size_t s = scopes_.size() - 1; s-- > 0;) {
      const Graph& outer = *scopes_[s].graph;
      if (int id = outer.find_value(name); id >= 0) {
        Value v;
        v.name = name;
        v.dtype = outer.values[static_cast<size_t>(id)].dtype;
        v.shape = outer.values[static_cast<size_t>(id)].shape;
        scopes_.back().captured.push_back(name);
        return graph.add_value(std::move(v));
      }
      if (scopes_[s].isolated) break;
    }
    return -1;
  }

  // Subgraph inputs and outputs may be untyped: binding infers their types from the node.
  static Value subgraph_value(const onnx::ValueInfoProto& vi, const std::string& context) {
    Value v;
    v.name = vi.name();
    if (v.name.empty()) throw Error(context + ": an input has an empty name");
    if (!vi.has_type()) return v;
    if (!vi.type().has_tensor_type())
      throw Error(context + ": input '" + v.name + "' is not a tensor (sequences and maps are not supported)",
                  ErrorKind::UnsupportedOp);
    if (int et = vi.type().tensor_type().elem_type(); et != 0) {
      v.dtype = dtype_from_onnx(et);
      if (v.dtype == DType::Undefined)
        throw Error(context + ": input '" + v.name + "' has unsupported dtype " + onnx_type_name(et),
                    ErrorKind::UnsupportedOp);
    }
    v.shape = shape_from_type(vi.type());
    return v;
  }

  // A graph attribute (If's branches, Loop's and Scan's body) as a Graph; `captured` receives the
  // names it reads from enclosing scopes, in first-use order.
  std::shared_ptr<Graph> import_subgraph(const onnx::GraphProto& gp, const Opsets& opsets, const std::string& context,
                                         std::vector<std::string>& captured) {
    if (scopes_.size() > kMaxBodyNesting)
      throw Error(context + ": subgraphs nest deeper than " + std::to_string(kMaxBodyNesting) + " levels");
    auto sub = std::make_shared<Graph>();
    sub->name = gp.name();
    sub->opset = default_opset(opsets, "subgraph");
    sub->source_node_count = static_cast<size_t>(gp.node_size());
    const size_t depth = scopes_.size();
    try {
      for (const auto& init : gp.initializer()) {
        Value v;
        v.name = init.name();
        if (sub->find_value(v.name) >= 0) throw Error("initializer '" + v.name + "' is defined twice");
        v.constant = tensor_from_proto(init, base_dir_);
        v.dtype = v.constant->dtype();
        Shape s;
        for (int64_t d : v.constant->dims()) s.push_back(Dim{d, ""});
        v.shape = s;
        sub->add_value(std::move(v));
      }
      for (const auto& in : gp.input()) {
        if (sub->find_value(in.name()) >= 0) throw Error("input '" + in.name() + "' is listed twice");
        sub->inputs.push_back(sub->add_value(subgraph_value(in, "subgraph")));
      }
      ValueInfos value_info;
      for (const auto& vi : gp.value_info()) value_info[vi.name()] = &vi;
      for (const auto& vi : gp.output()) value_info[vi.name()] = &vi;
      scopes_.push_back({sub.get(), {}, false});
      for (const auto* np : sorted_nodes(gp.node())) add_node(*sub, *np, opsets, &value_info);
      for (const auto& out : gp.output()) {
        int id = sub->find_value(out.name());
        if (id < 0) id = capture(*sub, out.name());
        if (id < 0) throw Error("output '" + out.name() + "' is not produced by any node");
        sub->outputs.push_back(id);
      }
      if (sub->outputs.empty()) throw Error("the subgraph has no outputs");
    } catch (const Error& e) {
      scopes_.resize(depth);
      throw Error(context + ": " + e.what(), e.kind());  // says which subgraph the node is in
    }
    captured = std::move(scopes_.back().captured);
    scopes_.pop_back();
    return sub;
  }

  // The outer values a node's subgraphs read become trailing inputs of the node and, in the same
  // order, trailing inputs of every subgraph (ir/control_flow.h): explicit dependencies, so the
  // memory planner keeps them alive and the executor passes them.
  void link_outer_scope(Graph& graph, Node& n, Subgraphs& subgraphs, const std::string& where) {
    std::vector<std::string> names;
    for (const Subgraph& s : subgraphs)
      for (const auto& name : s.captured)
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    for (Subgraph& s : subgraphs) {
      for (const auto& name : names) {
        const bool reads = std::find(s.captured.begin(), s.captured.end(), name) != s.captured.end();
        int id = reads ? s.graph->find_value(name) : -1;
        if (id < 0) {  // a value only another subgraph reads: an unused input keeps positions aligned
          Value v;
          v.name = name + "/unused";
          while (s.graph->find_value(v.name) >= 0) v.name += "_";
          id = s.graph->add_value(std::move(v));
        }
        s.graph->inputs.push_back(id);
      }
      n.subgraphs[s.attribute] = std::move(s.graph);
    }
    for (const auto& name : names) {
      int id = graph.find_value(name);
      if (id < 0) id = capture(graph, name);
      if (id < 0) throw Error(where + ": outer-scope value '" + name + "' is not defined");
      n.inputs.push_back(id);
    }
    if (!names.empty()) n.attrs[kOuterInputsAttr] = static_cast<int64_t>(names.size());
  }

  onnx::ModelProto& model_;
  std::string base_dir_;
  Opsets opsets_;
  int64_t opset_ = 0;
  std::map<std::string, const onnx::FunctionProto*> functions_;  // domain "fusor", by name
  std::map<std::string, std::shared_ptr<const Graph>> bodies_;    // imported, by function name
  std::vector<std::string> importing_;                            // the functions being imported
  std::map<const Graph*, size_t> body_size_;                      // nodes with nested bodies expanded
  size_t expanded_nodes_ = 0;                                     // over the graph's fused nodes
  // The graphs being imported, outermost first: a subgraph reads the names it does not define
  // from the scopes enclosing it, up to the first isolated one (the model's graph, a function).
  struct Scope {
    Graph* graph;
    std::vector<std::string> captured;  // outer names this graph reads, in first-use order
    bool isolated;
  };
  std::vector<Scope> scopes_;
  ContribExpander contrib_;                                       // ranks of the outputs it defined
};

}  // namespace

namespace {
Graph import_model(onnx::ModelProto& model, const std::string& base_dir) {
  if (!model.has_graph()) throw Error("model has no graph");
  return Importer(model, base_dir).run();
}

// ONNX's shape inference over `model`, in a child process: libonnx's (1.12) indexes input dims
// without checking their rank in places (Conv, ConvTranspose), and a malformed model segfaulted
// the process that loaded it (the importer fuzzer). A child that dies leaves `model` as it was;
// the import then says what is still missing.
void infer_shapes_isolated(onnx::ModelProto& model) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipe_fds[0]), ::close(pipe_fds[1]);
    return;
  }
  if (pid == 0) {  // the child: infer, write the model back, and leave without running destructors
    ::close(pipe_fds[0]);
    try {
      onnx::shape_inference::InferShapes(model);
    } catch (const std::exception&) {
      // what it inferred before it stopped is kept
    }
    std::string out;
    if (model.SerializeToString(&out))
      for (size_t done = 0; done < out.size();) {
        const ssize_t n = ::write(pipe_fds[1], out.data() + done, out.size() - done);
        if (n <= 0) ::_exit(1);
        done += static_cast<size_t>(n);
      }
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string out;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  onnx::ModelProto inferred;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && inferred.ParseFromString(out)) model = std::move(inferred);
}

// A contrib op's expansion needs a rank the model's value_info does not give (an ORT-optimized
// model keeps few): parsed again (import moved the weights out of the first copy), with ONNX's
// own shape inference filling value_info, it is imported once more. Models that import as they
// are never pay for the inference.
template <class Parse>
Graph import_inferring_shapes_if_needed(Parse&& parse, const std::string& base_dir) {
  onnx::ModelProto model = parse();
  try {
    return import_model(model, base_dir);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::UnsupportedOp || !std::strstr(e.what(), "not known at import")) throw;
  }
  model = parse();
  infer_shapes_isolated(model);
  return import_model(model, base_dir);
}
const char* kNotOnnx = "model is not a valid ONNX protobuf (truncated or corrupt)";
// What the import rejects without a kind of its own is a fault of the model.
Error model_error(const std::string& message, const Error& cause) {
  return Error(message, cause.kind() == ErrorKind::Runtime ? ErrorKind::InvalidModel : cause.kind());
}
}  // namespace

Graph import_onnx_bytes(const std::string& bytes, const std::string& base_dir) {
  try {
    if (bytes.empty()) throw Error("model file is empty");
    return import_inferring_shapes_if_needed(
        [&] {
          onnx::ModelProto model;
          if (!model.ParseFromString(bytes)) throw Error(kNotOnnx);
          return model;
        },
        base_dir);
  } catch (const Error& e) {
    throw model_error(e.what(), e);
  }
}

Graph import_onnx_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error("model file not found: " + path, ErrorKind::InvalidArgument);
  if (fs::is_directory(path, ec)) throw Error("model path is a directory: " + path, ErrorKind::InvalidArgument);
  try {
    if (fs::file_size(path, ec) == 0) throw Error("model file is empty");
    return import_inferring_shapes_if_needed(
        [&] {
          std::ifstream f(path, std::ios::binary);
          if (!f) throw Error("cannot open model file", ErrorKind::InvalidArgument);
          onnx::ModelProto model;  // parsed straight from the stream: no second copy of the file
          if (!model.ParseFromIstream(&f)) throw Error(kNotOnnx);
          return model;
        },
        fs::path(path).parent_path().string());
  } catch (const Error& e) {
    throw model_error(path + ": " + e.what(), e);
  }
}

}  // namespace fusor
