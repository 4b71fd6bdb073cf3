"""fusor.InferenceSession against ONNX Runtime's: outputs, model description, options, providers,
the plan cache, and errors typed and worded as promised."""
import warnings

import numpy as np
import pytest

import fusor
from conftest import assert_close, minilm_feed, ort_outputs
from fusor.session import plan_key


def test_minilm_matches_onnx_runtime(minilm):
    feed = minilm_feed(2, 24)
    session = fusor.InferenceSession(str(minilm), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, feed)
    (want,) = ort_outputs(minilm, feed)
    assert_close(got, want)


def test_inputs_and_outputs_carry_symbolic_dims(minilm):
    import onnxruntime
    ours = fusor.InferenceSession(minilm)
    theirs = onnxruntime.InferenceSession(str(minilm), providers=["CPUExecutionProvider"])
    for a, b in [*zip(ours.get_inputs(), theirs.get_inputs()), *zip(ours.get_outputs(), theirs.get_outputs())]:
        assert (a.name, a.shape, a.type) == (b.name, b.shape, b.type)
    assert all(isinstance(d, str) for d in ours.get_inputs()[0].shape)


def test_symbolic_shapes_change_from_run_to_run(minilm):
    session = fusor.InferenceSession(minilm)
    for batch, seq in [(1, 5), (3, 17), (1, 5), (2, 9)]:
        feed = minilm_feed(batch, seq, seed=seq)
        (got,) = session.run(["last_hidden_state"], feed)
        assert got.shape == (batch, seq, 384)
        assert_close(got, ort_outputs(minilm, feed)[0])
    info = session.plan_cache_info()
    assert (info["shapes"], info["hits"], info["misses"], info["plans"]) == (3, 1, 3, 3)
    assert info["last_plan_seconds"] > 0


def test_plan_cache_is_a_bounded_lru(minilm):
    options = fusor.SessionOptions()
    options.add_session_config_entry("fusor.plan_cache_size", "2")
    session = fusor.InferenceSession(minilm, options)
    for seq in [4, 5, 4, 6, 5]:  # 6 evicts 5 (least recently used), so the last 5 plans again
        session.run(None, minilm_feed(1, seq))
    info = session.plan_cache_info()
    assert (info["capacity"], info["shapes"], info["hits"], info["plans"], info["evictions"]) == (2, 2, 1, 4, 2)
    options.plan_cache_size = 0
    options.add_session_config_entry("fusor.plan_cache_size", "0")
    with pytest.raises(fusor.InvalidArgument, match="plan_cache_size must be at least 1"):
        fusor.InferenceSession(minilm, options)


def test_model_from_bytes(tiny_model):
    x = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    from_bytes = fusor.InferenceSession(tiny_model.read_bytes())
    from_path = fusor.InferenceSession(str(tiny_model))
    assert_close(from_bytes.run(None, {"x": x})[0], ort_outputs(tiny_model, {"x": x})[0])
    np.testing.assert_array_equal(from_bytes.run(None, {"x": x})[0], from_path.run(None, {"x": x})[0])
    assert from_bytes.get_modelmeta().producer_name == "fusor-tests"


def test_model_metadata(tiny_model):
    import onnxruntime
    ours = fusor.InferenceSession(tiny_model).get_modelmeta()
    theirs = onnxruntime.InferenceSession(str(tiny_model), providers=["CPUExecutionProvider"]).get_modelmeta()
    for field in ["producer_name", "graph_name", "domain", "description", "graph_description", "version",
                  "custom_metadata_map"]:
        assert getattr(ours, field) == getattr(theirs, field), field


def test_non_contiguous_inputs(tiny_model):
    base = np.random.default_rng(2).standard_normal((16, 6)).astype(np.float32)
    x = base.T  # [6, 16], Fortran order
    assert not x.flags.c_contiguous
    session = fusor.InferenceSession(tiny_model)
    (got,) = session.run(None, {"x": x})
    assert_close(got, ort_outputs(tiny_model, {"x": np.ascontiguousarray(x)})[0])
    strided = np.random.default_rng(3).standard_normal((4, 32)).astype(np.float32)[:, ::2]
    assert_close(session.run(None, {"x": strided})[0], ort_outputs(tiny_model, {"x": strided.copy()})[0])


def test_outputs_own_their_memory_and_inputs_are_not_kept(tiny_model):
    session = fusor.InferenceSession(tiny_model)
    x = np.ones((2, 16), dtype=np.float32)
    (first,) = session.run(None, {"x": x})
    kept = first.copy()
    x[:] = 5
    session.run(None, {"x": x})  # same shape: the same context runs again
    np.testing.assert_array_equal(first, kept)


@pytest.mark.parametrize("name", ["minilm-l6", "resnet18"])
def test_a_batch_of_none_gives_empty_outputs_as_onnx_runtime_does(name):
    """oneDNN divided by zero planning an M = 0 matmul: the process died on SIGFPE."""
    from conftest import model_path
    model = model_path(name)
    feed = minilm_feed(0, 7) if name == "minilm-l6" else {"input": np.zeros((0, 3, 224, 224), np.float32)}
    got = fusor.InferenceSession(model).run(None, feed)
    want = ort_outputs(model, feed)
    assert [(a.shape, a.dtype) for a in got] == [(b.shape, b.dtype) for b in want]


def test_python_numbers_take_the_inputs_type(tiny_model):
    session = fusor.InferenceSession(tiny_model)
    x = [[0.5] * 16, [-1.0] * 16]
    (y,) = session.run(None, {"x": x})
    np.testing.assert_array_equal(y, session.run(None, {"x": np.array(x, np.float32)})[0])
    with pytest.raises(fusor.InvalidArgument, match="must be float32"):
        session.run(None, {"x": [["a"] * 16]})


def identity_model(elem_type, dims):
    from onnx import helper
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", elem_type, dims)],
                              [helper.make_tensor_value_info("y", elem_type, dims)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32"])
def test_python_ints_take_any_integer_inputs_type_where_they_fit(dtype):
    from onnx import helper
    session = fusor.InferenceSession(identity_model(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), [2]))
    (y,) = session.run(None, {"x": [1, 2]})
    assert y.dtype == np.dtype(dtype) and y.tolist() == [1, 2]
    limits = np.iinfo(dtype)
    for outside in (limits.max + 1, limits.min - 1):
        with pytest.raises(fusor.InvalidArgument, match=rf"input 'x' is {dtype}, which cannot hold {outside}"):
            session.run(None, {"x": [0, outside]})


def test_python_ints_into_a_bool_input_are_truth_values_as_in_onnx_runtime():
    from onnx import TensorProto
    session = fusor.InferenceSession(identity_model(TensorProto.BOOL, [3]))
    (y,) = session.run(None, {"x": [0, 1, 2]})
    assert y.dtype == np.bool_ and y.tolist() == [False, True, True]


def test_feeds_in_any_order_share_one_plan(minilm):
    session = fusor.InferenceSession(minilm)
    feed = minilm_feed(1, 9)
    first = session.run(None, feed)[0]
    again = session.run(None, dict(reversed(list(feed.items()))))[0]
    np.testing.assert_array_equal(first, again)
    assert session.plan_cache_info()["misses"] == 1


def test_an_output_asked_for_twice_is_two_arrays(tiny_model):
    session = fusor.InferenceSession(tiny_model)
    a, b = session.run(["y", "y"], {"x": np.ones((1, 16), np.float32)})
    np.testing.assert_array_equal(a, b)
    assert not np.shares_memory(a, b)


def test_output_names_select_and_unknown_ones_fail(tiny_model):
    session = fusor.InferenceSession(tiny_model)
    x = np.zeros((1, 16), dtype=np.float32)
    assert len(session.run(["y"], {"x": x})) == 1
    with pytest.raises(fusor.InvalidArgument, match="model has no output named 'z'"):
        session.run(["z"], {"x": x})
    assert len(session.run(("y",), {"x": x})) == 1 and len(session.run([], {"x": x})) == 1
    for not_a_list in ("y", 5):  # as ONNX Runtime: a TypeError, not a string's characters as names
        with pytest.raises(TypeError, match="output_names must be None or a list"):
            session.run(not_a_list, {"x": x})


def test_a_missing_input_is_a_value_error_as_in_onnx_runtime(minilm):
    session = fusor.InferenceSession(minilm)
    feed = minilm_feed(1, 4)
    del feed["attention_mask"], feed["token_type_ids"]
    with pytest.raises(ValueError, match=r"Required inputs \(\['attention_mask', 'token_type_ids'\]\) are missing "
                                         r"from input feed \(\['input_ids'\]\)") as e:
        session.run(None, feed)
    assert isinstance(e.value, fusor.InvalidArgument)


@pytest.mark.parametrize("feed, message", [
    ({"input": np.zeros((1, 16), np.float32)}, "model has no input named 'input'"),
    ({}, r"Required inputs \(\['x'\]\) are missing from input feed \(\[\]\)"),
    ({"x": np.zeros((1, 16), np.float64)}, r"input 'x' must be float32 \[batch, 16\], got float64 \[1, 16\]"),
    ({"x": np.zeros((1, 15), np.float32)}, r"input 'x' must be float32 \[batch, 16\], got float32 \[1, 15\]"),
    ({"x": np.zeros((16,), np.float32)}, r"input 'x' must be float32 \[batch, 16\], got float32 \[16\]"),
    ({"x": np.array([["a"] * 16])}, r"input 'x' must be float32 \[batch, 16\], got str32 \[1, 16\]"),
])
def test_bad_inputs_raise_invalid_argument_with_one_line(tiny_model, feed, message):
    session = fusor.InferenceSession(tiny_model)
    with pytest.raises(fusor.InvalidArgument, match=message) as e:
        session.run(None, feed)
    assert "\n" not in str(e.value)
    # The ONNX Runtime names catch it too, and so does the common base.
    assert isinstance(e.value, fusor.capi.onnxruntime_pybind11_state.InvalidArgument)
    assert isinstance(e.value, fusor.Error) and isinstance(e.value, RuntimeError)


def test_wrong_dtype_on_a_cached_shape_is_caught_by_the_executor(tiny_model):
    session = fusor.InferenceSession(tiny_model)
    session.run(None, {"x": np.zeros((1, 16), np.float32)})
    with pytest.raises(fusor.InvalidArgument, match=r"input 'x' must be float32 \[1, 16\], got int32 \[1, 16\]"):
        session.run(None, {"x": np.zeros((1, 16), np.int32)})
    with pytest.raises(fusor.InvalidArgument, match="input 'x' has numpy dtype <U1, which fusor has no type for"):
        session.run(None, {"x": np.array([["a"] * 16])})


def test_bad_models_raise_typed_errors(tmp_path):
    with pytest.raises(fusor.InvalidGraph):
        fusor.InferenceSession(b"this is not an onnx model")
    with pytest.raises(fusor.InvalidArgument, match="model file not found: .*missing.onnx"):
        fusor.InferenceSession(str(tmp_path / "missing.onnx"))
    from onnx import TensorProto, helper
    node = helper.make_node("NoSuchOp", ["x"], ["y"], domain="example.custom")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("example.custom", 1)])
    with pytest.raises(fusor.NotImplemented, match="NoSuchOp"):
        fusor.InferenceSession(model.SerializeToString()).run(None, {"x": np.zeros(1, np.float32)})


def test_an_error_naming_bytes_that_are_not_utf8_keeps_its_message():
    """A node named with bytes that are not UTF-8: the exception arrived with an empty message."""
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["y"], name="NODE")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    session = fusor.InferenceSession(model.replace(b"NODE", b"N\xff\xfeE"))
    with pytest.raises(fusor.Error) as e:
        session.run(None, {"x": np.ones((2, 3), np.float32), "s": np.array([4, 4])})
    assert "N\ufffd\ufffdE" in str(e.value) and "Reshape" in str(e.value), str(e.value)


def test_providers():
    assert fusor.get_available_providers() == ["CPUExecutionProvider"]
    assert fusor.get_device() == "CPU"


def test_session_providers_and_unavailable_ones_warn(tiny_model):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session = fusor.InferenceSession(tiny_model, providers=[("CUDAExecutionProvider", {"device_id": 0}),
                                                                "CPUExecutionProvider"])
    assert any("CUDAExecutionProvider" in str(w.message) for w in caught)
    assert session.get_providers() == ["CPUExecutionProvider"]
    assert session.get_provider_options() == {"CPUExecutionProvider": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one name as a string is that name, not its characters
        assert fusor.InferenceSession(tiny_model, providers="CPUExecutionProvider").get_providers() == \
            ["CPUExecutionProvider"]
    session.set_providers(["CPUExecutionProvider"], [{"arena_extend_strategy": "kSameAsRequested"}])
    assert session.get_provider_options() == {"CPUExecutionProvider": {"arena_extend_strategy": "kSameAsRequested"}}
    assert fusor.InferenceSession(tiny_model).get_providers() == ["CPUExecutionProvider"]


@pytest.mark.parametrize("level", list(fusor.GraphOptimizationLevel))
def test_every_optimization_level_matches_onnx_runtime(minilm, level):
    options = fusor.SessionOptions()
    options.graph_optimization_level = level
    options.intra_op_num_threads = 2
    options.inter_op_num_threads = 1
    options.execution_mode = fusor.ExecutionMode.ORT_PARALLEL
    session = fusor.InferenceSession(minilm, options)
    feed = minilm_feed(1, 12)
    assert_close(session.run(None, feed)[0], ort_outputs(minilm, feed)[0])
    context = session._cache.acquire(plan_key(feed))
    fused = context.fusion_items()
    assert (len(fused) > 0) == (level >= fusor.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
    assert session.get_session_options() is options


def test_fusor_config_as_dict_file_or_entry(minilm, tmp_path):
    feed = minilm_feed(1, 8)
    kernels = {}
    for label, config in [("default", None), ("dict", {"fusion": {"fuse_attention": False}})]:
        options = fusor.SessionOptions()
        options.fusor_config = config
        session = fusor.InferenceSession(minilm, options)
        session.run(None, feed)
        kernels[label] = {i["kind"] for i in session._cache.acquire(plan_key(feed)).fusion_items()}
    assert "Attention" in kernels["default"] and "Attention" not in kernels["dict"]
    config = tmp_path / "fusor.yaml"
    config.write_text("fusion:\n  fuse_attention: nope\n")
    options = fusor.SessionOptions()
    options.add_session_config_entry("fusor.config", str(config))
    assert options.get_session_config_entry("fusor.config") == str(config)
    with pytest.raises(fusor.Error, match=r"fusor.yaml:2:\d+: .*fuse_attention"):
        fusor.InferenceSession(minilm, options)
    with pytest.raises(fusor.InvalidArgument, match="no config entry"):
        options.get_session_config_entry("session.nothing")


def test_intra_op_threads_set_the_process_budget(tiny_model):
    from fusor import _fusor
    before = _fusor.compute_threads()
    options = fusor.SessionOptions()
    options.intra_op_num_threads = 1
    fusor.InferenceSession(tiny_model, options)
    assert _fusor.compute_threads() == 1
    _fusor.set_compute_threads(before)
    for bad in (1500, -1, 2.5, "2", True):  # 1500 made 1500 OS threads; 2.5 ran on 2
        options.intra_op_num_threads = bad
        with pytest.raises(fusor.InvalidArgument, match=r"intra_op_num_threads must be an integer in \[0, 1024\]"):
            fusor.InferenceSession(tiny_model, options)
    assert _fusor.compute_threads() == before


@pytest.mark.parametrize("level, fused", [(fusor.GraphOptimizationLevel.ORT_DISABLE_ALL, False),
                                          (fusor.GraphOptimizationLevel.ORT_ENABLE_ALL, True)])
def test_optimized_model_filepath_writes_the_sessions_graph_and_runs_no_gate(tiny_model, tmp_path, level, fused):
    import onnx
    options = fusor.SessionOptions()
    options.graph_optimization_level = level
    options.optimized_model_filepath = str(tmp_path / "written.onnx")
    fusor.InferenceSession(tiny_model, options)
    nodes = len(onnx.load(str(tmp_path / "written.onnx")).graph.node)
    assert (nodes < 5) == fused, nodes
    # As ONNX Runtime: nothing beside the user's model (the gate would save its verdict there).
    assert sorted(p.name for p in tiny_model.parent.iterdir()) == ["model.onnx"]


def test_optimized_model_filepath_waits_for_a_shape_the_model_takes(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    # A kernel wider than seq 128, the default binding: as an audio model's first convolution.
    w = numpy_helper.from_array(np.ones((1, 1, 200), np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "samples"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = fusor.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "written.onnx")
    session = fusor.InferenceSession(model.SerializeToString(), options)
    assert not (tmp_path / "written.onnx").exists()
    (y,) = session.run(None, {"x": np.ones((1, 1, 300), np.float32)})
    assert y.shape == (1, 1, 101)
    assert onnx.load(str(tmp_path / "written.onnx")).graph.node[0].op_type == "Conv"


def test_run_options_and_version():
    r = fusor.RunOptions()
    r.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    assert r.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    assert fusor.get_version_string() == fusor.__version__
    fusor.set_default_logger_severity(3)


def test_onnx_runtime_exception_names():
    state = fusor.capi.onnxruntime_pybind11_state
    with pytest.raises(state.InvalidProtobuf):
        fusor.InferenceSession(b"\x08")
    assert state.RuntimeException is state.EngineError is state.EPFail is fusor.Fail
    # Every exception class ONNX Runtime's module has (1.2x), so `except` clauses naming them evaluate.
    for name in ["DeviceReset", "EPFail", "EngineError", "Fail", "InvalidArgument", "InvalidGraph", "InvalidProtobuf",
                 "ModelLoadCanceled", "ModelLoaded", "ModelRequiresCompilation", "NoModel", "NoSuchFile", "NotFound",
                 "NotImplemented", "RuntimeException"]:
        assert issubclass(getattr(state, name), fusor.Error), name
    with pytest.raises(state.NoSuchFile):
        fusor.InferenceSession("no-such-model.onnx")
