// fusor::Error -> Python exceptions typed as ONNX Runtime's onnxruntime_pybind11_state ones, so
// `except InvalidArgument:` clauses written for ONNX Runtime keep working. The message is the
// CLI's one line, unchanged.
#include "bindings.h"

#include "fusor/error.h"

namespace fusor::python {

namespace {

// Kept for the life of the interpreter: the module owns references to the same objects.
struct ErrorClasses {
  PyObject* fail = nullptr;
  PyObject* invalid_argument = nullptr;
  PyObject* invalid_graph = nullptr;
  PyObject* not_implemented = nullptr;

  PyObject* of(ErrorKind kind) const {
    switch (kind) {
      case ErrorKind::InvalidArgument: return invalid_argument;
      case ErrorKind::InvalidModel: return invalid_graph;
      case ErrorKind::UnsupportedOp: return not_implemented;
      case ErrorKind::Runtime: return fail;
    }
    return fail;
  }
};

ErrorClasses classes;

PyObject* add_class(py::module_& m, const char* name, PyObject* base, const char* doc) {
  std::string qualified = std::string("fusor._fusor.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));
  return cls;
}

}  // namespace

void bind_errors(py::module_& m) {
  PyObject* base = add_class(m, "Error", PyExc_RuntimeError, "Base of every error fusor raises.");
  classes.fail = add_class(m, "Fail", base, "Preparing or running the model failed (ErrorKind::Runtime).");
  classes.invalid_argument =
      add_class(m, "InvalidArgument", base, "The inputs, shapes, options or config are wrong for the model.");
  classes.invalid_graph = add_class(m, "InvalidGraph", base, "The model is not a valid ONNX model fusor can load.");
  classes.not_implemented =
      add_class(m, "NotImplemented", base, "A valid model needs an op, opset or dtype fusor does not implement.");
  // ONNX Runtime raises ValueError for a feed that lacks inputs: `except ValueError` keeps working.
  py::object missing_bases = py::make_tuple(py::handle(classes.invalid_argument), py::handle(PyExc_ValueError));
  add_class(m, "MissingInput", missing_bases.ptr(), "The input feed lacks inputs the model needs (also a ValueError).");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      // A model's names may hold bytes that are not UTF-8: PyErr_SetString would fail to decode
      // the message and leave the exception empty, so undecodable bytes become U+FFFD instead.
      const std::string text = e.what();
      PyObject* message = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
      if (!message) return;  // the decode's own error is set
      PyErr_SetObject(classes.of(e.kind()), message);
      Py_DECREF(message);
    }
  });
}

}  // namespace fusor::python
