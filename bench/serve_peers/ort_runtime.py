"""MLServer custom runtime: one ONNX Runtime session, the peer that bench/serve-peers serves.

model-settings.json names it as `ort_runtime.OrtRuntime`; `parameters.uri` is the ONNX file and
`parameters.extra.intra_op_threads` the ORT thread count (bench/serve-peers sets it to fusor's).
The session is what a user would write: CPU provider, ORT's default graph optimizations, one
inter-op thread, sequential execution. Inputs are decoded with NumpyCodec (MLServer's adaptive
batcher has already concatenated batched requests along axis 0) and every model output goes back
encoded by NumpyCodec, so the response carries the same tensors as fusor's.
"""
import numpy as np
import onnxruntime as ort
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.errors import MLServerError
from mlserver.types import InferenceRequest, InferenceResponse


class OrtRuntime(MLModel):
    async def load(self) -> bool:
        params = self.settings.parameters
        if params is None or not params.uri:
            raise MLServerError(f"model {self.name}: parameters.uri (the ONNX file) is not set")
        extra = params.extra or {}
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(extra.get("intra_op_threads", 0))
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self._session = ort.InferenceSession(params.uri, opts, providers=["CPUExecutionProvider"])
        self._input_names = {i.name for i in self._session.get_inputs()}
        self._output_names = [o.name for o in self._session.get_outputs()]
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        feeds = {}
        for inp in payload.inputs:
            if inp.name not in self._input_names:
                raise MLServerError(f"model {self.name}: unknown input '{inp.name}'", status_code=400)
            feeds[inp.name] = NumpyCodec.decode_input(inp)
        missing = self._input_names - feeds.keys()
        if missing:
            raise MLServerError(f"model {self.name}: missing inputs {sorted(missing)}", status_code=400)
        outputs = self._session.run(self._output_names, feeds)
        return InferenceResponse(
            model_name=self.name,
            model_version=self.version,
            outputs=[NumpyCodec.encode_output(name, np.asarray(v)) for name, v in zip(self._output_names, outputs)],
        )
