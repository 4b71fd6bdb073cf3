// What a model is, before running it: inputs and outputs with symbolic dims, opsets, the op
// histogram with support status, parameter count, FLOPs per inference at given dims, and what
// would fuse. Works on models fusor cannot load (the histogram then says why); `fusor inspect`
// prints it and exits 1 when an op is unsupported.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fusor {

struct InspectOptions {
  int64_t batch = 1;  // binds the leading symbolic dimension of each input
  int64_t seq = 128;  // binds the other symbolic dimensions
  std::map<std::string, std::vector<int64_t>> shapes;  // explicit input dims, before batch/seq
};

struct InspectedTensor {
  std::string name;
  std::string dtype;              // "float32", ... as ONNX names it when fusor has no such type
  std::vector<std::string> dims;  // "3", "batch", or "?" for an anonymous unknown dimension
};

struct InspectedOp {
  std::string domain;  // "" for ONNX's default domain
  std::string op_type;
  int count = 0;
  std::string first_node;
  std::string unsupported;  // "" when fusor runs it, else why not
};

struct InspectedFusion {
  std::string name, kind, pass;
  size_t nodes = 0;
};

struct ModelInspection {
  std::string model;  // the path inspected
  std::string producer;
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // by domain, "ai.onnx" for the default one
  std::vector<InspectedTensor> inputs, outputs;
  std::vector<InspectedOp> ops;  // in order of first use, subgraphs included
  int nodes = 0;
  int64_t parameters = 0;        // elements of the initializers and Constant nodes
  int64_t parameter_bytes = 0;
  bool supported = false;        // every op is supported
  // Filled only when the model loads and binds at the options' dims; else `not_bound` says why.
  std::string not_bound;
  std::map<std::string, std::vector<int64_t>> bound_dims;
  double flops = 0;  // per inference, by the profiler's cost model, over the unfused graph
  std::vector<InspectedFusion> fusions;
  std::vector<std::string> not_fused;  // "pass: reason" for each opportunity declined
};

// Throws fusor::Error only when the file is unreadable or not an ONNX model.
ModelInspection inspect_model(const std::string& path, const InspectOptions& options = {});

std::string inspection_text(const ModelInspection& inspection);
std::string inspection_json(const ModelInspection& inspection);  // one JSON object

}  // namespace fusor
