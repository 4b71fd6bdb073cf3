// The pieces of the fusor._fusor extension module, each in its own file; module.cc calls them in
// order. The binding is thin: it converts between numpy and fusor::Tensor, releases the GIL
// around work, and maps fusor::Error kinds to the exception classes. Everything above that
// (ONNX Runtime's API, the plan cache, io_binding) is the pure-Python package in python/fusor/.
#pragma once
#include <map>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "fusor/tensor.h"

namespace fusor::python {

namespace py = pybind11;

// Fail, InvalidArgument, InvalidGraph, NotImplemented (ONNX Runtime's names), all under
// fusor._fusor.Error, and a translator that raises them for fusor::Error by kind; MissingInput,
// an InvalidArgument and a ValueError, is raised by the Python package.
void bind_errors(py::module_& m);
void bind_engine(py::module_& m);
void bind_pipeline(py::module_& m);
void bind_generate(py::module_& m);

// A numpy array's dtype as fusor's; throws an InvalidArgument Error naming `what` for a dtype
// fusor has no type for (object, str, complex, ...).
DType dtype_of_array(const py::array& array, const std::string& what);
// A view of a C-contiguous array's memory (no copy): valid while the array lives.
Tensor tensor_view(const py::array& array, const std::string& what);
// The tensor as a numpy array sharing its storage (no copy): the array keeps the storage alive.
py::array to_numpy(const Tensor& tensor);
// {name: array} -> {name: view}; every array must be C-contiguous (the Python side makes it so).
std::map<std::string, Tensor> tensor_views(const py::dict& arrays, const std::string& what);

}  // namespace fusor::python
