"""MLServer custom runtime: one ONNX Runtime session, the peer that bench/serve-peers serves.

model-settings.json names it as `ort_runtime.OrtRuntime`; `parameters.uri` is the ONNX file and
`parameters.extra` holds `intra_op_threads` (the ORT thread count; bench/serve-peers sets it to
fusor's) and the batching settings `max_batch_size` and `max_batch_time_ms`. The session is what a
user would write: CPU provider, ORT's default graph optimizations, one inter-op thread,
sequential execution. Inputs are decoded and every model output encoded with NumpyCodec, so the
response carries the same tensors as fusor's.

How it batches. MLServer's own adaptive batching must stay off (model-settings `max_batch_size` 1):
it joins requests by concatenating their flat data along axis 0 under the first request's shape,
so requests of unequal lengths either fail to reshape or, when the value counts happen to fit,
are silently cut into the wrong rows; and it splits the answer back into equal parts. This runtime
batches the same way MLServer's batcher does, but pads:
- predict() decodes the request and queues it; one batcher task takes the oldest queued request
  and then waits for more until it holds `max_batch_size` requests or `max_batch_time_ms` has
  passed since it took the first (MLServer's rule and its two settings);
- inputs whose axis 1 is symbolic (the sequence axis) are padded on the right to the longest
  request in the batch, with 0 (so attention_mask is 0 on padding, pad id 0, token type 0), and
  all inputs are concatenated along axis 0;
- one session run on a worker thread (the event loop keeps taking requests meanwhile; the next
  batch forms from those that arrived while this one ran);
- each request gets its own rows back, and every output axis whose symbol is the inputs'
  sequence symbol is cut back to that request's length.
A request whose inputs disagree on their rows or on their sequence length fails alone (400).
"""
import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.errors import MLServerError
from mlserver.types import InferenceRequest, InferenceResponse


def _symbolic(dim):
    return isinstance(dim, str) or dim is None


class _Pending:
    """One queued request: its decoded inputs, its rows and length, and the future for its outputs."""

    def __init__(self, feeds, rows, length, future):
        self.feeds, self.rows, self.length, self.future = feeds, rows, length, future


class OrtRuntime(MLModel):
    async def load(self) -> bool:
        params = self.settings.parameters
        if params is None or not params.uri:
            raise MLServerError(f"model {self.name}: parameters.uri (the ONNX file) is not set")
        if self.settings.max_batch_size > 1:
            raise MLServerError(f"model {self.name}: set max_batch_size 1 (MLServer's batching cannot join "
                                "unequal lengths); this runtime batches with parameters.extra.max_batch_size")
        extra = params.extra or {}
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(extra.get("intra_op_threads", 0))
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self._session = ort.InferenceSession(params.uri, opts, providers=["CPUExecutionProvider"])
        inputs = self._session.get_inputs()
        self._input_names = {i.name for i in inputs}
        # The sequence symbol: axis 1 of the inputs, when it is symbolic (MiniLM: "sequence").
        seq_syms = {i.shape[1] for i in inputs if len(i.shape) >= 2 and _symbolic(i.shape[1])}
        self._seq_symbol = seq_syms.pop() if len(seq_syms) == 1 else None
        self._padded_inputs = {i.name for i in inputs
                               if self._seq_symbol is not None and len(i.shape) >= 2 and i.shape[1] == self._seq_symbol}
        self._output_names = [o.name for o in self._session.get_outputs()]
        self._output_seq_axes = {o.name: [ax for ax, d in enumerate(o.shape) if d == self._seq_symbol]
                                 for o in self._session.get_outputs()} if self._seq_symbol else {}
        self._max_batch_size = max(1, int(extra.get("max_batch_size", 1)))
        self._max_batch_time = max(0.0, float(extra.get("max_batch_time_ms", 0.0))) / 1e3
        self._queue = asyncio.Queue()
        self._batcher = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ort-run")
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
        rows = {a.shape[0] if a.ndim else 1 for a in feeds.values()}
        lengths = {feeds[n].shape[1] for n in self._padded_inputs if feeds[n].ndim >= 2}
        if len(rows) != 1 or len(lengths) > 1:
            raise MLServerError(f"model {self.name}: inputs disagree on rows {sorted(rows)} or lengths "
                                f"{sorted(lengths)}", status_code=400)
        future = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Pending(feeds, rows.pop(), lengths.pop() if lengths else 0, future))
        if self._batcher is None or self._batcher.done():
            self._batcher = asyncio.create_task(self._batch_loop())
        outputs = await future
        return InferenceResponse(
            model_name=self.name,
            model_version=self.version,
            outputs=[NumpyCodec.encode_output(name, v) for name, v in zip(self._output_names, outputs)],
        )

    async def _batch_loop(self):
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._queue.get()]
            start = time.monotonic()
            while len(batch) < self._max_batch_size:
                left = self._max_batch_time - (time.monotonic() - start)
                try:
                    batch.append(self._queue.get_nowait() if not self._queue.empty() or left <= 0 else
                                 await asyncio.wait_for(self._queue.get(), timeout=left))
                except (asyncio.QueueEmpty, asyncio.TimeoutError):
                    break
            try:
                feeds = self._pad_and_join(batch)
                outputs = await loop.run_in_executor(self._executor, self._session.run, self._output_names, feeds)
            except Exception as err:  # the whole batch fails with the session's error
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(err)
                continue
            row = 0
            for p in batch:
                mine = []
                for name, value in zip(self._output_names, outputs):
                    v = np.asarray(value)[row:row + p.rows]
                    for ax in self._output_seq_axes.get(name, []):
                        v = v[(slice(None),) * ax + (slice(0, p.length),)]
                    mine.append(np.ascontiguousarray(v))
                row += p.rows
                if not p.future.done():
                    p.future.set_result(mine)

    def _pad_and_join(self, batch):
        longest = max(p.length for p in batch)
        feeds = {}
        for name in self._input_names:
            parts = []
            for p in batch:
                a = p.feeds[name]
                if name in self._padded_inputs and a.shape[1] < longest:
                    pad = [(0, 0)] * a.ndim
                    pad[1] = (0, longest - a.shape[1])
                    a = np.pad(a, pad, constant_values=0)
                parts.append(a)
            feeds[name] = np.concatenate(parts, axis=0)
        return feeds
