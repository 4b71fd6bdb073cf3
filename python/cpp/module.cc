// fusor._fusor: the extension module under the fusor package (python/fusor/).
#include "bindings.h"

PYBIND11_MODULE(_fusor, m) {
  m.doc() = "fusor's C++ engine (include/fusor/); use the fusor package, not this module";
  fusor::python::bind_errors(m);
  fusor::python::bind_engine(m);
  fusor::python::bind_pipeline(m);
  fusor::python::bind_generate(m);
}
