#include "fusor/serve.h"

#include <onnx/onnx_pb.h>

#include "fusor/error.h"

namespace fusor::serve {
namespace {

void set_type(onnx::ValueInfoProto* v, const std::string& name, int elem, std::initializer_list<const char*> symbols,
              int64_t last = 0) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  for (const char* s : symbols) t->mutable_shape()->add_dim()->set_dim_param(s);
  if (last > 0) t->mutable_shape()->add_dim()->set_dim_value(last);
}

void add_node(onnx::GraphProto* g, const char* op, std::initializer_list<const char*> in, const char* out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out);
  for (const char* i : in) n->add_input(i);
  n->add_output(out);
}

onnx::ModelProto demo_proto() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("fusor-demo");
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("demo");
  set_type(g->add_input(), "input_ids", onnx::TensorProto::INT64, {"batch", "sequence"});
  set_type(g->add_input(), "attention_mask", onnx::TensorProto::INT64, {"batch", "sequence"});
  set_type(g->add_output(), "embeddings", onnx::TensorProto::FLOAT, {"batch", "sequence"}, 4);
  auto* table = g->add_initializer();
  table->set_name("table");
  table->set_data_type(onnx::TensorProto::FLOAT);
  table->add_dims(32);
  table->add_dims(4);
  for (int i = 0; i < 32 * 4; ++i) table->add_float_data(static_cast<float>(i / 4) + 0.25f * static_cast<float>(i % 4));
  auto* axes = g->add_initializer();
  axes->set_name("axes");
  axes->set_data_type(onnx::TensorProto::INT64);
  axes->add_dims(1);
  axes->add_int64_data(2);
  add_node(g, "Gather", {"table", "input_ids"}, "looked_up");
  add_node(g, "Cast", {"attention_mask"}, "mask");
  auto* to = g->mutable_node(1)->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  add_node(g, "Unsqueeze", {"mask", "axes"}, "mask3");
  add_node(g, "Mul", {"looked_up", "mask3"}, "embeddings");
  return m;
}

}  // namespace

Engine load_demo_model() {
  std::string bytes;
  if (!demo_proto().SerializeToString(&bytes)) throw Error("cannot serialize the demo model");
  return Engine::load_bytes(bytes);  // no external data
}

}  // namespace fusor::serve
