// The graph IR: typed values with possibly symbolic shapes, nodes in topological order.
// Invariants kept by the importer and every pass: nodes are topologically sorted; every node
// input is a graph input, a constant, or an output of an earlier node; value names are unique.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "fusor/tensor.h"
#include "ir/op_table.h"

namespace fusor {

// A dimension is either a known size or a named symbol ("batch", "sequence").
struct Dim {
  int64_t value = -1;
  std::string symbol;  // empty for an anonymous unknown dimension
  bool is_static() const { return value >= 0; }
};
using Shape = std::vector<Dim>;
std::string shape_to_string(const Shape& shape);

struct Value {
  std::string name;
  DType dtype = DType::Undefined;
  std::optional<Shape> shape;      // unknown rank when empty
  int producer = -1;               // node index, or -1 for graph inputs and constants
  std::optional<Tensor> constant;  // initializers and Constant nodes
};

struct Graph;

// ONNX's attribute kinds, plus DType: an attribute that names an element type (Cast's `to`)
// holds a DType, which the importer and exporter translate from and to ONNX's type codes.
using Attribute = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, Tensor, DType>;

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain
  Op op = Op::Count;
  int opset = 0;               // opset of the node's domain
  std::vector<int> inputs;     // value ids; -1 marks an omitted optional input
  std::vector<int> outputs;    // value ids; -1 marks an omitted optional output
  std::map<std::string, Attribute> attrs;
  // Fused nodes (op Fused, domain "fusor", op_type the fusion kind, name the stable item name):
  // the subgraph they replace. body->inputs and body->outputs correspond one to one with
  // `inputs` and `outputs`; the reference kernel runs the body, fast kernels read `attrs`.
  std::shared_ptr<const Graph> body;
  // Control-flow nodes (If, Loop, Scan): their graph attributes, by attribute name. A subgraph
  // may read values of the enclosing graph by name (outer scope).
  std::map<std::string, std::shared_ptr<const Graph>> subgraphs;

  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  float attr_float(const std::string& key, float fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& key, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(const std::string& key, std::vector<float> fallback = {}) const;
  const Tensor* attr_tensor(const std::string& key) const;
  DType attr_dtype(const std::string& key, DType fallback) const;
  // "node 'x' (op Add)", used to start error messages.
  std::string describe() const;
};

struct Graph {
  std::string name;
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;   // non-constant graph inputs, in declaration order
  std::vector<int> outputs;
  int64_t opset = 0;         // default-domain opset
  size_t source_node_count = 0;  // nodes in the ONNX file, Constant nodes included
  // The model's metadata_props (key, value), which the exporter writes back: quantization tools
  // and converters record provenance there (onnx.quant.pre_process, onnx.infer).
  std::vector<std::pair<std::string, std::string>> metadata;

  int add_value(Value v);
  int find_value(const std::string& name) const;  // -1 when absent
  // Consumers of each value (node indices), computed from the current node list.
  std::vector<std::vector<int>> consumers() const;
  // After a rewrite replaced nodes: sorts them topologically again and recomputes every
  // value's producer. Throws fusor::Error on a cycle.
  void reorder_nodes();

 private:
  std::unordered_map<std::string, int> by_name_;
};

}  // namespace fusor
