// Which ONNX nodes fusor can run, decided from the proto alone, so that a model is judged before
// it is imported: the importer refuses a model with one error listing every unsupported op (not
// only the first it meets), and `fusor inspect` prints the op histogram with support status.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/op_table.h"

namespace fusor {

// "" when fusor runs `op_type` of `domain` ("" or "ai.onnx" for ONNX's), else why not.
std::string unsupported_reason(const std::string& domain, const std::string& op_type);

// ONNX's classic-ML domain: fusor runs the few of its ops listed in op_support.cc.
inline constexpr const char* kOnnxMlDomain = "ai.onnx.ml";

// The op row a node of `domain` ("" or "ai.onnx" for ONNX's) and `op_type` runs as, or nullopt.
// An ai.onnx.ml op maps to the row of its name only in its own domain, and so does fusor's own
// (CachedAttention, domain "fusor"). Constant nodes and fused nodes (the other names of domain
// "fusor") are no op row here: the importer handles them itself.
std::optional<Op> op_for_node(const std::string& domain, const std::string& op_type);

// One op type a model uses, counted over its graph and every subgraph (If, Loop, Scan bodies).
struct OpUse {
  std::string domain;      // "" for ONNX's default domain
  std::string op_type;
  int64_t opset = 0;       // the model's opset for the domain, 0 when it imports none
  int count = 0;
  std::string first_node;  // the first node using it, by name (or "#index" when unnamed)
  std::string unsupported; // "" when supported
};

// The ops a model's graph uses, in order of first use. Model-local functions of domain "fusor"
// (fused nodes fusor exported) count as supported.
std::vector<OpUse> op_uses(const onnx::ModelProto& model);

// One line naming every unsupported op and the first node of each, or "" when all are supported.
std::string unsupported_summary(const std::vector<OpUse>& uses);

}  // namespace fusor
