// TensorProto <-> Tensor, including raw_data, the typed repeated fields and external data files.
#pragma once
#include <string>

#include "fusor/tensor.h"

namespace onnx {
class TensorProto;
}

namespace fusor {

// `base_dir` resolves external data locations; they must stay inside it.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir);
void tensor_to_proto(const Tensor& tensor, onnx::TensorProto& proto);

}  // namespace fusor
