"""io_binding / run_with_iobinding: outputs written straight into the caller's arrays."""
import numpy as np
import pytest

import fusor
from conftest import assert_close, ort_outputs


def test_outputs_bound_to_arrays_are_written_in_place(tiny_model):
    session = fusor.InferenceSession(tiny_model)
    x = np.random.default_rng(4).standard_normal((3, 16)).astype(np.float32)
    y = fusor.OrtValue.ortvalue_from_shape_and_type([3, 8], np.float32, "cpu", 0)
    binding = session.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_ortvalue_output("y", y)
    session.run_with_iobinding(binding)
    want = ort_outputs(tiny_model, {"x": x})[0]
    assert_close(y.numpy(), want)
    (out,) = binding.get_outputs()
    assert out.data_ptr() == y.data_ptr() and out.shape() == [3, 8] and out.data_type() == "tensor(float)"
    assert_close(binding.copy_outputs_to_cpu()[0], want)


def test_raw_pointers_and_outputs_fusor_allocates(tiny_model):
    session = fusor.InferenceSession(tiny_model)
    x = np.random.default_rng(5).standard_normal((2, 16)).astype(np.float32)
    y = np.full((2, 8), np.nan, dtype=np.float32)
    binding = session.io_binding()
    binding.bind_input("x", "cpu", 0, np.float32, [2, 16], x.ctypes.data)
    binding.bind_output("y", "cpu", 0, np.float32, [2, 8], y.ctypes.data)
    session.run_with_iobinding(binding)
    want = ort_outputs(tiny_model, {"x": x})[0]
    assert_close(y, want)
    binding.clear_binding_outputs()
    binding.bind_output("y")
    binding.synchronize_inputs()
    session.run_with_iobinding(binding)
    binding.synchronize_outputs()
    assert_close(binding.copy_outputs_to_cpu()[0], want)
    binding.clear_binding_inputs()
    with pytest.raises(fusor.MissingInput, match=r"Required inputs \(\['x'\]\) are missing"):
        session.run_with_iobinding(binding)


def test_a_wrongly_shaped_output_buffer_is_an_error(tiny_model):
    session = fusor.InferenceSession(tiny_model)
    binding = session.io_binding()
    binding.bind_ortvalue_input("x", fusor.OrtValue.ortvalue_from_numpy(np.zeros((2, 16), np.float32)))
    binding.bind_ortvalue_output("y", fusor.OrtValue.ortvalue_from_numpy(np.zeros((2, 7), np.float32)))
    with pytest.raises(fusor.InvalidArgument, match=r"output 'y' is bound to a float32 \[2, 7\] array"):
        session.run_with_iobinding(binding)
    with pytest.raises(fusor.InvalidArgument, match="CPU only"):
        binding.bind_output("y", "cuda")


def test_the_session_binding_takes_only_arrays_for_outputs(tiny_model):
    """run_into borrowed a list as a numpy array (undefined behaviour), then called it read-only."""
    from fusor import _fusor
    engine = _fusor.Engine.load(str(tiny_model))
    session = engine.session({"x": [2, 16]}, _fusor.SessionOptions())
    with pytest.raises(fusor.InvalidArgument, match="output 'y' must be bound to a numpy array"):
        session.run_into({"x": np.zeros((2, 16), np.float32)}, {"y": [1, 2]})


def test_a_bound_input_is_copied_as_onnx_runtime_copies_it(tiny_model):
    session = fusor.InferenceSession(tiny_model)
    x = np.ones((1, 16), np.float32)
    binding = session.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("y")
    session.run_with_iobinding(binding)
    first = binding.copy_outputs_to_cpu()[0]
    x[:] = 7  # after binding: the bound input keeps the values it had
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], first)
