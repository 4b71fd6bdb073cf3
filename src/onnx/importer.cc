#include "onnx/importer.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "onnx/tensor_proto.h"

namespace fusor {
namespace {

constexpr int64_t kMinOpset = 1;
constexpr int64_t kMaxOpset = 22;

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
                  A::AttributeType_Name(a.type()) + ")");
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
  throw Error(n.describe() + ": Constant node has no supported value attribute");
}

class Importer {
 public:
  Importer(onnx::ModelProto& model, std::string base_dir)
      : model_(model), base_dir_(std::move(base_dir)) {}

  Graph run() {
    read_opsets();
    const auto& g = model_.graph();
    graph_.name = g.name();
    graph_.opset = opset_;
    graph_.source_node_count = static_cast<size_t>(g.node_size());
    for (auto& init : *model_.mutable_graph()->mutable_initializer()) {
      Value v;
      v.name = init.name();
      v.constant = tensor_from_proto(init, base_dir_);
      std::string().swap(*init.mutable_raw_data());  // the bytes live in the tensor now: free them
      v.dtype = v.constant->dtype();
      Shape s;
      for (int64_t d : v.constant->dims()) s.push_back(Dim{d, ""});
      v.shape = s;
      graph_.add_value(std::move(v));
    }
    for (const auto& in : g.input()) {
      if (graph_.find_value(in.name()) >= 0) continue;  // IR < 4: initializers listed as inputs
      graph_.inputs.push_back(graph_.add_value(value_from_info(in, "graph input")));
    }
    for (const auto& vi : g.value_info()) value_info_[vi.name()] = &vi;
    for (const auto& vi : g.output()) value_info_[vi.name()] = &vi;
    for (const auto& np : sorted_nodes()) add_node(*np);
    for (const auto& out : g.output()) {
      int id = graph_.find_value(out.name());
      if (id < 0) throw Error("graph output '" + out.name() + "' is not produced by any node");
      graph_.outputs.push_back(id);
    }
    if (graph_.outputs.empty()) throw Error("model has no graph outputs");
    return std::move(graph_);
  }

 private:
  void read_opsets() {
    if (model_.opset_import_size() == 0) throw Error("model declares no opset_import");
    for (const auto& o : model_.opset_import()) {
      std::string domain = o.domain() == "ai.onnx" ? "" : o.domain();
      opsets_[domain] = o.version();
    }
    if (!opsets_.count("")) throw Error("model does not import the default ONNX domain");
    opset_ = opsets_[""];
    if (opset_ < kMinOpset || opset_ > kMaxOpset)
      throw Error("ONNX opset " + std::to_string(opset_) + " is not supported (supported: " +
                  std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + ")");
  }

  Value value_from_info(const onnx::ValueInfoProto& vi, const char* what) {
    Value v;
    v.name = vi.name();
    if (v.name.empty()) throw Error(std::string(what) + " has an empty name");
    if (!vi.type().has_tensor_type())
      throw Error(std::string(what) + " '" + v.name + "' is not a tensor (sequences and maps are not supported)");
    int et = vi.type().tensor_type().elem_type();
    v.dtype = dtype_from_onnx(et);
    if (v.dtype == DType::Undefined)
      throw Error(std::string(what) + " '" + v.name + "' has unsupported dtype " + onnx_type_name(et));
    v.shape = shape_from_type(vi.type());
    return v;
  }

  // ONNX requires topological order, but some exporters break it: sort defensively (Kahn).
  std::vector<const onnx::NodeProto*> sorted_nodes() {
    const auto& g = model_.graph();
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto& o : g.node(i).output())
        if (!o.empty()) producer[o] = i;
    std::vector<int> state(static_cast<size_t>(g.node_size()), 0);
    std::vector<const onnx::NodeProto*> order;
    std::vector<std::pair<int, int>> stack;
    for (int root = 0; root < g.node_size(); ++root) {
      if (state[root]) continue;
      stack.push_back({root, 0});
      state[root] = 1;
      while (!stack.empty()) {
        auto& [n, next] = stack.back();
        const auto& node = g.node(n);
        if (next < node.input_size()) {
          auto it = producer.find(node.input(next++));
          if (it == producer.end()) continue;
          int p = it->second;
          if (state[p] == 1) throw Error("graph has a cycle through node '" + g.node(p).name() + "'");
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

  void add_node(const onnx::NodeProto& np) {
    Node n;
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.name = np.name().empty() ? n.op_type + "_" + std::to_string(graph_.nodes.size()) : np.name();
    auto dom = opsets_.find(n.domain);
    n.opset = dom == opsets_.end() ? 0 : static_cast<int>(dom->second);
    std::string where = "node '" + n.name + "' (op " + n.op_type + ", domain '" +
                        (n.domain.empty() ? "ai.onnx" : n.domain) + "', opset " +
                        std::to_string(n.opset) + ")";
    auto op = n.domain.empty() ? op_from_name(n.op_type) : std::nullopt;
    if (!op && n.op_type != "Constant") throw Error(where + ": unsupported operator");
    for (const auto& a : np.attribute()) n.attrs[a.name()] = convert_attribute(a, where, base_dir_);
    for (const auto& name : np.input()) {
      if (name.empty()) { n.inputs.push_back(-1); continue; }
      int id = graph_.find_value(name);
      if (id < 0) throw Error(where + ": input '" + name + "' is not defined");
      n.inputs.push_back(id);
    }
    if (n.op_type == "Constant") {
      if (np.output_size() != 1) throw Error(where + ": Constant must have one output");
      Value v;
      v.name = np.output(0);
      v.constant = constant_node_value(n);
      v.dtype = v.constant->dtype();
      Shape s;
      for (int64_t d : v.constant->dims()) s.push_back(Dim{d, ""});
      v.shape = s;
      graph_.add_value(std::move(v));
      return;
    }
    n.op = *op;
    int node_index = static_cast<int>(graph_.nodes.size());
    for (const auto& name : np.output()) {
      if (name.empty()) { n.outputs.push_back(-1); continue; }
      Value v;
      v.name = name;
      v.producer = node_index;
      if (auto it = value_info_.find(name); it != value_info_.end()) {
        int et = it->second->type().tensor_type().elem_type();
        v.dtype = dtype_from_onnx(et);
        v.shape = shape_from_type(it->second->type());
      }
      n.outputs.push_back(graph_.add_value(std::move(v)));
    }
    graph_.nodes.push_back(std::move(n));
  }

  onnx::ModelProto& model_;
  std::string base_dir_;
  std::map<std::string, int64_t> opsets_;
  int64_t opset_ = 0;
  std::unordered_map<std::string, const onnx::ValueInfoProto*> value_info_;
  Graph graph_;
};

}  // namespace

namespace {
Graph import_model(onnx::ModelProto& model, const std::string& base_dir) {
  if (!model.has_graph()) throw Error("model has no graph");
  return Importer(model, base_dir).run();
}
const char* kNotOnnx = "model is not a valid ONNX protobuf (truncated or corrupt)";
}  // namespace

Graph import_onnx_bytes(const std::string& bytes, const std::string& base_dir) {
  if (bytes.empty()) throw Error("model file is empty");
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) throw Error(kNotOnnx);
  return import_model(model, base_dir);
}

Graph import_onnx_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error("model file not found: " + path);
  if (fs::is_directory(path, ec)) throw Error("model path is a directory: " + path);
  try {
    if (fs::file_size(path, ec) == 0) throw Error("model file is empty");
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("cannot open model file");
    onnx::ModelProto model;  // parsed straight from the stream: no second copy of the file
    if (!model.ParseFromIstream(&f)) throw Error(kNotOnnx);
    return import_model(model, fs::path(path).parent_path().string());
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace fusor
