// ONNX protos built by hand, for tests that need a model exactly as an exporter of some opset
// writes it (forms fusor's own graph builder would never make).
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <vector>

namespace fusor::test {

// A model of one graph named `name` at ONNX opset `opset` (IR `ir_version`).
inline onnx::ModelProto onnx_model(const char* name, int64_t opset, int64_t ir_version = 8) {
  onnx::ModelProto m;
  m.set_ir_version(ir_version);
  m.add_opset_import()->set_version(opset);
  m.mutable_graph()->set_name(name);
  return m;
}

// A float32 graph input or output of fixed dims: onnx_value(g.add_input(), "x", {2, 3}).
inline void onnx_value(onnx::ValueInfoProto* v, const char* name, const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

}  // namespace fusor::test
