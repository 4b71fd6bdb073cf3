#include "serve/grpc_tensors.h"

#include <set>

#include "serve/status.h"

namespace fusor::serve {
namespace {

// Typed `contents` values -> tensor, for clients that do not send raw_input_contents. Read in
// place from the message's repeated field.
Tensor from_contents(const WireTensor& w, const inference::InferTensorContents& c) {
  auto values = [&](const auto& field) { return from_values(w, std::span(field.data(), field.size())); };
  if (w.datatype == "FP32") return values(c.fp32_contents());
  if (w.datatype == "FP64") return values(c.fp64_contents());
  if (w.datatype == "INT64") return values(c.int64_contents());
  if (w.datatype == "INT32" || w.datatype == "INT16" || w.datatype == "INT8") return values(c.int_contents());
  if (w.datatype == "UINT32" || w.datatype == "UINT16" || w.datatype == "UINT8") return values(c.uint_contents());
  if (w.datatype == "UINT64") return values(c.uint64_contents());
  if (w.datatype == "BOOL") return values(c.bool_contents());
  if (w.datatype == "FP16" || w.datatype == "BF16")
    throw RequestError{Code::BadRequest, "input '" + w.name + "' is " + w.datatype +
                                             ": KServe has no typed contents for it, send raw_input_contents"};
  return allocate(w, 0);  // throws for the unsupported datatype
}

}  // namespace

std::vector<GrpcInput> grpc_inputs(const inference::ModelInferRequest& q) {
  // First: an input in shared memory has no raw_input_contents entry, so the count check below
  // would call it a malformed request.
  for (const auto& in : q.inputs())
    if (in.parameters().count(kSharedMemoryRegion)) throw shared_memory_refused(in.name());
  const bool raw = q.raw_input_contents_size() > 0;
  if (raw && q.raw_input_contents_size() != q.inputs_size())
    throw RequestError{Code::BadRequest, "raw_input_contents has " + std::to_string(q.raw_input_contents_size()) +
                                             " entries for " + std::to_string(q.inputs_size()) + " inputs"};
  std::vector<GrpcInput> inputs;
  std::set<std::string> names;
  for (int i = 0; i < q.inputs_size(); ++i) {
    const auto& in = q.inputs(i);
    if (!names.insert(in.name()).second) throw RequestError{Code::BadRequest, "input '" + in.name() + "' is given twice"};
    // As Triton: which of the two holds the values would be a guess.
    if (raw && in.has_contents())
      throw RequestError{Code::BadRequest, "input '" + in.name() + "' has typed contents and raw_input_contents; send one"};
    inputs.push_back({{in.name(), in.datatype(), {in.shape().begin(), in.shape().end()}},
                      raw ? &q.raw_input_contents(i) : nullptr,
                      &in.contents()});
  }
  return inputs;
}

Tensor grpc_tensor(const GrpcInput& in) {
  return in.raw ? from_raw(in.wire, in.raw->data(), in.raw->size()) : from_contents(in.wire, *in.contents);
}

std::vector<std::string> grpc_bytes(const GrpcInput& in) {
  if (in.raw) return bytes_items(in.wire, in.raw->data(), in.raw->size());
  const auto& items = in.contents->bytes_contents();
  const std::string raw = bytes_contents({items.begin(), items.end()});
  return bytes_items(in.wire, raw.data(), raw.size());  // checks the count against the shape
}

}  // namespace fusor::serve
