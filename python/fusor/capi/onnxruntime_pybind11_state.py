"""ONNX Runtime's exception module, by its name: `except onnxruntime.capi.onnxruntime_pybind11_state.Fail`
keeps working after `import fusor as onnxruntime`. ONNX Runtime's finer classes name the fusor
class that covers the same failures (a missing model file is an InvalidArgument in fusor)."""
from fusor._fusor import Error, Fail, InvalidArgument, InvalidGraph, NotImplemented  # noqa: F401,A004

InvalidProtobuf = InvalidGraph   # the model bytes are no ModelProto
RuntimeException = Fail
EngineError = Fail
EPFail = Fail
