// The files an ONNX model keeps its tensors in besides itself (external data: `location` in a
// tensor's external_data), for what must follow the weights and not only the graph file: the
// saved precision verdict's hash (check/verdict.cc).
#pragma once
#include <string>
#include <vector>

namespace fusor {

// The external data files `model_path` names, in the model's folder, sorted and unique; each as
// a path relative to that folder. Empty when the model names none, or does not parse (its import
// reports that).
std::vector<std::string> external_data_files(const std::string& model_path);

}  // namespace fusor
