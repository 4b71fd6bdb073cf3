"""io_binding: inputs and outputs bound to caller memory before the run, as in ONNX Runtime.

An output bound to an array (bind_ortvalue_output, or bind_output with a buffer_ptr) is written
straight into it by the executor; an output bound by name only gets a new array per run.
"""
import ctypes

import numpy as np

from fusor import _fusor
from fusor.session import ort_type


def _check_cpu(device_type) -> None:
    if str(device_type).lower() != "cpu":
        raise _fusor.InvalidArgument(f"fusor runs on the CPU only, not on device '{device_type}'")


def _array_at(buffer_ptr: int, element_type, shape) -> np.ndarray:
    """A numpy array over caller memory at `buffer_ptr` (no copy)."""
    dtype = np.dtype(element_type)
    count = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    raw = (ctypes.c_byte * (count * dtype.itemsize)).from_address(int(buffer_ptr))
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)


class OrtValue:
    """A tensor in CPU memory: a numpy array, shared, never copied."""

    def __init__(self, array: np.ndarray):
        self._array = array

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0):
        _check_cpu(device_type)
        return OrtValue(np.ascontiguousarray(numpy_obj))

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0):
        _check_cpu(device_type)
        return OrtValue(np.empty(shape, dtype=element_type))

    def numpy(self) -> np.ndarray:
        return self._array

    def shape(self) -> list:
        return list(self._array.shape)

    def data_type(self) -> str:
        return ort_type("bool" if self._array.dtype == np.bool_ else self._array.dtype.name)

    def element_type(self):
        return self._array.dtype.type

    def data_ptr(self) -> int:
        return self._array.ctypes.data

    def device_name(self) -> str:
        return "cpu"

    def is_tensor(self) -> bool:
        return True

    def has_value(self) -> bool:
        return True


class IOBinding:
    def __init__(self, session):
        self._session = session
        self._inputs = {}
        self._outputs = {}   # name -> caller array, or None: fusor allocates
        self._results = []

    def bind_cpu_input(self, name: str, arr_on_cpu) -> None:
        # A copy, as ONNX Runtime takes: changing the array afterwards does not change the input.
        self._inputs[name] = np.array(arr_on_cpu, copy=True)

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr) -> None:
        _check_cpu(device_type)
        self._inputs[name] = _array_at(buffer_ptr, element_type, tuple(shape))

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        self._inputs[name] = ortvalue.numpy()

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        _check_cpu(device_type)
        if buffer_ptr is None:
            self._outputs[name] = None
        else:
            if element_type is None or shape is None:
                raise _fusor.InvalidArgument(f"output '{name}' bound to a buffer needs its element_type and shape")
            self._outputs[name] = _array_at(buffer_ptr, element_type, tuple(shape))

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        self._outputs[name] = ortvalue.numpy()

    def clear_binding_inputs(self) -> None:
        self._inputs = {}

    def clear_binding_outputs(self) -> None:
        self._outputs = {}
        self._results = []

    def synchronize_inputs(self) -> None:
        """Accepted: CPU memory needs no synchronization."""

    def synchronize_outputs(self) -> None:
        """Accepted: CPU memory needs no synchronization."""

    def get_outputs(self) -> list:
        return [OrtValue(a) for a in self._results]

    def copy_outputs_to_cpu(self) -> list:
        return [a.copy() for a in self._results]

    def _run(self, session) -> None:
        names = session._check_output_names(list(self._outputs)) if self._outputs else session._output_names
        feeds = session._feeds(self._inputs)
        bound = {n: a for n, a in self._outputs.items() if a is not None}
        for n, a in bound.items():
            if not a.flags.c_contiguous or not a.flags.writeable:
                raise _fusor.InvalidArgument(f"output '{n}' must be bound to a writable C-contiguous array")
        outputs = session._with_context(feeds, lambda context: context.run_into(feeds, bound))
        for n, a in bound.items():
            if outputs[n] is not a:
                got = outputs[n]
                raise _fusor.InvalidArgument(
                    f"output '{n}' is bound to a {a.dtype.name} {list(a.shape)} array, but the model gives "
                    f"{got.dtype.name} {list(got.shape)}")
        self._results = [outputs[n] for n in names]
