"""fusor: an ONNX inference engine that fuses operators and proves each fusion.

The package speaks ONNX Runtime's Python API, so existing code runs with the import changed:

    import fusor as onnxruntime
    session = onnxruntime.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    outputs = session.run(None, {"input_ids": ids, "attention_mask": mask})

and adds the rest of fusor's pipeline as functions returning plain Python objects (the CLI's JSON):
check (the precision gate), profile, optimize, bench and generate. docs/python.md says what differs.
"""
from fusor._fusor import Error, Fail, InvalidArgument, InvalidGraph, MissingInput, NotImplemented  # noqa: A004
from fusor.io_binding import IOBinding, OrtValue
from fusor.options import ExecutionMode, ExecutionOrder, GraphOptimizationLevel, RunOptions, SessionOptions
from fusor.pipeline import bench, check, generate, optimize, profile
from fusor.providers import get_all_providers, get_available_providers, get_device
from fusor.session import InferenceSession, ModelMetadata, NodeArg
from fusor import capi  # noqa: F401  (onnxruntime.capi.onnxruntime_pybind11_state.Fail and the like)

__version__ = "0.1.0"


def get_version_string() -> str:
    return __version__


def set_default_logger_severity(severity: int) -> None:
    """Accepted for ONNX Runtime compatibility: fusor logs only errors (as exceptions) and warnings."""


__all__ = [
    "Error", "Fail", "InvalidArgument", "InvalidGraph", "MissingInput", "NotImplemented",
    "InferenceSession", "NodeArg", "ModelMetadata", "IOBinding", "OrtValue",
    "SessionOptions", "RunOptions", "GraphOptimizationLevel", "ExecutionMode", "ExecutionOrder",
    "get_available_providers", "get_all_providers", "get_device",
    "check", "profile", "optimize", "bench", "generate", "get_version_string", "set_default_logger_severity",
]
