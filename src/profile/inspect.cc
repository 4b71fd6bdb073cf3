// fusor inspect: reads the ONNX proto for what needs no engine (signature, opsets, op histogram,
// parameters), then, when every op is supported, binds a session to count FLOPs and list fusion.
#include "fusor/inspect.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "engine/internals.h"
#include "fusor/error.h"
#include "onnx/dtype_codes.h"
#include "onnx/op_support.h"
#include "profile/cost.h"

namespace fusor {
namespace {

onnx::ModelProto read_model(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw Error("model file not found: " + path, ErrorKind::InvalidArgument);
  // Zero bytes parse as an empty ModelProto: the report printed "every op is supported" first.
  if (std::filesystem::file_size(path, ec) == 0) throw Error(path + ": model file is empty", ErrorKind::InvalidModel);
  std::ifstream f(path, std::ios::binary);
  onnx::ModelProto m;
  if (!f || !m.ParseFromIstream(&f)) throw Error(path + ": not a valid ONNX protobuf (truncated or corrupt)", ErrorKind::InvalidModel);
  return m;
}

std::string type_name(int onnx_type) {
  DType t = dtype_from_onnx(onnx_type);
  return t == DType::Undefined ? onnx_type_name(onnx_type) : dtype_name(t);
}

InspectedTensor tensor_of(const onnx::ValueInfoProto& vi) {
  InspectedTensor t{vi.name(), "?", {}};
  if (!vi.type().has_tensor_type()) {
    t.dtype = vi.type().has_sequence_type() ? "sequence" : vi.type().has_optional_type() ? "optional" : "non-tensor";
    return t;
  }
  const auto& tt = vi.type().tensor_type();
  t.dtype = type_name(tt.elem_type());
  for (const auto& d : tt.shape().dim())
    t.dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?");
  return t;
}

void add_parameters(const onnx::TensorProto& t, ModelInspection& out) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  out.parameters += n;
  DType dt = dtype_from_onnx(t.data_type());
  out.parameter_bytes += n * static_cast<int64_t>(dt == DType::Undefined ? 0 : dtype_size(dt));
}

void count_constants(const onnx::GraphProto& g, ModelInspection& out) {
  for (const auto& init : g.initializer()) add_parameters(init, out);
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      if (n.op_type() == "Constant" && a.has_t()) add_parameters(a.t(), out);
      if (a.has_g()) count_constants(a.g(), out);
    }
  }
}

// FLOPs, bound dims and fusion items from a fast session at the options' dims.
void bind_and_plan(const std::string& path, const InspectOptions& options, ModelInspection& out) {
  Engine engine = Engine::load(path);
  std::map<std::string, Dims> shapes;
  for (const auto& [name, dims] : options.shapes) shapes[name] = Dims(dims.begin(), dims.end());
  auto dims = engine.bind_dims(shapes, options.batch, options.seq);
  Session session = engine.session(dims);
  const Plan& plan = plan_of(session);
  for (const auto& [name, d] : dims) out.bound_dims[name] = std::vector<int64_t>(d.begin(), d.end());
  for (const Step& step : plan.steps) out.flops += plan_step_cost(plan, step).flops;
  for (const auto& item : plan.fusion.items) out.fusions.push_back({item.name, item.kind, item.pass, item.nodes.size()});
  for (const auto& nf : plan.fusion.not_fused) out.not_fused.push_back(nf.pass + ": " + nf.reason);
}

}  // namespace

ModelInspection inspect_model(const std::string& path, const InspectOptions& options) {
  onnx::ModelProto m = read_model(path);
  ModelInspection out;
  out.model = path;
  out.producer = m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
  out.ir_version = m.ir_version();
  for (const auto& o : m.opset_import()) out.opsets[o.domain().empty() ? "ai.onnx" : o.domain()] = o.version();
  std::set<std::string> initializers;
  for (const auto& init : m.graph().initializer()) initializers.insert(init.name());
  for (const auto& in : m.graph().input())
    if (!initializers.count(in.name())) out.inputs.push_back(tensor_of(in));
  for (const auto& o : m.graph().output()) out.outputs.push_back(tensor_of(o));
  out.supported = true;
  for (const OpUse& use : op_uses(m)) {
    out.ops.push_back({use.domain, use.op_type, use.count, use.first_node, use.unsupported});
    out.nodes += use.count;
    if (!use.unsupported.empty()) out.supported = false;
  }
  count_constants(m.graph(), out);
  if (!out.supported) {
    out.not_bound = "the model uses operators fusor does not run";
    return out;
  }
  try {
    bind_and_plan(path, options, out);
  } catch (const Error& e) {
    out.not_bound = e.what();
  }
  return out;
}

}  // namespace fusor
