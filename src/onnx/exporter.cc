#include "onnx/exporter.h"

#include "io/atomic_file.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <set>

#include "ir/control_flow.h"
#include "onnx/dtype_codes.h"
#include "onnx/tensor_proto.h"

namespace fusor {
namespace {

// The lowest IR version that carries the opset (ONNX's version table), and at least 8: the
// first with model-local functions.
int64_t ir_version_for(int64_t opset) {
  if (opset >= 21) return 10;
  if (opset >= 19) return 9;
  return 8;
}

void set_attribute(onnx::AttributeProto& a, const std::string& name, const Attribute& value) {
  using A = onnx::AttributeProto;
  a.set_name(name);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          a.set_type(A::INT);
          a.set_i(v);
        } else if constexpr (std::is_same_v<T, float>) {
          a.set_type(A::FLOAT);
          a.set_f(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          a.set_type(A::STRING);
          a.set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          a.set_type(A::INTS);
          for (int64_t x : v) a.add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          a.set_type(A::FLOATS);
          for (float x : v) a.add_floats(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          a.set_type(A::STRINGS);
          for (const auto& x : v) a.add_strings(x);
        } else if constexpr (std::is_same_v<T, DType>) {
          a.set_type(A::INT);
          a.set_i(dtype_to_onnx(v));
        } else {
          a.set_type(A::TENSOR);
          tensor_to_proto(v, *a.mutable_t());
        }
      },
      value);
}

void set_type(onnx::ValueInfoProto& vi, const Value& v) {
  vi.set_name(v.name);
  if (v.dtype == DType::Undefined) return;
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(v.dtype));
  if (!v.shape) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : *v.shape) {
    auto* dim = shape->add_dim();
    if (d.is_static()) dim->set_dim_value(d.value);
    else if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
  }
}

class Exporter {
 public:
  explicit Exporter(onnx::ModelProto& model) : model_(model) {}

  void run(const Graph& g) {
    opset_ = g.opset;
    model_.set_ir_version(ir_version_for(g.opset));
    model_.set_producer_name("fusor");
    model_.set_domain("");
    for (const auto& [key, value] : g.metadata) {
      auto* m = model_.add_metadata_props();
      m->set_key(key);
      m->set_value(value);
    }
    add_opsets(model_.mutable_opset_import(), g.opset);
    auto& gp = *model_.mutable_graph();
    gp.set_name(g.name.empty() ? "fusor" : g.name);

    for (int v : g.inputs) set_type(*gp.add_input(), value(g, v));
    for (int v : referenced(g)) {
      const Value& val = value(g, v);
      if (val.constant) {
        auto* t = gp.add_initializer();
        tensor_to_proto(*val.constant, *t);
        t->set_name(val.name);
      } else if (val.producer >= 0 && val.dtype != DType::Undefined &&
                 std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end()) {
        set_type(*gp.add_value_info(), val);
      }
    }
    for (const Node& n : g.nodes) write_node(g, n, *gp.add_node());
    for (int v : g.outputs) set_type(*gp.add_output(), value(g, v));
    // Nodes of other domains (ai.onnx.ml) need their opset imported wherever they may sit.
    for (const auto& [domain, version] : other_domains_) {
      add_import(model_.mutable_opset_import(), domain, version);
      for (auto& f : *model_.mutable_functions()) add_import(f.mutable_opset_import(), domain, version);
    }
  }

 private:
  static const Value& value(const Graph& g, int v) {
    if (v < 0 || static_cast<size_t>(v) >= g.values.size()) throw Error("graph refers to a value that does not exist");
    const Value& val = g.values[static_cast<size_t>(v)];
    if (val.name.empty()) throw Error("graph has a value without a name");
    return val;
  }

  static void add_opsets(google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>* out, int64_t opset) {
    auto* def = out->Add();
    def->set_domain("");
    def->set_version(opset);
    auto* fusor = out->Add();
    fusor->set_domain(kFusorDomain);
    fusor->set_version(1);
  }

  static void add_import(google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>* out, const std::string& domain,
                         int64_t version) {
    auto* o = out->Add();
    o->set_domain(domain);
    o->set_version(version);
  }

  // Values any node or the graph's outputs use, each once, in first-use order.
  static std::vector<int> referenced(const Graph& g) {
    std::vector<int> order;
    std::set<int> seen;
    auto use = [&](int v) {
      if (v >= 0 && seen.insert(v).second) order.push_back(v);
    };
    for (const Node& n : g.nodes) {
      for (int v : n.inputs) use(v);
      for (int v : n.outputs) use(v);
    }
    for (int v : g.outputs) use(v);
    return order;
  }

  void write_node(const Graph& g, const Node& n, onnx::NodeProto& np) {
    np.set_name(n.name);
    // Outer-scope values are node inputs only inside fusor: in ONNX a subgraph reads them by name.
    const size_t outer = n.subgraphs.empty() ? 0 : outer_input_count(n);
    for (size_t i = 0; i + outer < n.inputs.size(); ++i)
      np.add_input(n.inputs[i] < 0 ? "" : value(g, n.inputs[i]).name);
    for (int v : n.outputs) np.add_output(v < 0 ? "" : value(g, v).name);
    for (const auto& [key, attr] : n.attrs)
      if (key != kOuterInputsAttr) set_attribute(*np.add_attribute(), key, attr);
    for (const auto& [key, sub] : n.subgraphs) {
      std::vector<std::string> outer_names;
      for (size_t i = n.inputs.size() - outer; i < n.inputs.size(); ++i) outer_names.push_back(value(g, n.inputs[i]).name);
      auto* a = np.add_attribute();
      a->set_name(key);
      a->set_type(onnx::AttributeProto::GRAPH);
      write_subgraph(*sub, outer_names, *a->mutable_g());
    }
    if (n.op != Op::Fused) {
      np.set_op_type(n.op_type);
      np.set_domain(n.domain);
      // Domain "fusor" (CachedAttention) is imported already, for the fused nodes' functions.
      if (!n.domain.empty() && n.domain != kFusorDomain) other_domains_.emplace(n.domain, n.opset);
      return;
    }
    if (!n.body) throw Error(n.describe() + ": fused node has no body to export");
    np.set_domain(kFusorDomain);
    np.set_op_type(write_function(n));
    set_attribute(*np.add_attribute(), kFusedKindAttr, n.op_type);
  }

  // A control node's subgraph as a GraphProto. Its trailing `outer_names.size()` inputs stand for
  // outer-scope values: they are written as references to those values' current names.
  void write_subgraph(const Graph& sub, const std::vector<std::string>& outer_names, onnx::GraphProto& gp) {
    if (sub.inputs.size() < outer_names.size())
      throw Error("subgraph '" + sub.name + "' lacks inputs for its outer-scope values");
    Graph renamed = sub;
    const size_t formal = sub.inputs.size() - outer_names.size();
    for (size_t i = 0; i < outer_names.size(); ++i)
      renamed.values[static_cast<size_t>(sub.inputs[formal + i])].name = outer_names[i];
    gp.set_name(sub.name.empty() ? "subgraph" : sub.name);
    for (size_t i = 0; i < formal; ++i) set_type(*gp.add_input(), value(renamed, renamed.inputs[i]));
    std::set<int> outer_ids(sub.inputs.begin() + static_cast<std::ptrdiff_t>(formal), sub.inputs.end());
    for (int v : referenced(renamed)) {
      const Value& val = value(renamed, v);
      if (!val.constant || outer_ids.count(v)) continue;
      auto* t = gp.add_initializer();
      tensor_to_proto(*val.constant, *t);
      t->set_name(val.name);
    }
    for (const Node& inner : renamed.nodes) write_node(renamed, inner, *gp.add_node());
    for (int v : renamed.outputs) set_type(*gp.add_output(), value(renamed, v));
  }

  // The body of fused node `n` as a model-local function; returns the function's name.
  std::string write_function(const Node& n) {
    const Graph& body = *n.body;
    if (body.inputs.size() != n.inputs.size() || body.outputs.size() != n.outputs.size())
      throw Error(n.describe() + ": body inputs and outputs do not match the node's");
    std::string name;
    do name = n.op_type + "_" + std::to_string(next_index_[n.op_type]++);
    while (!function_names_.insert(name).second);

    // Repeated message fields keep their elements in place, so `f` stays valid while the
    // nested functions it calls are added.
    auto* f = model_.add_functions();
    f->set_name(name);
    f->set_domain(kFusorDomain);
    f->set_doc_string("fusor fused item '" + n.name + "' (" + n.op_type + ")");
    add_opsets(f->mutable_opset_import(), body.opset > 0 ? body.opset : opset_);
    for (const auto& [key, attr] : n.attrs) f->add_attribute(key);
    f->add_attribute(kFusedKindAttr);
    for (int v : body.inputs) f->add_input(value(body, v).name);
    for (int v : body.outputs) f->add_output(value(body, v).name);
    // Functions have no initializers: a constant the body holds (one read from a file) becomes
    // a Constant node.
    std::set<int> inputs(body.inputs.begin(), body.inputs.end());
    for (int v : referenced(body)) {
      const Value& val = value(body, v);
      if (!val.constant || inputs.count(v)) continue;
      auto* c = f->add_node();
      c->set_op_type("Constant");
      c->set_name(val.name + "/Constant");
      c->add_output(val.name);
      set_attribute(*c->add_attribute(), "value", *val.constant);
    }
    for (const Node& inner : body.nodes) write_node(body, inner, *f->add_node());
    return name;
  }

  onnx::ModelProto& model_;
  int64_t opset_ = 0;
  std::map<std::string, int> next_index_;
  std::set<std::string> function_names_;
  std::map<std::string, int64_t> other_domains_;  // domain -> opset of the nodes written in it
};

}  // namespace

std::string export_onnx_bytes(const Graph& graph) {
  onnx::ModelProto model;
  Exporter(model).run(graph);
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw Error("cannot serialize the model (over 2 GB?)");
  return bytes;
}

void export_onnx_file(const Graph& graph, const std::string& path) {
  // Whole or not at all: the output may be the model's own file (optimize -o model.onnx).
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw Error("cannot write model file '" + path + "': it is not a regular file (a device, a pipe or a folder)",
                ErrorKind::InvalidArgument);
  if (!write_file_atomically(path, export_onnx_bytes(graph))) throw Error("cannot write model file '" + path + "'");
}

}  // namespace fusor
