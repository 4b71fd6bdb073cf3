"""Where ONNX Runtime keeps its native module; code that names onnxruntime.capi finds it here."""
from fusor.capi import onnxruntime_pybind11_state  # noqa: F401
