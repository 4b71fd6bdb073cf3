// numpy <-> fusor::Tensor without copies: inputs are views of the caller's arrays (the executor
// copies them once, into its arena), outputs are numpy arrays over the tensors' own storage.
#include "bindings.h"

#include <memory>

#include "fusor/error.h"

namespace fusor::python {

DType dtype_of_array(const py::array& array, const std::string& what) {
  const py::dtype dt = array.dtype();
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  if (kind == 'f' && size == 4) return DType::Float32;
  if (kind == 'f' && size == 8) return DType::Float64;
  if (kind == 'f' && size == 2) return DType::Float16;
  if (kind == 'b' && size == 1) return DType::Bool;
  if (kind == 'i') {
    if (size == 8) return DType::Int64;
    if (size == 4) return DType::Int32;
    if (size == 2) return DType::Int16;
    if (size == 1) return DType::Int8;
  }
  if (kind == 'u') {
    if (size == 8) return DType::UInt64;
    if (size == 4) return DType::UInt32;
    if (size == 2) return DType::UInt16;
    if (size == 1) return DType::UInt8;
  }
  throw Error(what + " has numpy dtype " + py::str(dt).cast<std::string>() + ", which fusor has no type for",
              ErrorKind::InvalidArgument);
}

Tensor tensor_view(const py::array& array, const std::string& what) {
  if (!(array.flags() & py::array::c_style))
    throw Error(what + " must be a C-contiguous array", ErrorKind::InvalidArgument);
  Dims dims(array.shape(), array.shape() + array.ndim());
  return Tensor::view(dtype_of_array(array, what), std::move(dims), const_cast<void*>(array.data()));
}

// numpy's name for each dtype; storage-only types without a numpy twin come back as their bits.
static const char* numpy_name(DType t) {
  switch (t) {
    case DType::BFloat16: return "uint16";
    case DType::Float8E4M3FN:
    case DType::Float8E4M3FNUZ:
    case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ:
    case DType::UInt4: return "uint8";
    case DType::Int4: return "int8";
    case DType::Bool: return "bool";
    default: return dtype_name(t);
  }
}

py::array to_numpy(const Tensor& tensor) {
  auto* owner = new Tensor(tensor);  // shares the storage; freed with the array
  py::capsule keep(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape(tensor.dims().begin(), tensor.dims().end());
  return py::array(py::dtype::from_args(py::str(numpy_name(tensor.dtype()))), shape, owner->raw(), keep);
}

std::map<std::string, Tensor> tensor_views(const py::dict& arrays, const std::string& what) {
  std::map<std::string, Tensor> out;
  for (const auto& [key, value] : arrays) {
    std::string name = py::cast<std::string>(key);
    if (!py::isinstance<py::array>(value))
      throw Error(what + " '" + name + "' must be a numpy array", ErrorKind::InvalidArgument);
    out.emplace(name, tensor_view(py::reinterpret_borrow<py::array>(value), what + " '" + name + "'"));
  }
  return out;
}

}  // namespace fusor::python
