"""fusor check: the precision gate on MiniLM, its report formats, and fault injection that must
be caught at the right tier and rolled back while the rest of the plan stays fused."""
import json
import shutil
from pathlib import Path
import xml.etree.ElementTree as ET

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import pytest

from conftest import model_path, run_fusor

ITEM_KEYS = {"name", "kind", "tier", "max_abs", "max_rel", "ulp", "threshold", "status"}


def check(tmp_path, *extra, timeout=300):
    report, junit = tmp_path / "check.json", tmp_path / "junit.xml"
    r = run_fusor("check", model_path("minilm-l6"), "--seq", 8, "--report", report, "--junit", junit, *extra,
                  timeout=timeout)
    return r, (json.loads(report.read_text()) if report.exists() else None), junit


def layernorm_tail_model(tmp_path):
    """Two fusion items, checked in a second: a decomposed LayerNorm (`layernorm`) over
    x [batch, seq, 32], then y + tanh(0.5 y) (`elementwise`)."""
    rng = np.random.default_rng(0)
    consts = {"two": np.float32(2), "eps": np.float32(1e-5), "g": rng.standard_normal(32).astype(np.float32),
              "b": rng.standard_normal(32).astype(np.float32), "k": np.float32(0.5)}
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1]), helper.make_node("Sub", ["x", "m"], ["c"]),
             helper.make_node("Pow", ["c", "two"], ["p"]), helper.make_node("ReduceMean", ["p"], ["v"], axes=[-1]),
             helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["s"]),
             helper.make_node("Div", ["c", "s"], ["n"]), helper.make_node("Mul", ["n", "g"], ["ng"]),
             helper.make_node("Add", ["ng", "b"], ["y"]), helper.make_node("Mul", ["y", "k"], ["z1"]),
             helper.make_node("Tanh", ["z1"], ["z2"]), helper.make_node("Add", ["z2", "y"], ["out"])]
    x, out = (helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", "seq", 32]) for n in ("x", "out"))
    graph = helper.make_graph(nodes, "ln", [x], [out],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "ln.onnx"
    onnx.save(model, path)
    return path


def save_sample(folder, x):
    folder.mkdir(parents=True)
    np.save(folder / "x.npy", x.astype(np.float32))


def test_clean_model_passes_with_every_item_kept(tmp_path):
    r, rep, junit = check(tmp_path)
    assert r.returncode == 0, r.stderr
    assert rep["passed"] is True and rep["rolled_back"] == [] and rep["mode"] == "strict"
    assert len(rep["items"]) >= 30
    for item in rep["items"]:
        assert ITEM_KEYS <= item.keys() and item["status"] == "kept"
    # Edge cases ran: padding on both sides and fully masked rows.
    assert {"random", "right_padding", "left_padding", "fully_masked"} <= set(rep["samples"])
    assert all(o["passed"] for o in rep["outputs"])
    # ...and the settled plan at sequence length 1 (tier 4 shapes).
    assert any(o["sample"].startswith("shape ") and "[1, 1]" in o["sample"] for o in rep["outputs"])
    suites = ET.parse(junit).getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["fusion items", "model outputs"]
    assert int(suites[0].get("tests")) == len(rep["items"])


def test_list_faults():
    r = run_fusor("check", "--list-faults")
    assert r.returncode == 0
    assert set(r.stdout.split()) == {"wrong_epsilon", "dropped_bias", "reduced_precision", "off_by_one_mask",
                                     "stale_buffer", "wrong_zero_point", "saturating_product", "reversed_rotation"}


def test_reversed_rotary_embedding_is_caught_on_a_decoder(tmp_path):
    """The gate's samples number a decoder's positions as a step does: with every position at 0
    (sin 0 = 0) a rotary embedding turning the wrong way went unseen."""
    shutil.copy(model_path("llama-tiny"), tmp_path / "model.onnx")
    report = tmp_path / "check.json"
    item = "layers1.self_attn.rotary"
    r = run_fusor("check", tmp_path / "model.onnx", "--report", report, "--no-edge-cases",
                  "--inject-fault", f"reversed_rotation@{item}", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(report.read_text())
    assert rep["rolled_back"] == [item] and rep["fault_injected_into"] == item
    bad = next(i for i in rep["items"] if i["name"] == item)
    assert bad["kind"] == "Rotary" and bad["tier"] == 1 and bad["max_abs"] > bad["threshold"]
    assert sum(i["kind"] == "Rotary" and i["status"] == "kept" for i in rep["items"]) == 7


@pytest.mark.parametrize("fault,item,tier", [
    ("wrong_epsilon", "embeddings.layernorm", 1),
    ("dropped_bias", "layer2.output.layernorm", 1),
    ("reduced_precision", "layer0.attention.output.layernorm", 1),
    ("off_by_one_mask", "layer1.attention.self.attention", 4),  # only padded samples expose it
    ("stale_buffer", "embeddings.elementwise", 1),              # the second sample reads the first's result
])
def test_injected_fault_is_caught_and_rolled_back(tmp_path, fault, item, tier):
    edge = [] if tier == 4 else ["--no-edge-cases"]  # tier-1 faults show on ordinary samples
    r, rep, _ = check(tmp_path, "--inject-fault", f"{fault}@{item}", *edge)
    assert r.returncode == 0, r.stdout + r.stderr
    assert rep["passed"] is True
    assert rep["rolled_back"] == [item] and rep["fault_injected_into"] == item
    bad = next(i for i in rep["items"] if i["name"] == item)
    assert bad["status"] == "rolled_back" and bad["tier"] == tier
    assert bad["max_abs"] > bad["threshold"]
    kept = [i for i in rep["items"] if i["status"] == "kept"]
    assert len(kept) >= 30, "the rest of the plan stays fused"
    assert f"rolled back {item}" in r.stdout


def test_fault_without_item_goes_to_the_first_that_fits(tmp_path):
    r, rep, _ = check(tmp_path, "--inject-fault", "wrong_epsilon", "--no-edge-cases")
    assert r.returncode == 0
    assert rep["rolled_back"] == [rep["fault_injected_into"]] and rep["fault_injected_into"].endswith("layernorm")


@pytest.mark.parametrize("args,message", [
    (["--inject-fault", "flip_bits"], "unknown fault kind"),
    (["--inject-fault", "wrong_epsilon@"], "names no item"),
    ([], "give a MODEL"),
    # Exit 1 is a failed gate: these exited 1 too, some only after the whole gate had run.
    (["--seq", "0"], "--seq: '0' must be a positive integer"),
    (["--batch", "0"], "--batch: '0' must be a positive integer"),
    (["--edge-seq", "abc"], "--edge-seq: 'abc' must be a comma-separated list of positive integers"),
    (["--edge-seq", "0"], "--edge-seq: '0'"),
    (["--edge-batch", "0"], "--edge-batch: '0'"),
    (["--samples", "/nonexistent"], "--samples: Directory does not exist: /nonexistent"),
    (["--shape", "y=1,8"], "--shape names 'y', which is not a model input"),
    (["--shape", "input_ids=1,0"], "--shape input_ids"),
    (["--inject-fault", "stale_buffer@nope"], "no fusion item 'nope' takes stale_buffer; the items that do: elementwise, embeddings."),
])
def test_usage_errors_exit_2(args, message):
    extra = [model_path("minilm-l6")] if args else []
    r = run_fusor("check", *extra, *args, timeout=120)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert message in r.stderr and "round 1" not in r.stderr, r.stderr


def test_verdict_is_saved_beside_the_model_and_applied(tmp_path):
    model = tmp_path / "minilm.onnx"
    shutil.copyfile(model_path("minilm-l6"), model)
    r = run_fusor("check", model, "--seq", 8, "--no-edge-cases", timeout=300)
    assert r.returncode == 0, r.stderr
    verdicts = Path(str(model) + ".fusor-verdicts.json")
    saved = json.loads(verdicts.read_text())
    (key, verdict), = saved["verdicts"].items()
    assert verdict == {"passed": True, "rolled_back": [], "evidence": "generated samples"} and "mode=strict" in key

    # run/profile apply the saved rollbacks: pretend the gate had rolled one item back.
    verdict["rolled_back"] = ["embeddings.layernorm"]
    verdicts.write_text(json.dumps(saved))
    report = tmp_path / "p.json"
    r = run_fusor("profile", model, "--seq", 8, "--runs", 1, "--quick", "--json", report, timeout=300)
    assert r.returncode == 0, r.stderr
    p = json.loads(report.read_text())
    assert "embeddings.layernorm" not in [i["name"] for i in p["fusion_items"]]
    assert any("embeddings.layernorm" in d["reason"] and "disabled" in d["reason"] for d in p["not_fused"])

    # With a config that asks for the gate and no verdict for it yet, the gate runs first.
    cfg = tmp_path / "relaxed.yaml"
    cfg.write_text("fusion:\n  precision_check: relaxed\n")
    r = run_fusor("run", model, "--seq", 8, "--config", cfg, "--output-dir", tmp_path / "out", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "running the gate first" in r.stderr
    assert len(json.loads(verdicts.read_text())["verdicts"]) == 2
    r = run_fusor("run", model, "--seq", 8, "--config", cfg, "--output-dir", tmp_path / "out", timeout=300)
    assert r.returncode == 0 and "running the gate first" not in r.stderr

    # A damaged file read as no verdict: the plan the gate had cut down (or failed) ran whole,
    # silently. Without a config that runs the gate, it is now an error naming the file.
    saved = json.loads(verdicts.read_text())
    for entry in saved["verdicts"].values():
        entry["rolled_back"] = "embeddings.layernorm"  # a string, not a list
    verdicts.write_text(json.dumps(saved))
    r = run_fusor("run", model, "--seq", 8, "--output-dir", tmp_path / "out", timeout=300)
    assert r.returncode != 0 and "is damaged" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    # A verdict without its rollbacks read as "none rolled back"; a model_hash of another type was
    # skipped as if there were no file: both ran the whole plan.
    for damage in ({"verdicts": {k: {"passed": True} for k in saved["verdicts"]}}, {"model_hash": 7}):
        verdicts.write_text(json.dumps({**saved, **damage}))
        r = run_fusor("run", model, "--seq", 8, "--output-dir", tmp_path / "out", timeout=300)
        assert r.returncode != 0 and "is damaged" in r.stderr, (damage, r.stderr)
    verdicts.write_text(json.dumps(saved))
    verdicts.write_text(verdicts.read_text() + " x")
    r = run_fusor("run", model, "--seq", 8, "--output-dir", tmp_path / "out", timeout=300)
    assert r.returncode != 0 and "is damaged (not valid JSON)" in r.stderr, r.stderr
    # A folder in its place gave libstdc++'s "basic_filebuf::underflow error", naming no file.
    text = verdicts.read_text()
    verdicts.unlink()
    verdicts.mkdir()
    r = run_fusor("run", model, "--seq", 8, "--output-dir", tmp_path / "out", timeout=300)
    assert r.returncode != 0 and "is damaged (not a regular file)" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    verdicts.rmdir()
    verdicts.write_text(text)
    # With one, the gate runs again and saves a whole verdict in its place.
    r = run_fusor("run", model, "--seq", 8, "--config", cfg, "--output-dir", tmp_path / "out", timeout=300)
    assert r.returncode == 0 and "is damaged" in r.stderr and "running the gate first" in r.stderr, r.stderr
    json.loads(verdicts.read_text())


def test_custom_output_tolerance_and_bad_spec(tmp_path):
    r, rep, _ = check(tmp_path, "--no-edge-cases", "--tolerance", "last_hidden_state=1e-3,1e-2,100000")
    assert r.returncode == 0 and rep["passed"] is True
    # pooler: no such output; 1e30 ULP was cast to int64 (undefined), 2.5 truncated.
    for bad in ("last_hidden_state=abc", "last_hidden_state=nan,nan", "pooler=1,1", "last_hidden_state=1,1,1e30",
                "last_hidden_state=1,1,2.5"):
        r = run_fusor("check", model_path("minilm-l6"), "--tolerance", bad)
        assert r.returncode == 2, (bad, r.stderr)


def test_a_fault_no_item_takes_is_a_usage_error_found_before_the_gate(tmp_path):
    """It printed 'fault injected into nope' and passed; then it ran the whole gate and exited 1."""
    r = run_fusor("check", model_path("minilm-l6"), "--seq", 8, "--inject-fault", "wrong_epsilon@embeddings.elementwise",
                  timeout=120)
    assert r.returncode == 2, r.stderr
    assert "no fusion item 'embeddings.elementwise' takes wrong_epsilon; the items that do: embeddings.layernorm" in r.stderr
    assert "round 1" not in r.stderr, r.stderr


@pytest.mark.parametrize("fault", ["reduced_precision", "stale_buffer"])
def test_edge_shapes_fault_the_same_item(tmp_path, fault):
    """Each edge shape's gate picked the first item still fused: the faulted one rolled back, it
    faulted and rolled back the healthy `elementwise` too, while the report blamed `layernorm`."""
    report = tmp_path / "check.json"
    r = run_fusor("check", layernorm_tail_model(tmp_path), "--inject-fault", fault, "--report", report, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(report.read_text())
    assert rep["fault_injected_into"] == "layernorm" and rep["rolled_back"] == ["layernorm"], rep["rolled_back"]
    assert any(o["sample"].startswith("shape x=[1, 1, 32]") for o in rep["outputs"])
    assert [i["status"] for i in rep["items"] if i["name"] == "elementwise"] == ["kept"]


def test_edge_shapes_are_checked_with_samples(tmp_path):
    """--samples silently dropped --edge-seq and --edge-batch: no shape was checked but the samples'."""
    save_sample(tmp_path / "s", np.random.default_rng(1).standard_normal((1, 4, 32)))
    report = tmp_path / "check.json"
    r = run_fusor("check", layernorm_tail_model(tmp_path), "--samples", tmp_path / "s", "--edge-seq", "1,64",
                  "--edge-batch", 8, "--report", report, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(report.read_text())
    shapes = {o["sample"].rsplit(", ", 1)[0] for o in rep["outputs"]}
    # Bound as without --samples: --batch 1 and --seq 16 unless given.
    assert {"shape x=[1, 1, 32]", "shape x=[1, 64, 32]", "shape x=[8, 16, 32]"} < shapes, shapes
    assert "sample0" in rep["samples"]


def test_samples_of_different_shapes_name_the_sample(tmp_path):
    rng = np.random.default_rng(1)
    save_sample(tmp_path / "s" / "a", rng.standard_normal((1, 4, 32)))
    save_sample(tmp_path / "s" / "b", rng.standard_normal((2, 7, 32)))
    r = run_fusor("check", layernorm_tail_model(tmp_path), "--samples", tmp_path / "s", timeout=120)
    assert r.returncode == 2, r.stderr
    assert f"sample '{tmp_path / 's' / 'b'}': x.npy is [2, 7, 32], sample '{tmp_path / 's' / 'a'}' has [1, 4, 32]: " \
           "samples must share their shapes" in r.stderr, r.stderr


# gpt2-tiny's mask spans past + new tokens under one symbolic name the gate binds to --seq alone.
@pytest.mark.parametrize("model,shapes", [("llama-tiny", []), ("gpt2-tiny", ["--shape", "attention_mask=1,32"])])
def test_kv_cache_item_is_checked_on_decoders(tmp_path, model, shapes):
    """The paged KV cache is checked like an item against the unfused plain loop (docs/check.md)."""
    folder = tmp_path / model  # a private copy: the verdict is saved beside the model
    folder.mkdir()
    for f in Path(model_path(model)).parent.iterdir():
        if f.suffix in (".onnx", ".json") and "fusor-verdicts" not in f.name:
            (folder / f.name).symlink_to(f)
    report = tmp_path / "check.json"
    r = run_fusor("check", folder / "model.onnx", "--no-edge-cases", "--report", report, *shapes, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kv_cache: kept, 3 sequences in one paged cache, 21 steps" in r.stdout, r.stdout
    kv = json.loads(report.read_text())["kv_cache"]
    assert kv["applicable"] and kv["cached"] and kv["passed"], kv
    assert kv["steps_compared"] == 21 and len(kv["sequences"]) == 3
    assert kv["vs_unfused"]["within"] and kv["vs_truth"]["within"]
    assert kv["worst"].startswith("sequence ")
    assert "kv_cache" not in json.loads(report.read_text())["rolled_back"]


def test_kv_cache_item_is_not_applicable_to_an_encoder(tmp_path):
    r, rep, _ = check(tmp_path, "--no-edge-cases")
    assert r.returncode == 0, r.stderr
    assert "kv_cache: not used" in r.stdout
    assert rep["kv_cache"]["applicable"] is False and rep["kv_cache"]["cached"] is False
    assert rep["kv_cache"]["reason"] and "steps_compared" not in rep["kv_cache"]


def test_an_audio_model_is_gated_at_the_lengths_it_takes(tmp_path):
    """wav2vec2's convolutions need hundreds of samples. The gate run first by a command with
    --config ran at the default length 16 and failed, and fusor check's edge length 1 failed the
    whole check: now the command's own --seq is used, a length the model itself cannot take is
    skipped as an edge and reported, and where no length is known the error says what to do."""
    model = tmp_path / "wav2vec2.onnx"
    shutil.copyfile(model_path("wav2vec2-tiny"), model)
    cfg = tmp_path / "gate.yaml"
    cfg.write_text("fusion:\n  precision_check: strict\n")
    r = run_fusor("profile", model, "--config", cfg, "--runs", 1, "--quick", "--json", tmp_path / "p.json", timeout=300)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "cannot run the model at input_values=[1, 16]" in last and "fusor check MODEL" in last, r.stderr

    r = run_fusor("run", model, "--seq", 4000, "--config", cfg, "--output-dir", tmp_path / "out", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "running the gate first" in r.stderr
    Path(str(model) + ".fusor-verdicts.json").unlink()

    report = tmp_path / "check.json"
    r = run_fusor("check", model, "--seq", 4000, "--report", report, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(report.read_text())
    assert got["passed"]
    (skipped,) = got["skipped_edge_shapes"]
    assert skipped.startswith("input_values=[1, 1]: ") and "kernel window" in skipped, skipped


def test_serve_gates_each_matrix_entrys_fusion_switches(tmp_path):
    """A serve.matrix entry's switches replace the top-level ones for its batch bucket, but only
    the top-level config was gated: a bucket ran fusions the gate had never seen (off by 2.5)."""
    from serve_util import Served, tiny_model
    model = tiny_model(tmp_path)
    config = ("fusion: {precision_check: strict, fuse_elemwise: false}\n"
              "serve:\n  matrix:\n    - {max_batch: 8, fusion: {fuse_elemwise: true}}\n")
    s = Served(tmp_path, config, models=[("tiny", model)])
    assert s.stop() == 0, s.output()
    keys = json.loads(Path(str(model) + ".fusor-verdicts.json").read_text())["verdicts"].keys()
    assert {"elemwise=0" in k for k in keys} == {True, False}, keys  # the bucket's config was gated too
