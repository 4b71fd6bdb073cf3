// Builds small IR graphs by hand for tests, without an ONNX file: inputs, constants, nodes.
// Nodes are named "<scope><Op>_<output>" so messages can tell a node from the tensor it writes;
// a scope such as "/encoder/layer.0/" gives fusion items the stable names exporters' paths give
// ("layer0.layernorm").
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace fusor::test {

class GraphBuilder {
 public:
  explicit GraphBuilder(int opset = 17) : g_(std::make_shared<Graph>()) { g_->opset = opset; }

  int input(const std::string& name, DType dtype = DType::Float32, std::optional<Shape> shape = {}) {
    int id = value(name, dtype);
    g_->values[static_cast<size_t>(id)].shape = std::move(shape);
    g_->inputs.push_back(id);
    return id;
  }

  int constant(const std::string& name, Tensor t) {
    int id = value(name, t.dtype());
    g_->values[static_cast<size_t>(id)].constant = std::move(t);
    return id;
  }

  int node(Op op, std::vector<int> inputs, const std::string& out, DType dtype = DType::Float32,
           std::map<std::string, Attribute> attrs = {}) {
    Node n;
    n.op = op;
    n.op_type = op_info(op).name;
    n.name = scope_ + n.op_type + "_" + out;
    n.opset = static_cast<int>(g_->opset);
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    int id = value(out, dtype);
    g_->values[static_cast<size_t>(id)].producer = static_cast<int>(g_->nodes.size());
    n.outputs = {id};
    g_->nodes.push_back(std::move(n));
    return id;
  }

  // A node with several outputs (Split): their value ids, in order.
  std::vector<int> node_outputs(Op op, std::vector<int> inputs, const std::vector<std::string>& outs,
                                std::map<std::string, Attribute> attrs = {}) {
    node(op, std::move(inputs), outs.at(0), DType::Float32, std::move(attrs));
    Node& n = g_->nodes.back();
    for (size_t i = 1; i < outs.size(); ++i) {
      const int id = value(outs[i], DType::Float32);
      g_->values[static_cast<size_t>(id)].producer = static_cast<int>(g_->nodes.size() - 1);
      n.outputs.push_back(id);
    }
    return n.outputs;
  }

  // Prefix of the names of the nodes added from now on.
  void scope(std::string prefix) { scope_ = std::move(prefix); }

  std::shared_ptr<Graph> finish(std::vector<int> outputs) {
    g_->outputs = std::move(outputs);
    return g_;
  }

 private:
  int value(const std::string& name, DType dtype) {
    Value v;
    v.name = name;
    v.dtype = dtype;
    return g_->add_value(std::move(v));
  }

  std::shared_ptr<Graph> g_;
  std::string scope_;
};

}  // namespace fusor::test
