"""OpenVINO GenAI's form of a decoder export (run with .venv-ovgenai's python): the SAME weights as
the ONNX model, as a stateful OpenVINO IR like the ones optimum-intel writes.

    .venv-ovgenai/bin/python bench/genai_peers/ov_convert.py models/llama-tiny models/llama-tiny-ovgenai

No torch or transformers: openvino.convert_model reads our Optimum-layout ONNX (its frontend fuses the
attention into ScaledDotProductAttention), then the past/present pairs become model state:
  - each past_key_values.N.* feeds a Gather on a new beam_idx input, as optimum-intel's cache
    reorder does; GenAI feeds beam_idx, and SDPAToPagedAttention's pattern expects
    ReadValue -> Gather -> Concat;
  - apply_make_stateful_transformation turns each past/present pair into a ReadValue/Assign;
  - each ReadValue gets a zero-length initial value of the batch's size (that pattern wants a
    ReadValue with an initializer input).
ContinuousBatchingPipeline then converts the SDPAs to PagedAttention itself when it loads the model.
The IR keeps f32 weights (compress_to_fp16=False; save_model would halve them by default). No
tokenizer IR: the drivers feed token ids. The folder is complete once converted_from.json (the source's
size and mtime) is written, last; a changed source model is converted again.
"""
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import openvino as ov
from openvino import opset13 as ops
from openvino._offline_transformations import apply_make_stateful_transformation

PAST = "past_key_values."
STAMP = "converted_from.json"


def source_stamp(onnx_path):
    st = onnx_path.stat()
    return {"source": str(onnx_path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "openvino": ov.get_version()}


def is_current(src_dir, out_dir):
    try:
        return json.loads((out_dir / STAMP).read_text()) == source_stamp(src_dir / "model.onnx")
    except (OSError, ValueError):
        return False


def stateful(model):
    """The model with past_key_values.N.* / present.N.* as state, plus a beam_idx input."""
    past = [i for i in model.inputs if i.get_any_name().startswith(PAST)]
    outputs = {o.get_any_name() for o in model.outputs}
    pairs = {p.get_any_name(): "present." + p.get_any_name()[len(PAST):] for p in past}
    missing = [o for o in pairs.values() if o not in outputs]
    if not past or missing or "input_ids" not in {i.get_any_name() for i in model.inputs}:
        sys.exit(f"ov_convert: not an Optimum-layout decoder (input_ids, {PAST}N.key/value -> "
                 f"present.N.key/value); missing outputs {missing}")
    beam_idx = ops.parameter(ov.PartialShape([-1]), ov.Type.i32, name="beam_idx")
    beam_idx.output(0).get_tensor().set_names({"beam_idx"})
    for p in past:
        node = p.get_node()
        users = list(node.output(0).get_target_inputs())
        reordered = ops.gather(node, beam_idx, ops.constant(0))
        for u in users:
            u.replace_source_output(reordered.output(0))
    model.add_parameters([beam_idx])
    apply_make_stateful_transformation(model, pairs)
    batch = ops.gather(ops.shape_of(model.input("input_ids"), output_type="i64"),
                       ops.constant(np.array([0], np.int64)), ops.constant(0))
    for op in model.get_ops():
        if op.get_type_name() == "ReadValue":
            shape = op.get_output_partial_shape(0)  # [batch, kv_heads, past, head_dim]
            rest = ops.constant(np.array([shape[1].get_length(), 0, shape[3].get_length()], np.int64))
            zeros = ops.broadcast(ops.constant(np.zeros((), np.float32)), ops.concat([batch, rest], 0))
            op.set_arguments([zeros])
    model.validate_nodes_and_infer_types()
    return model


def convert(src_dir, out_dir):
    src_dir, out_dir = Path(src_dir), Path(out_dir)
    onnx_path = src_dir / "model.onnx"
    if not onnx_path.is_file():
        sys.exit(f"ov_convert: {onnx_path} not found (run scripts/get-models)")
    if is_current(src_dir, out_dir):
        print(f"ov_convert: {out_dir} is current", file=sys.stderr)
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / STAMP).unlink(missing_ok=True)
    model = stateful(ov.convert_model(str(onnx_path)))
    sdpa = sum(op.get_type_name() == "ScaledDotProductAttention" for op in model.get_ops())
    if sdpa == 0:
        sys.exit("ov_convert: no ScaledDotProductAttention after conversion; "
                 "ContinuousBatchingPipeline could not page this model")
    ov.save_model(model, str(out_dir / "openvino_model.xml"), compress_to_fp16=False)
    for name in ("config.json", "generation_config.json"):
        if (src_dir / name).is_file():
            shutil.copy(src_dir / name, out_dir / name)
    (out_dir / STAMP).write_text(json.dumps(source_stamp(onnx_path), indent=1) + "\n")
    print(f"ov_convert: wrote {out_dir} ({sdpa} attention layers, f32 weights)", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[3].strip())
    convert(sys.argv[1], sys.argv[2])
