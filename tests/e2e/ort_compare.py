#!/usr/bin/env python3
"""Compare fusor's outputs with ONNX Runtime's on the same deterministic inputs.

Library (import from tests/e2e):
    make_inputs(model, batch, seq, seed=0) -> {name: ndarray}
    run_ort(model, inputs, threads=2, level="all") -> {output name: ndarray}
    save_npy_dir(dir, arrays) / load_npy_dir(dir, names=None)
    compare(actual, expected, atol=1e-5, rtol=1e-4) -> bool   (dicts or directories)
    fusor_input_args(inputs_dir) -> ["--input", "NAME=PATH", ...]
    run_fusor(fusor, model, inputs_dir, out_dir)

CLI (run with .venv/bin/python, from the repository root):
    ort_compare.py gen MODEL --batch B --seq S --out DIR
        writes DIR/inputs/<input>.npy and DIR/ort/<output>.npy, and prints the fusor command line
    ort_compare.py compare ACTUAL_DIR EXPECTED_DIR
        compares ACTUAL_DIR/<output>.npy with EXPECTED_DIR/<output>.npy; exit 0 on pass, 1 on fail
    ort_compare.py check MODEL --batch B --seq S [--fusor build/fusor] [--out DIR]
        gen, then `fusor run MODEL --input NAME=FILE.npy ... --output-dir DIR/fusor`, then compare

Inputs, deterministic for a given (model, batch, seq, seed):
  - Shapes: a dynamic (symbolic or unknown) dim 0 becomes batch, every other dynamic dim becomes
    seq; static dims keep their value.
  - Inputs are filled in graph-input order from one numpy Generator(PCG64(seed)).
  - Masks (a name containing 'mask', e.g. attention_mask): all ones.
  - token_type_ids (a name containing 'token_type'): zeros.
  - Other integer inputs (token ids): uniform in [0, vocab). vocab is dim 0 of the first Gather
    whose data input is a rank-2 initializer ([vocab, hidden]; the word embedding table in a
    BERT export), 1000 if the model has none.
  - bool inputs: True. Float inputs: standard normal, in the input's dtype.
Tolerance: pass when |a - b| <= atol + rtol * |b| elementwise (b = ONNX Runtime), with NaN only
where ORT has NaN, and shapes equal.
"""
import argparse
import io
import subprocess
import sys
from pathlib import Path

import numpy as np

ATOL = 1e-5
RTOL = 1e-4
DEFAULT_VOCAB = 1000

_ONNX_TO_NP = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
               7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32,
               13: np.uint64}


def _load_graph(model):
    import onnx
    # Weights are needed only for shapes here; skip external data.
    return onnx.load(str(model), load_external_data=False).graph


def embedding_vocab(graph) -> int:
    """dim 0 of the first Gather whose data input is a rank-2 initializer, else DEFAULT_VOCAB."""
    shapes = {t.name: list(t.dims) for t in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value" and a.HasField("t"):
                    shapes[n.output[0]] = list(a.t.dims)
    for n in graph.node:
        if n.op_type == "Gather" and len(shapes.get(n.input[0], [])) == 2:
            return int(shapes[n.input[0]][0])
    return DEFAULT_VOCAB


def input_specs(model):
    """[(name, numpy dtype, shape with None for dynamic dims)] for the real (non-initializer) inputs."""
    g = _load_graph(model)
    inits = {t.name for t in g.initializer}
    specs = []
    for i in g.input:
        if i.name in inits:
            continue
        tt = i.type.tensor_type
        if tt.elem_type not in _ONNX_TO_NP:
            raise ValueError(f"input {i.name}: unsupported element type {tt.elem_type}")
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                for d in tt.shape.dim]
        specs.append((i.name, np.dtype(_ONNX_TO_NP[tt.elem_type]), dims))
    return specs, g


def make_inputs(model, batch, seq, seed=0):
    """Deterministic valid inputs for model at (batch, seq); see the module docstring."""
    specs, g = input_specs(model)
    vocab = None
    rng = np.random.Generator(np.random.PCG64(seed))
    out = {}
    for name, dt, dims in specs:
        shape = tuple((batch if k == 0 else seq) if d is None else d for k, d in enumerate(dims))
        low = name.lower()
        if dt == np.bool_:
            a = np.ones(shape, dtype=dt)
        elif "mask" in low:
            a = np.ones(shape, dtype=dt)
        elif "token_type" in low:
            a = np.zeros(shape, dtype=dt)
        elif np.issubdtype(dt, np.integer):
            if vocab is None:
                vocab = embedding_vocab(g)
            a = rng.integers(0, vocab, size=shape, dtype=np.int64).astype(dt)
        else:
            a = rng.standard_normal(shape, dtype=np.float64).astype(dt)
        out[name] = np.ascontiguousarray(a)
    return out


def ort_session(model, threads=2, level="all"):
    import onnxruntime as ort
    levels = {"all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
              "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
              "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
              "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}
    so = ort.SessionOptions()
    so.graph_optimization_level = levels[level]
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])


def run_ort(model, inputs, threads=2, level="all"):
    """{output name: array} from ONNX Runtime's CPU provider."""
    s = ort_session(model, threads, level)
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(names, inputs)))


def npy_name(name):
    """File name for a tensor, as `fusor run` writes it: '/', '\\' and ':' become '_'."""
    for c in "/\\:":
        name = name.replace(c, "_")
    return name + ".npy"


def save_npy_dir(d, arrays):
    d = Path(d)
    d.mkdir(parents=True, exist_ok=True)
    for name, a in arrays.items():
        np.save(d / npy_name(name), np.ascontiguousarray(a), allow_pickle=False)


def load_npy_dir(d, names=None):
    """{name: array}; names default to the file stems in d (sanitized names stay sanitized)."""
    d = Path(d)
    if names is None:
        return {p.name[:-4]: np.load(p, allow_pickle=False) for p in sorted(d.glob("*.npy"))}
    return {n: np.load(d / npy_name(n), allow_pickle=False) for n in names}


def compare(actual, expected, atol=ATOL, rtol=RTOL, out=sys.stdout) -> bool:
    """Check every expected output against actual; print per-output errors; True if all pass.

    actual, expected: {name: array} or a directory of <name>.npy files (see npy_name). Only
    names in expected are checked; an expected output missing from actual is a failure."""
    if not isinstance(expected, dict):
        expected = load_npy_dir(expected)
    if not isinstance(actual, dict):
        d = Path(actual)
        actual = {n: np.load(d / npy_name(n), allow_pickle=False)
                  for n in expected if (d / npy_name(n)).is_file()}
    if not expected:
        print("compare: no expected outputs", file=out)
        return False
    ok_all = True
    for name, b in expected.items():
        a = actual.get(name)
        if a is None:
            print(f"FAIL {name}: missing from actual outputs", file=out)
            ok_all = False
            continue
        if a.shape != b.shape:
            print(f"FAIL {name}: shape {list(a.shape)} != expected {list(b.shape)}", file=out)
            ok_all = False
            continue
        if a.dtype != b.dtype:
            print(f"note {name}: dtype {a.dtype} vs expected {b.dtype}", file=out)
        a64 = a.astype(np.float64)
        b64 = b.astype(np.float64)
        nan_a, nan_b = np.isnan(a64), np.isnan(b64)
        both = ~(nan_a | nan_b)
        err = np.where(both, np.abs(a64 - b64), 0.0)
        rel = err / np.maximum(np.abs(b64), np.finfo(np.float32).tiny)
        bad = (err > atol + rtol * np.abs(np.where(both, b64, 0.0))) | (nan_a != nan_b)
        nbad = int(bad.sum())
        max_abs = float(err.max()) if err.size else 0.0
        max_rel = float(rel.max()) if rel.size else 0.0
        msg = (f"{'ok  ' if nbad == 0 else 'FAIL'} {name} {list(b.shape)}: max abs err "
               f"{max_abs:.3e}, max rel err {max_rel:.3e}")
        if nbad:
            idx = np.unravel_index(int(np.argmax(np.where(bad, err, -1.0))), b.shape)
            msg += (f"; {nbad}/{b.size} elements out of tolerance, worst at {list(idx)}: "
                    f"got {a64[idx]!r}, expected {b64[idx]!r}")
            ok_all = False
        print(msg, file=out)
    return ok_all


def fusor_input_args(inputs_dir):
    args = []
    for p in sorted(Path(inputs_dir).glob("*.npy")):
        args += ["--input", f"{p.name[:-4]}={p}"]
    return args


def run_fusor(fusor, model, inputs_dir, out_dir, extra=()):
    """Run `fusor run MODEL --input NAME=FILE.npy ... --output-dir out_dir`; raise on failure."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    cmd = [str(fusor), "run", str(model), *fusor_input_args(inputs_dir),
           "--output-dir", str(out_dir), *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}\n{r.stdout}{r.stderr}")
    return r


def ort_u8s8_is_exact():
    """Whether ONNX Runtime multiplies uint8 activations by int8 weights exactly on this CPU. On
    x86 without VNNI its kernels (like oneDNN's) use vpmaddubsw, whose int16 sums of two products
    saturate, so full-range int8 weights give answers that are not the exact ones (seen on AMD
    Zen 3: MatMulInteger outputs off by up to 13184, float outputs by up to 12). fusor declines
    oneDNN's int8 kernels there (src/kernels/cpu/int8_support.h) and stays exact, so tests then
    compare fusor's fast executor with its reference executor, the exact integer arithmetic."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), None)
    except OSError:
        return True
    if flags is None or "sse2" not in flags:
        return True  # not x86: no vpmaddubsw
    return bool({"avx512_vnni", "avx_vnni", "amx_int8"} & set(flags))


U8S8_NOT_EXACT = "ONNX Runtime's uint8 x int8 products saturate on this CPU (x86 without VNNI)"


def run_fusor_reference(fusor, model, inputs_dir, out_dir, names=None):
    """fusor's reference executor's outputs {name: array}: the exact answer where ONNX Runtime's
    is not (ort_u8s8_is_exact)."""
    run_fusor(fusor, model, inputs_dir, out_dir, ["--reference"])
    return load_npy_dir(out_dir, names)


def fusor_matches_ort(fusor, model, data, out_dir, reference=False):
    """Runs fusor on data/inputs (the reference executor when asked) and compares its outputs with
    data/ort; returns (ok, report)."""
    run_fusor(fusor, model, Path(data) / "inputs", out_dir, ["--reference"] if reference else [])
    report = io.StringIO()
    ok = compare(out_dir, Path(data) / "ort", out=report)
    return ok, report.getvalue()


def gen(model, batch, seq, out, seed=0, threads=2):
    """Write out/inputs/*.npy and out/ort/*.npy; return (inputs, ort outputs)."""
    inputs = make_inputs(model, batch, seq, seed)
    outputs = run_ort(model, inputs, threads=threads)
    save_npy_dir(Path(out) / "inputs", inputs)
    save_npy_dir(Path(out) / "ort", outputs)
    return inputs, outputs


def _repo_root():
    return Path(__file__).resolve().parents[2]


def main(argv=None):
    ap = argparse.ArgumentParser(description="fusor vs ONNX Runtime output comparison")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("gen", "check"):
        p = sub.add_parser(name)
        p.add_argument("model")
        p.add_argument("--batch", type=int, default=1)
        p.add_argument("--seq", type=int, default=128)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--threads", type=int, default=2)
        p.add_argument("--out", help="output directory (check: default a temp dir)",
                       required=(name == "gen"))
        if name == "check":
            p.add_argument("--fusor", default=str(_repo_root() / "build" / "fusor"))
            p.add_argument("--atol", type=float, default=ATOL)
            p.add_argument("--rtol", type=float, default=RTOL)
    p = sub.add_parser("compare")
    p.add_argument("actual_dir")
    p.add_argument("expected_dir")
    p.add_argument("--atol", type=float, default=ATOL)
    p.add_argument("--rtol", type=float, default=RTOL)
    a = ap.parse_args(argv)

    if a.cmd == "gen":
        inputs, outputs = gen(a.model, a.batch, a.seq, a.out, a.seed, a.threads)
        for n, x in inputs.items():
            print(f"input  {n}: {x.dtype} {list(x.shape)}")
        for n, x in outputs.items():
            print(f"output {n}: {x.dtype} {list(x.shape)}")
        cmd = ["build/fusor", "run", a.model, *fusor_input_args(Path(a.out) / "inputs"),
               "--output-dir", str(Path(a.out) / "fusor")]
        print("fusor:", " ".join(cmd))
        return 0
    if a.cmd == "compare":
        return 0 if compare(a.actual_dir, a.expected_dir, a.atol, a.rtol) else 1

    import tempfile
    with tempfile.TemporaryDirectory(prefix="ort_compare.") as tmp:
        out = Path(a.out or tmp)
        gen(a.model, a.batch, a.seq, out, a.seed, a.threads)
        print(f"{a.model} batch {a.batch} seq {a.seq}: running fusor", flush=True)
        try:
            run_fusor(a.fusor, a.model, out / "inputs", out / "fusor")
        except (RuntimeError, OSError) as e:
            print(f"FAIL fusor: {e}")
            return 1
        return 0 if compare(out / "fusor", out / "ort", a.atol, a.rtol) else 1


if __name__ == "__main__":
    sys.exit(main())
