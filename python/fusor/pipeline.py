"""The rest of fusor's pipeline from Python, each returning what the CLI's JSON holds, as plain
dicts and lists: check (the precision gate, `fusor check --report`), profile (`fusor profile
--json`), optimize (`fusor optimize`'s result) and bench (`fusor bench --json`)."""
import json
import numbers
import operator
import os
import shutil
import subprocess
import sysconfig
import tempfile

import numpy as np

from fusor import _fusor
from fusor.options import load_config


def _model(model):
    path = os.fspath(model)
    return path, _fusor.Engine.load(path)


def _options(engine, path, config, gate_if_missing):
    """The CLI's session options for `config`, with the gate's saved verdict applied."""
    options = _fusor.SessionOptions(load_config(config))
    _fusor.apply_precision_verdict(engine, path, options, gate_if_missing)
    return options


def check(model, samples=None, config=None, batch=1, seq=16, shapes=None, edge_cases=True, edge_seqs=(1,),
          edge_batches=(), save_verdict=True, progress=False) -> dict:
    """The precision gate on `model` (docs/check.md): every fusion item against the unfused plan
    and the float64 truth, items rolled back when wrong. Returns the report (`passed`, `items`
    with per-item verdicts, `rolled_back`, `outputs`, ...); the verdict is saved beside the model
    unless save_verdict is False. samples: None (generated) or a list of {input name: array}."""
    path, engine = _model(model)
    cfg = load_config(config)
    given = {k: list(v) for k, v in (shapes or {}).items()}
    sample_list = [{k: np.ascontiguousarray(v) for k, v in s.items()} for s in (samples or [])]
    shapes = dict(given)
    if sample_list:
        shapes.update({k: list(v.shape) for k, v in sample_list[0].items()})
    dims = engine.bind_dims(shapes, batch, seq)
    edge_dims = []
    if edge_cases:  # as fusor check: on generated samples, bound as without `samples`
        for edge in [engine.bind_dims(given, batch, s) for s in edge_seqs] + \
                    [engine.bind_dims(given, b, seq) for b in edge_batches]:
            if edge != dims and edge not in edge_dims:
                edge_dims.append(edge)
    report = _fusor.check(engine, path, cfg, dims, sample_list, edge_cases, edge_dims, save_verdict, progress)
    return json.loads(report)


def profile(model, batch=1, seq=128, shapes=None, runs=10, warmup=2, config=None, by_shape=False,
            quick_ceilings=False, cache_dir="") -> dict:
    """Where one inference spends its time (docs/profile.md): the `fusor profile --json` report."""
    if runs < 1:
        raise _fusor.InvalidArgument(f"runs must be at least 1, got {runs}")
    path, engine = _model(model)
    dims = engine.bind_dims({k: list(v) for k, v in (shapes or {}).items()}, batch, seq)
    options = _options(engine, path, config, gate_if_missing=config is not None)
    report = _fusor.profile(engine, dims, path, batch, seq, runs, warmup, by_shape, options, quick_ceilings,
                            os.fspath(cache_dir))
    return json.loads(report)


def optimize(model, output_path, batch=1, seq=128, shapes=None, config=None) -> dict:
    """Writes the fused model as ONNX to `output_path` (docs/optimize.md); returns what was fused
    and declined, and whether the inputs kept their symbolic dims."""
    path, engine = _model(model)
    options = _options(engine, path, config, gate_if_missing=config is not None)
    return write_optimized(engine, options, output_path, batch, seq, shapes)


def check_writable(output_path) -> str:
    """The path as a str; Fail when its folder does not exist."""
    output_path = os.fspath(output_path)
    parent = os.path.dirname(output_path)
    if parent and not os.path.isdir(parent):
        raise _fusor.Fail(f"cannot write model file '{output_path}': folder {parent} does not exist")
    return output_path


def write_optimized(engine, options, output_path, batch=1, seq=128, shapes=None) -> dict:
    """The engine's plan with these session options, for one binding of its dims, written as
    ONNX: optimize() and a session's optimized_model_filepath."""
    output_path = check_writable(output_path)
    dims = engine.bind_dims({k: list(v) for k, v in (shapes or {}).items()}, batch, seq)
    return _fusor.optimize(engine, dims, options, output_path)


def cli_path() -> str:
    """The `fusor` CLI installed with this package (on PATH in its environment)."""
    beside = os.path.join(sysconfig.get_path("scripts"), "fusor")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("fusor")
    if found is None:
        raise _fusor.Fail("the fusor CLI is not installed beside this package, nor on PATH")
    return found


def bench(model, batch=(1,), seq=128, shapes=None, seconds=3.0, warmup=3, threads=None, config=None) -> dict:
    """Throughput, latency percentiles, kernels and peak memory per batch size: `fusor bench --json`,
    run by the CLI in its own process, so the numbers are the CLI's (and its peak RSS its own)."""
    batches = [batch] if isinstance(batch, int) else list(batch)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        cmd = [cli_path(), "bench", os.fspath(model), "--batch", ",".join(str(b) for b in batches),
               "--seq", str(seq), "--seconds", str(seconds), "--warmup", str(warmup), "--json", out]
        for name, dims in (shapes or {}).items():
            cmd += ["--shape", f"{name}=" + ",".join(str(d) for d in dims)]
        if threads:
            cmd += ["--threads", str(threads)]
        if config is not None:
            cfg = os.path.join(tmp, "config.yaml")
            with open(cfg, "w") as f:
                f.write(load_config(config).yaml())
            cmd += ["--config", cfg]
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise _cli_error(done)
        with open(out) as f:
            return json.load(f)


def _cli_error(done: subprocess.CompletedProcess) -> Exception:
    """The CLI's error line as an exception: InvalidArgument for a usage error (exit 2) or one
    naming a flag ("--batch: '0' must be ..."), else Fail."""
    lines = [ln for ln in done.stderr.splitlines() if ln.strip() and ln != "Run with --help for more information."]
    errors = [ln.removeprefix("fusor: error: ") for ln in lines if ln.startswith("fusor: error: ")]
    message = (errors or lines or [f"fusor bench exited with {done.returncode}"])[-1]
    usage = done.returncode == 2 or message.startswith("--")
    return _fusor.InvalidArgument(message) if usage else _fusor.Fail(message)


def generate(model, prompt=None, prompt_ids=None, max_new_tokens=16, temperature=None, top_k=None, top_p=None,
             repetition_penalty=None, seed=0, stop=(), ignore_eos=False, eos_ids=None, tokenizer=None,
             config=None) -> dict:
    """Text after a prompt with a decoder export (docs/generate.md), as `fusor generate --json`:
    prompt_ids, output_ids, text, finish_reason, ttft_ms, tokens_per_s. Knobs left None take the
    model's generation_config.json values; greedy unless a sampling knob is given or that config
    says do_sample (a temperature of 0 is greedy); stop is None, a string or a list of them; eos_ids
    is None (the model configs'), one id or a list of them; model is a model.onnx or its folder."""
    if (prompt is None) == (prompt_ids is None):
        raise _fusor.InvalidArgument("give the prompt as prompt TEXT or prompt_ids [1, 2, 3] (one of them)")
    max_new_tokens = _integer("max_new_tokens", max_new_tokens, 2**63)
    seed = _integer("seed", seed, 2**64)
    if top_k is not None:
        top_k = _integer("top_k", top_k, 2**31)
    temperature, top_p, repetition_penalty = (
        None if value is None else _real(name, value)
        for name, value in (("temperature", temperature), ("top_p", top_p), ("repetition_penalty", repetition_penalty)))
    if prompt is not None:
        _check_text("prompt", prompt)
    if prompt_ids is not None:
        prompt_ids = _token_ids("prompt_ids", prompt_ids)
    if eos_ids is not None:  # one id, as --eos-id takes it, or a list of them
        eos_ids = _token_ids("eos_ids", [eos_ids] if _is_integer(eos_ids) else eos_ids)
    stop = [] if stop is None else [stop] if isinstance(stop, str) else list(stop)  # one string, not its characters
    for s in stop:
        _check_text("stop", s)
    model_file = _fusor.decoder_model_file(os.fspath(model))
    engine = _fusor.Engine.load(model_file)
    options = _options(engine, model_file, config, gate_if_missing=config is not None)
    return _fusor.generate(engine, model_file, prompt, prompt_ids, max_new_tokens, temperature, top_k, top_p,
                           repetition_penalty, seed, stop, ignore_eos,
                           eos_ids, options, "" if tokenizer is None else os.fspath(tokenizer))


# generate()'s arguments, checked here so that a wrong one is an InvalidArgument naming it, not
# pybind11's list of the C++ signature.

def _is_integer(value) -> bool:
    """A Python or numpy integer, not a bool."""
    return not isinstance(value, bool) and hasattr(value, "__index__")


def _integer(name: str, value, end: int) -> int:
    if _is_integer(value) and 0 <= operator.index(value) < end:
        return operator.index(value)
    raise _fusor.InvalidArgument(f"{name} must be an integer in [0, 2**{end.bit_length() - 1}), not {value!r}")


def _real(name: str, value) -> float:
    """A Python or numpy real number, not a bool or a string; its range is checked by the engine."""
    if isinstance(value, (bool, str, bytes)) or not isinstance(value, numbers.Real):
        raise _fusor.InvalidArgument(f"{name} must be a number, not {value!r}")
    return float(value)


def _token_ids(name: str, ids) -> list:
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise _fusor.InvalidArgument(f"{name} must be a list of token ids, not {ids!r}")
    return [_integer(name, i, 2**31) for i in ids]


def _check_text(name: str, text) -> None:
    if not isinstance(text, str):
        raise _fusor.InvalidArgument(f"{name} must be a str, not {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _fusor.InvalidArgument(f"{name} is not UTF-8 text: {e.reason} at index {e.start}") from None
