"""InferenceSession: ONNX Runtime's session over fusor's Engine.

An Engine is the loaded model; each distinct set of input shapes gets its own plans, kept in a
bounded LRU (plan_cache.py) with one execution context per concurrent run. run() hands numpy
arrays to the engine as views (the executor copies them once, into its arena; only a
non-contiguous array is made contiguous first) and returns numpy arrays over the outputs' own
storage, with the GIL released while the model runs.
"""
import numbers
import os

import numpy as np

from fusor import _fusor, providers as _providers
from fusor.model_metadata import read_metadata, read_metadata_file
from fusor.options import SessionOptions
from fusor.plan_cache import PlanCache

_ORT_TYPE = {"float32": "float", "float64": "double", "bool": "bool"}


def ort_type(fusor_dtype: str) -> str:
    """fusor's dtype name -> ONNX Runtime's type string: "float32" -> "tensor(float)"."""
    return f"tensor({_ORT_TYPE.get(fusor_dtype, fusor_dtype)})"


def _dims_text(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


class NodeArg:
    """A model input or output: name, shape (symbolic dims as their names, None where unknown)
    and type ("tensor(float)")."""

    def __init__(self, info: dict):
        self.name = info["name"]
        self.type = ort_type(info["dtype"])
        self.dtype = info["dtype"]
        if not info["has_shape"]:
            self.shape = None
        else:
            symbols = info["symbols"] or [""] * len(info["dims"])
            self.shape = [d if d >= 0 else (s or None) for d, s in zip(info["dims"], symbols)]
        self._dims = info["dims"]

    def __repr__(self):
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    def __init__(self, fields: dict):
        self.producer_name = fields["producer_name"]
        self.graph_name = fields["graph_name"]
        self.domain = fields["domain"]
        self.description = fields["description"]
        self.graph_description = fields["graph_description"]
        self.version = fields["version"]
        self.custom_metadata_map = fields["custom_metadata_map"]


class InferenceSession:
    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        self._sess_options = sess_options or SessionOptions()  # None or {} (ONNX Runtime takes both)
        opts = self._sess_options
        self._providers, self._provider_options = _providers.resolve(providers, provider_options)
        threads = opts.intra_op_num_threads
        # As the CLI's --threads: 1500 made 1500 OS threads, and 2.5 was cut to 2 without a word.
        if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or not 0 <= threads <= 1024:
            raise _fusor.InvalidArgument(f"intra_op_num_threads must be an integer in [0, 1024], got {threads!r}")
        if threads > 0:
            _fusor.set_compute_threads(int(threads))
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_path = None
            self._model_bytes = bytes(path_or_bytes)
            self._engine = _fusor.Engine.load_bytes(self._model_bytes)
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path = os.fspath(path_or_bytes)
            self._model_bytes = None
            self._engine = _fusor.Engine.load(self._model_path)
        else:
            raise TypeError(f"Unable to load from type '{type(path_or_bytes)}'")
        self._options = opts._engine_options()
        if self._model_path is not None:  # as fusor run: the gate's saved rollbacks apply
            _fusor.apply_precision_verdict(self._engine, self._model_path, self._options)
        self._inputs = [NodeArg(i) for i in self._engine.inputs()]
        self._outputs = [NodeArg(o) for o in self._engine.outputs()]
        self._input_by_name = {i.name: i for i in self._inputs}
        self._output_names = [o.name for o in self._outputs]
        self._cache = PlanCache(opts._plan_cache_size())
        self._optimized_model_path = None  # set while the file waits for the first run's shapes
        if opts.optimized_model_filepath:
            self._write_optimized_model(opts.optimized_model_filepath, None)

    # ---- what the model is

    def get_inputs(self) -> list:
        return list(self._inputs)

    def get_outputs(self) -> list:
        return list(self._outputs)

    def get_overridable_initializers(self) -> list:
        return []

    def get_modelmeta(self) -> ModelMetadata:
        if self._model_path is not None:
            return ModelMetadata(read_metadata_file(self._model_path))
        return ModelMetadata(read_metadata(memoryview(self._model_bytes)))

    def get_providers(self) -> list:
        return list(self._providers)

    def get_provider_options(self) -> dict:
        return {p: dict(o) for p, o in zip(self._providers, self._provider_options)}

    def set_providers(self, providers=None, provider_options=None) -> None:
        self._providers, self._provider_options = _providers.resolve(providers, provider_options)

    def disable_fallback(self) -> None:
        """Accepted: there is no other provider to fall back from."""

    def enable_fallback(self) -> None:
        """Accepted: there is no other provider to fall back to."""

    def get_session_options(self) -> SessionOptions:
        return self._sess_options

    def end_profiling(self) -> str:
        return ""

    def get_profiling_start_time_ns(self) -> int:
        return 0

    def plan_cache_info(self) -> dict:
        """fusor's own: shapes and contexts kept, hits, misses, and how long planning a new shape took."""
        return self._cache.info()

    # ---- running

    def run(self, output_names, input_feed, run_options=None) -> list:
        names = self._check_output_names(output_names)
        feeds = self._feeds(input_feed)
        outputs = self._with_context(feeds, lambda context: context.run(feeds))
        # A name asked for twice gets an array of its own each time, as in ONNX Runtime.
        result, seen = [], set()
        for n in names:
            result.append(outputs[n].copy() if n in seen else outputs[n])
            seen.add(n)
        return result

    def run_with_iobinding(self, iobinding, run_options=None) -> None:
        iobinding._run(self)

    def io_binding(self):
        from fusor.io_binding import IOBinding
        return IOBinding(self)

    # ---- inside

    def _write_optimized_model(self, path, dims) -> None:
        """As ONNX Runtime: the graph this session runs, at its own level, and no gate. fusor plans
        for concrete shapes: batch 1, seq 128, or where the model cannot take those (an audio
        model's length), the first run's shapes."""
        from fusor.pipeline import check_writable, write_optimized
        path = check_writable(path)
        try:
            write_optimized(self._engine, self._options, path, shapes=dims)
            self._optimized_model_path = None
        except _fusor.Error:
            if dims is not None:
                raise
            self._optimized_model_path = path

    def _check_output_names(self, output_names) -> list:
        if output_names is None:
            return self._output_names
        if isinstance(output_names, (str, bytes)) or not hasattr(output_names, "__iter__"):  # as ONNX Runtime
            raise TypeError(f"output_names must be None or a list of output names, not {type(output_names).__name__}")
        output_names = list(output_names)
        if not output_names:
            return self._output_names
        for n in output_names:
            if n not in self._output_names:
                raise _fusor.InvalidArgument(f"model has no output named '{n}'")
        return output_names

    def _feeds(self, input_feed) -> dict:
        """{name: C-contiguous, native-endian ndarray}: array-likes and OrtValues converted, the
        caller's arrays passed through uncopied when they already are."""
        if not isinstance(input_feed, dict):
            raise _fusor.InvalidArgument("input_feed must be a dict {input name: array}")
        feeds = {}
        for name, value in input_feed.items():
            array = value if type(value) is np.ndarray else _as_array(value, self._input_by_name.get(name))
            if not array.flags.c_contiguous or not array.dtype.isnative:
                array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("="))
            feeds[name] = array
        return feeds

    def _with_context(self, feeds: dict, call):
        key = plan_key(feeds)
        context = self._cache.acquire(key)
        if context is None:
            self._check_feeds(feeds)
            dims = {name: list(a.shape) for name, a in feeds.items()}
            context = self._cache.plan(lambda: self._engine.session(dims, self._options))
            if self._optimized_model_path is not None:
                self._write_optimized_model(self._optimized_model_path, dims)
        try:
            return call(context)
        finally:
            self._cache.release(key, context)

    def _check_feeds(self, feeds: dict) -> None:
        """Before planning a new shape: names, dtypes and declared dims, each wrong one as
        InvalidArgument in the executor's words."""
        for name in feeds:
            if name not in self._input_by_name:
                raise _fusor.InvalidArgument(f"model has no input named '{name}'")
        missing = [arg.name for arg in self._inputs if arg.name not in feeds]
        if missing:  # ONNX Runtime's words, and a ValueError as there
            raise _fusor.MissingInput(f"Required inputs ({missing}) are missing from input feed ({list(feeds)}).")
        for arg in self._inputs:
            array = feeds[arg.name]
            dtype = _dtype_name(array)
            declared = arg._dims if arg.shape is not None else None
            fits = declared is None or (len(declared) == array.ndim and
                                        all(d < 0 or d == n for d, n in zip(declared, array.shape)))
            if dtype != arg.dtype or not fits:
                want = _dims_text(arg.shape) if arg.shape is not None else "of any shape"
                raise _fusor.InvalidArgument(f"input '{arg.name}' must be {arg.dtype} {want}, got "
                                             f"{dtype} {_dims_text(array.shape)}")


def plan_key(feeds: dict) -> tuple:
    """The plan cache's key: each input's name and shape, whatever the order of the feed dict."""
    return tuple(sorted((name, a.shape) for name, a in feeds.items()))


def _as_array(value, arg=None) -> np.ndarray:
    if hasattr(value, "numpy") and hasattr(value, "data_ptr"):  # an OrtValue
        return value.numpy()
    array = np.asarray(value)
    if arg is not None and isinstance(value, (list, tuple, int, float, bool)):
        # Python numbers carry no width: they take the input's type, as in ONNX Runtime (numpy
        # makes floats float64), where that keeps their kind (not floats into an int input).
        try:
            want = np.dtype(arg.dtype)
        except TypeError:
            return array  # not a numeric type: the check after says what the input takes
        # Ints into any integer type, if they fit (numpy keeps ints past 64 bits as objects).
        ints = array.dtype.kind in "biu" or (array.dtype.kind == "O" and all(isinstance(v, int) for v in array.flat))
        if ints and want.kind in "iu":
            _check_ints_fit(array, want, arg.name)
            return array.astype(want)
        if ints and want.kind == "b":  # 0 and 1 (any nonzero is true), as ONNX Runtime takes them
            return array.astype(want)
        if np.can_cast(array.dtype, want, casting="same_kind"):
            return array.astype(want)
    return array


def _check_ints_fit(array: np.ndarray, want: np.dtype, name: str) -> None:
    if array.size == 0:
        return
    low, high, limits = int(array.min()), int(array.max()), np.iinfo(want)
    if low < limits.min or high > limits.max:
        bad = low if low < limits.min else high
        raise _fusor.InvalidArgument(f"input '{name}' is {want.name}, which cannot hold {bad} "
                                     f"(its range is [{limits.min}, {limits.max}])")


def _dtype_name(array: np.ndarray) -> str:
    return "bool" if array.dtype == np.bool_ else array.dtype.name
