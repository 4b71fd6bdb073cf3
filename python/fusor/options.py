"""SessionOptions, RunOptions and their enums, as ONNX Runtime spells them, and how they become
fusor's: graph_optimization_level picks the fusion passes, a fusor config (YAML file or dict,
docs/config.md) sets everything else."""
import enum
import json
import os

from fusor import _fusor


class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0       # no fusion, no reordering: the plain plan (shapes still fold)
    ORT_ENABLE_BASIC = 1      # constant and shape folding only: no fusion
    ORT_ENABLE_EXTENDED = 2   # fusion, in the model's step order
    ORT_ENABLE_ALL = 99       # fusion and the memory-aware step order and layouts


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1   # accepted; fusor runs steps in order, each kernel on all threads


class ExecutionOrder(enum.IntEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


# add_session_config_entry keys fusor reads; any other key is kept and ignored (ONNX Runtime's own).
CONFIG_FILE_KEY = "fusor.config"
PLAN_CACHE_KEY = "fusor.plan_cache_size"


class SessionOptions:
    """ONNX Runtime's SessionOptions. fusor's own: `fusor_config` (a YAML file path or a dict in
    its layout) and `plan_cache_size` (shapes whose plans a session keeps)."""

    def __init__(self):
        self.intra_op_num_threads = 0    # > 0: fusor's compute threads (one budget per process)
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.execution_order = ExecutionOrder.DEFAULT
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True     # intermediates share arena bytes (config mem_reuse)
        self.enable_cpu_mem_arena = True
        self.enable_profiling = False
        self.profile_file_prefix = "onnxruntime_profile_"
        self.optimized_model_filepath = ""  # the session's own graph, at batch 1, seq 128
        self.use_deterministic_compute = False
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.fusor_config = None
        self.plan_cache_size = 16
        self._entries = {}

    def add_session_config_entry(self, key: str, value: str) -> None:
        self._entries[str(key)] = str(value)

    def get_session_config_entry(self, key: str) -> str:
        if key not in self._entries:
            raise _fusor.InvalidArgument(f"SessionOptions has no config entry '{key}'")
        return self._entries[key]

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        """Accepted: fusor binds every dimension from the inputs of each run."""

    def register_custom_ops_library(self, library_path: str) -> None:
        raise _fusor.NotImplemented("fusor runs no custom-op libraries: " + library_path)

    # ---- what fusor makes of it

    def _plan_cache_size(self) -> int:
        value = self._entries.get(PLAN_CACHE_KEY, self.plan_cache_size)
        try:
            size = int(value)
        except (TypeError, ValueError):
            raise _fusor.InvalidArgument(f"plan_cache_size must be an integer, got '{value}'") from None
        if size < 1:
            raise _fusor.InvalidArgument(f"plan_cache_size must be at least 1, got {size}")
        return size

    def _config(self):
        return load_config(self._entries.get(CONFIG_FILE_KEY, self.fusor_config))

    def _engine_options(self):
        level = GraphOptimizationLevel(self.graph_optimization_level)
        return _fusor.SessionOptions(self._config(),
                                     fusion=level >= GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                                     reorder=level == GraphOptimizationLevel.ORT_ENABLE_ALL,
                                     mem_reuse=self.enable_mem_reuse and self.enable_mem_pattern)


class RunOptions:
    """ONNX Runtime's RunOptions: accepted; fusor reads none of them."""

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._entries = {}

    def add_run_config_entry(self, key: str, value: str) -> None:
        self._entries[str(key)] = str(value)

    def get_run_config_entry(self, key: str) -> str:
        return self._entries[key]


def load_config(config):
    """None -> defaults; a path -> the YAML file; a dict -> the same keys (docs/config.md)."""
    if config is None:
        return _fusor.Config()
    if isinstance(config, _fusor.Config):
        return config
    if isinstance(config, dict):
        return _fusor.parse_config(json.dumps(config), "<dict>")  # JSON is YAML
    if isinstance(config, (str, os.PathLike)):
        return _fusor.load_config(os.fspath(config))
    raise _fusor.InvalidArgument(f"a fusor config is a file path or a dict, not {type(config).__name__}")
