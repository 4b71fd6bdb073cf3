// Writes a Graph (typically after fusion) back to ONNX, the inverse of the importer.
//
// Constants become initializers (never external data), plain nodes are written as they were,
// and graph inputs keep their symbolic dims, so the model still runs at any batch and length.
// A fused node (op Fused) becomes a call, in domain "fusor", of a model-local FunctionProto
// holding its body: ONNX Runtime inlines it, Netron draws it as an expandable function, and
// the importer turns it back into the same fused node. Each call gets its own function (bodies
// differ per item), named "<kind>_<n>"; attribute `fusor_kind` keeps the kind and the node name
// keeps the stable item name. Bodies that contain fused nodes become nested function calls.
#pragma once
#include <string>

#include "ir/graph.h"

namespace fusor {

// The serialized ModelProto. Throws fusor::Error when the graph cannot be written (a fused node
// without a body, a value without a name).
std::string export_onnx_bytes(const Graph& graph);
// Writes the model to `path`; throws fusor::Error naming the path when it cannot be written.
void export_onnx_file(const Graph& graph, const std::string& path);

// The attribute on fused-node calls that names the fusion kind (the node's op_type in fusor).
inline constexpr const char* kFusedKindAttr = "fusor_kind";
inline constexpr const char* kFusorDomain = "fusor";

}  // namespace fusor
