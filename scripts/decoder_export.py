"""Export of a transformers causal LM in the Hugging Face / Optimum decoder layout, shared by the
decoders of scripts/decoder_zoo.py (issue #16), and its checks against torch with ONNX Runtime.

Layout, L = layers, H = KV heads, D = head dim:
  inputs   input_ids int64 [batch, seq], attention_mask int64 [batch, past + seq],
           position_ids int64 [batch, seq], past_key_values.N.key/value f32 [batch, H, past, D]
  outputs  logits f32 [batch, seq, vocab], present.N.key/value f32 [batch, H, past + seq, D]
The first step feeds a zero-length past. The merged variant (merge_decoders) adds a bool input
use_cache_branch [1] and one If: false runs the export without past inputs (the past fed is
ignored; feed a zero-length one), true the export with them, as Optimum's merged decoders do.
"""
import hashlib

from model_tools import check_close, export, log, op_histogram, ort_run

OPSET = 17
USE_CACHE_BRANCH = "use_cache_branch"


def decoder_dims(cfg):
    """(layers, KV heads, head dim, vocab) of a transformers config (Llama or GPT-2), or of its
    config.json as a dict."""
    get = (lambda k, d=None: cfg.get(k, d)) if isinstance(cfg, dict) else \
        (lambda k, d=None: getattr(cfg, k, d))
    layers = get("num_hidden_layers") or get("n_layer")
    heads = get("num_attention_heads") or get("n_head")
    hidden = get("hidden_size") or get("n_embd")
    return layers, get("num_key_value_heads") or heads, hidden // heads, get("vocab_size")


def io_names(layers, with_past=True):
    kv = [f"{i}.{t}" for i in range(layers) for t in ("key", "value")]
    ins = ["input_ids", "attention_mask", "position_ids"]
    return (ins + ([f"past_key_values.{n}" for n in kv] if with_past else []),
            ["logits"] + [f"present.{n}" for n in kv])


def feeds(batch, seq, past, seed, dims):
    """Valid decoder inputs: positions continue after the past, the mask covers past + seq."""
    import numpy as np
    layers, kv_heads, head_dim, vocab = dims
    rng = np.random.Generator(np.random.PCG64(seed))
    f = {"input_ids": rng.integers(0, vocab, (batch, seq), dtype=np.int64),
         "attention_mask": np.ones((batch, past + seq), dtype=np.int64),
         "position_ids": np.tile(np.arange(past, past + seq, dtype=np.int64), (batch, 1))}
    for i in range(layers):
        for t in ("key", "value"):
            f[f"past_key_values.{i}.{t}"] = rng.standard_normal(
                (batch, kv_heads, past, head_dim)).astype(np.float32)
    return f


def _flat(lm, layers, with_past):
    """Flat tensors in and out (the exporter's view of the nested past_key_values tuples)."""
    import torch

    class Flat(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = lm

        def forward(self, input_ids, attention_mask, position_ids, *past):
            pkv = None
            if with_past:
                pkv = tuple((past[2 * i], past[2 * i + 1]) for i in range(layers))
            o = self.lm(input_ids=input_ids, attention_mask=attention_mask,
                        position_ids=position_ids, past_key_values=pkv, use_cache=True,
                        return_dict=True)
            return (o.logits, *[t for kv in o.past_key_values for t in kv])

    return Flat().eval()


def _check(tmp, flat, name, f, extra=None):
    """ONNX Runtime on tmp (fed f plus extra) vs the torch module on f: every output within
    |a-b| <= 1e-4 + 1e-4*|b|."""
    import numpy as np
    import torch
    with torch.no_grad():
        want = flat(*[torch.from_numpy(v) for v in f.values()])
    got = ort_run(tmp, {**f, **(extra or {})})
    worst = 0.0
    for g, w, out in zip(got, want, io_names(len(want) // 2)[1]):
        w = w.numpy()
        if not np.all(np.abs(g - w) <= 1e-4 + 1e-4 * np.abs(w)):
            check_close(f"{name} {out}", g, w, 1e-4, 1e-4)  # logs the error and exits
        worst = max(worst, float(np.abs(g - w).max()))
    log(f"  {name}: ORT vs torch max abs err {worst:.3e} over {len(got)} outputs -> ok")


def export_decoder(lm, path, name, with_past=True):
    """Exports lm into path's temporary file and checks it with ORT against torch at past 0 (a
    prompt) and past 7 (a decode step; skipped without past inputs); returns the temporary path.
    Traced with a non-empty past, so no size-0 special case is baked into the graph."""
    import torch
    dims = decoder_dims(lm.config)
    layers = dims[0]
    flat = _flat(lm, layers, with_past)
    ins, outs = io_names(layers, with_past)
    trace = feeds(2, 5, 3 if with_past else 0, 0, dims)
    if not with_past:
        trace = {k: v for k, v in trace.items() if k in ins}
    axes = {"input_ids": {0: "batch_size", 1: "sequence_length"},
            "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
            "position_ids": {0: "batch_size", 1: "sequence_length"},
            "logits": {0: "batch_size", 1: "sequence_length"}}
    axes.update({n: {0: "batch_size", 2: "past_sequence_length"} for n in ins[3:]})
    axes.update({n: {0: "batch_size", 2: "total_sequence_length"} for n in outs[1:]})
    tmp, m = export(flat, tuple(torch.from_numpy(v) for v in trace.values()), path,
                    input_names=ins, output_names=outs, dynamic_axes=axes, opset_version=OPSET)
    log(f"  {op_histogram(m)}")
    for batch, seq, past in ((1, 7, 0), (3, 1, 7)) if with_past else ((1, 7, 0),):
        f = feeds(batch, seq, past, 1, dims)
        if not with_past:
            f = {k: v for k, v in f.items() if k in ins}
        _check(tmp, flat, f"{name} batch {batch} seq {seq} past {past}", f)
    return tmp


# ------------------------------------------------------------------------------------ merging

def _rename_graph(g, prefix, keep):
    """Prefixes every value and node name in g except those in keep (outer-scope names)."""
    def ren(n):
        return n if (not n or n in keep) else prefix + n
    for node in g.node:
        if any(a.g.node or a.graphs for a in node.attribute):
            raise SystemExit("get-models: merge_decoders: nested subgraphs are not handled")
        node.input[:] = [ren(n) for n in node.input]
        node.output[:] = [ren(n) for n in node.output]
        node.name = prefix + node.name
    for o in g.output:
        o.name = ren(o.name)
    del g.value_info[:]


def _tensor_key(t):
    """The tensor's content, without its name."""
    import onnx
    c = onnx.TensorProto()
    c.CopyFrom(t)
    c.name = ""
    return hashlib.sha256(c.SerializeToString(deterministic=True)).hexdigest()


def merge_decoders(no_past, with_past):
    """One ModelProto: Optimum's merged decoder from the two exports (onnx ModelProtos with the
    same weights). Initializers move to the outer graph, deduplicated by content (the exporter
    names folded weights differently in each export); each branch's own values get a prefix so
    that names stay unique across scopes."""
    import onnx
    from onnx import TensorProto, helper
    shared, inits = {}, []
    rename = [{}, {}]
    for k, (m, prefix) in enumerate(((with_past, ""), (no_past, "no_past/"))):
        for t in m.graph.initializer:
            key = _tensor_key(t)
            if key not in shared:
                new = onnx.TensorProto()
                new.CopyFrom(t)
                new.name = prefix + t.name
                shared[key] = new.name
                inits.append(new)
            rename[k][t.name] = shared[key]
    branches = []
    for k, (m, prefix) in enumerate(((with_past, "with_past/"), (no_past, "no_past/"))):
        g = onnx.GraphProto()
        g.CopyFrom(m.graph)
        for node in g.node:  # initializer names first, so the prefixing below keeps them
            node.input[:] = [rename[k].get(n, n) for n in node.input]
        outer = {i.name for i in with_past.graph.input} | {t.name for t in inits}
        _rename_graph(g, prefix, outer)
        del g.input[:]
        del g.initializer[:]
        g.name = prefix.rstrip("/")
        branches.append(g)
    top_in = list(with_past.graph.input) + [
        helper.make_tensor_value_info(USE_CACHE_BRANCH, TensorProto.BOOL, [1])]
    node = helper.make_node("If", [USE_CACHE_BRANCH], [o.name for o in with_past.graph.output],
                            name="optimum::if", then_branch=branches[0], else_branch=branches[1])
    graph = helper.make_graph([node], "merged_decoder", top_in, list(with_past.graph.output),
                              initializer=inits)
    merged = helper.make_model(graph, opset_imports=list(with_past.opset_import),
                               producer_name="fusor scripts/decoder_export.py")
    merged.ir_version = with_past.ir_version
    onnx.checker.check_model(merged, full_check=True)
    return merged


def export_merged(lm, path, name):
    """The merged decoder into path's temporary file, checked with ORT against torch: the no-past
    branch on a prompt, the past branch on a decode step after 7; returns the temporary path."""
    import numpy as np
    import onnx
    a = export_decoder(lm, path.with_name("no_past.onnx"), f"{name} (no-past branch)", False)
    b = export_decoder(lm, path.with_name("with_past.onnx"), f"{name} (past branch)")
    merged = merge_decoders(onnx.load(str(a)), onnx.load(str(b)))
    a.unlink()
    b.unlink()
    tmp = path.with_suffix(".onnx.tmp")
    onnx.save(merged, str(tmp))
    log(f"  merged: {len(merged.graph.initializer)} shared initializers, "
        f"branches of {len(merged.graph.node[0].attribute[0].g.node)} and "
        f"{len(merged.graph.node[0].attribute[1].g.node)} nodes")
    dims = decoder_dims(lm.config)
    layers = dims[0]
    for batch, seq, past, branch in ((1, 7, 0, False), (3, 1, 7, True)):
        f = feeds(batch, seq, past, 1, dims)
        flat = _flat(lm, layers, with_past=branch)
        # the no-past branch's torch module takes no past tensors; ORT still gets the empty ones
        torch_f = f if branch else {k: v for k, v in f.items() if k in io_names(layers, False)[0]}
        extra = {USE_CACHE_BRANCH: np.array([branch])}
        if not branch:
            extra.update({k: v for k, v in f.items() if k not in torch_f})
        _check(tmp, flat, f"{name} use_cache_branch {branch} batch {batch} past {past}",
               torch_f, extra)
    return tmp
