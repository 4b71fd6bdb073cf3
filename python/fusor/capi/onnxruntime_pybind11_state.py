"""ONNX Runtime's exception module, by its name: `except onnxruntime.capi.onnxruntime_pybind11_state.Fail`
keeps working after `import fusor as onnxruntime`. Each of ONNX Runtime's finer classes names the
fusor class that covers the same failures (a missing model file is an InvalidArgument in fusor),
so an `except` clause written for any of them evaluates, and catches what fusor raises there."""
from fusor._fusor import Error, Fail, InvalidArgument, InvalidGraph, NotImplemented  # noqa: F401,A004

InvalidProtobuf = InvalidGraph   # the model bytes are no ModelProto
NoModel = InvalidGraph           # no model was loaded
NoSuchFile = InvalidArgument     # the model file does not exist
NotFound = InvalidArgument       # a name (input, output, file) that is not there
RuntimeException = Fail
EngineError = Fail
EPFail = Fail
ModelLoaded = Fail               # fusor raises none of these four: Fail covers them
ModelLoadCanceled = Fail
ModelRequiresCompilation = Fail
DeviceReset = Fail
