#include "serve/signature.h"

#include "serve/status.h"

#include <atomic>
#include <cctype>

namespace fusor::serve {

const char* triton_dtype(DType t) {
  switch (t) {
    case DType::Float32: return "FP32";
    case DType::Float64: return "FP64";
    case DType::Int64: return "INT64";
    case DType::Int32: return "INT32";
    case DType::Int8: return "INT8";
    case DType::UInt8: return "UINT8";
    case DType::Bool: return "BOOL";
    case DType::Float16: return "FP16";
    case DType::BFloat16: return "BF16";
    case DType::Int16: return "INT16";
    case DType::UInt16: return "UINT16";
    case DType::UInt32: return "UINT32";
    case DType::UInt64: return "UINT64";
    default: break;  // float8, int4, int2 and the MX types: KServe has no datatype for them
  }
  return "";
}

DType dtype_from_triton(const std::string& name) {
  for (DType t : {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::Int8, DType::UInt8, DType::Bool,
                  DType::Float16, DType::BFloat16, DType::Int16, DType::UInt16, DType::UInt32, DType::UInt64})
    if (name == triton_dtype(t)) return t;
  return DType::Undefined;
}

std::string shape_string(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

Signature Signature::of(std::vector<TensorInfo> inputs, std::vector<TensorInfo> outputs) {
  Signature s;
  s.inputs = std::move(inputs);
  s.outputs = std::move(outputs);
  s.batched = !s.inputs.empty();
  std::string seq_symbol;
  for (const auto& in : s.inputs) {
    s.batched = s.batched && !in.dims.empty() && in.dims[0] < 0;
    bool seq = in.dims.size() >= 2 && in.dims[1] < 0;
    s.input_has_seq.push_back(seq);
    std::string lower = in.name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    s.pads_seq = s.pads_seq || (seq && lower.find("mask") != std::string::npos);
    if (seq && seq_symbol.empty() && in.symbols.size() > 1) seq_symbol = in.symbols[1];
  }
  for (const auto& out : s.outputs) {
    int axis = -1;
    for (size_t i = 1; i < out.dims.size() && axis < 0 && s.has_seq(); ++i) {
      bool named = !seq_symbol.empty() && i < out.symbols.size() && out.symbols[i] == seq_symbol;
      bool unnamed = seq_symbol.empty() && i == 1 && out.dims[i] < 0;
      if (named || unnamed) axis = static_cast<int>(i);
    }
    s.output_seq_axis.push_back(axis);
  }
  return s;
}

bool Signature::has_seq() const {
  for (bool b : input_has_seq)
    if (b) return true;
  return false;
}

const TensorInfo* Signature::input(const std::string& name) const {
  for (const auto& in : inputs)
    if (in.name == name) return &in;
  return nullptr;
}

RequestShape Signature::check(const Tensors& request, int64_t seq_bucket) const {
  auto bad = [](const std::string& m) { return RequestError{Code::BadRequest, m}; };
  for (const auto& [name, t] : request)
    if (!input(name)) throw bad("unexpected inference input '" + name + "' for this model");
  RequestShape shape;
  shape.rows = -1;
  std::string group;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& info = inputs[i];
    auto it = request.find(info.name);
    if (it == request.end()) throw bad("expected inference input '" + info.name + "', which is missing");
    const Tensor& t = it->second;
    if (t.dtype() != info.dtype)
      throw bad("input '" + info.name + "' has datatype " + triton_dtype(t.dtype()) + ", the model expects " +
                triton_dtype(info.dtype));
    const Dims& d = t.dims();
    auto wrong_shape = [&] {
      return bad("input '" + info.name + "' has shape " + shape_string(d) + ", the model expects " +
                 shape_string(info.dims));
    };
    if (d.size() != info.dims.size()) throw wrong_shape();
    for (size_t a = 0; a < d.size(); ++a) {
      if (d[a] <= 0) throw bad("input '" + info.name + "' has an empty or negative dimension " + shape_string(d));
      if (info.dims[a] >= 0 && d[a] != info.dims[a]) throw wrong_shape();
    }
    int64_t rows = batched ? d[0] : 1;
    if (shape.rows >= 0 && rows != shape.rows)
      throw bad("inputs disagree on the batch size (" + std::to_string(shape.rows) + " and " + std::to_string(rows) + ")");
    shape.rows = rows;
    if (input_has_seq[i]) {
      if (shape.seq >= 0 && d[1] != shape.seq)
        throw bad("inputs disagree on the sequence length (" + std::to_string(shape.seq) + " and " +
                  std::to_string(d[1]) + ")");
      shape.seq = d[1];
    }
    for (size_t a = batched ? 1 : 0; a < d.size(); ++a) {
      int64_t v = d[a];
      if (input_has_seq[i] && a == 1) v = (v + seq_bucket - 1) / seq_bucket * seq_bucket;
      group += std::to_string(v) + (a + 1 < d.size() ? "," : ";");
    }
  }
  if (!runs_alone.empty()) {
    static std::atomic<uint64_t> requests{0};
    group += "alone " + std::to_string(requests.fetch_add(1, std::memory_order_relaxed));
  }
  shape.group = group;
  return shape;
}

}  // namespace fusor::serve
