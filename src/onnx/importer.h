// Reads an ONNX model (protobuf, via libonnx) into the Graph IR. Validates on load: the file
// parses, opsets are supported, every node's op exists in the op table, every input is defined,
// and tensor types are ones fusor computes with. Errors are one line and name the culprit.
#pragma once
#include <string>

#include "ir/graph.h"

namespace fusor {

Graph import_onnx_file(const std::string& path);
// `base_dir` resolves external-data locations.
Graph import_onnx_bytes(const std::string& bytes, const std::string& base_dir);

}  // namespace fusor
