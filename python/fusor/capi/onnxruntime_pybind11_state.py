"""ONNX Runtime's exception module, by its name: `except onnxruntime.capi.onnxruntime_pybind11_state.Fail`
keeps working after `import fusor as onnxruntime`."""
from fusor._fusor import Error, Fail, InvalidArgument, InvalidGraph, NotImplemented  # noqa: F401,A004
