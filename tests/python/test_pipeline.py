"""fusor.check, profile, optimize and bench return what the CLI's JSON holds."""
import json
import subprocess

import numpy as np
import pytest

import fusor
from fusor.pipeline import cli_path


def cli(*args):
    return subprocess.run([cli_path(), *map(str, args)], capture_output=True, text=True, timeout=600)


def test_check_matches_the_cli_report(tiny_model, tmp_path):
    report = fusor.check(tiny_model, batch=2, seq=1, save_verdict=False)
    done = cli("check", tiny_model, "--batch", 2, "--report", tmp_path / "report.json")
    assert done.returncode == 0, done.stderr
    from_cli = json.loads((tmp_path / "report.json").read_text())
    assert report.keys() == from_cli.keys()
    assert report["passed"] is True and report["mode"] == "strict"
    assert [(i["name"], i["status"]) for i in report["items"]] == [(i["name"], i["status"]) for i in from_cli["items"]]
    assert report["items"], "the tiny model has fusion items to check"
    assert report["samples"] == from_cli["samples"]


def test_check_takes_samples_and_catches_a_bad_config(tiny_model):
    samples = [{"x": np.random.default_rng(s).standard_normal((3, 16)).astype(np.float32)} for s in range(2)]
    report = fusor.check(tiny_model, samples=samples, config={"fusion": {"precision_check": "relaxed"}},
                         save_verdict=False)
    assert report["passed"] and report["mode"] == "relaxed" and len(report["samples"]) >= 2
    with pytest.raises(fusor.Error, match="<dict>:1:"):
        fusor.check(tiny_model, config={"fusion": {"no_such_switch": True}}, save_verdict=False)
    # A sample without an input was an IndexError ("map::at") from deep in the gate.
    with pytest.raises(fusor.InvalidArgument, match="a sample has no input 'x'"):
        fusor.check(tiny_model, samples=[{}], save_verdict=False)


def test_profile_matches_the_cli_json(tiny_model, tmp_path):
    report = fusor.profile(tiny_model, batch=4, runs=3, warmup=1, quick_ceilings=True, cache_dir=tmp_path)
    done = cli("profile", tiny_model, "--batch", 4, "--runs", 3, "--warmup", 1, "--quick", "--cache-dir", tmp_path,
               "--json", tmp_path / "profile.json")
    assert done.returncode == 0, done.stderr
    from_cli = json.loads((tmp_path / "profile.json").read_text())
    assert report.keys() == from_cli.keys()
    assert report["batch"] == 4 and report["runs"] == 3
    assert report["kernels_per_inference"] == from_cli["kernels_per_inference"]
    assert {k["name"] for k in report["kernels"]} == {k["name"] for k in from_cli["kernels"]}
    with pytest.raises(fusor.InvalidArgument, match="runs must be at least 1"):
        fusor.profile(tiny_model, runs=0)
    with pytest.raises(fusor.InvalidArgument, match="batch must not be negative, got -1"):  # was Fail, from a tensor
        fusor.profile(tiny_model, batch=-1)


def test_optimize_writes_a_model_onnx_runtime_runs(tiny_model, tmp_path):
    import onnxruntime
    result = fusor.optimize(tiny_model, tmp_path / "fused.onnx", batch=2)
    assert result["nodes_before"] == 5 and result["nodes_after"] < 5 and result["fused"]
    assert result["symbolic_input_dims"] is True
    x = np.random.default_rng(6).standard_normal((5, 16)).astype(np.float32)
    fused = fusor.InferenceSession(tmp_path / "fused.onnx").run(None, {"x": x})[0]
    plain = onnxruntime.InferenceSession(str(tiny_model), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(fused, plain, atol=1e-5, rtol=1e-5)
    with pytest.raises(fusor.Fail, match="does not exist"):
        fusor.optimize(tiny_model, tmp_path / "no" / "such" / "fused.onnx")


def test_bench_is_the_cli_bench_json(tiny_model):
    report = fusor.bench(tiny_model, batch=[1, 4], seconds=0.2, warmup=1)
    assert [r["batch"] for r in report["results"]] == [1, 4]
    first = report["results"][0]
    assert {"throughput_per_s", "latency_ms", "kernels_per_inference", "memory", "peak_rss_bytes"} <= first.keys()
    assert first["throughput_per_s"] > 0 and report["executor"] == "fast"
    with pytest.raises(fusor.Fail, match="model.onnx"):
        fusor.bench(tiny_model.parent / "missing" / "model.onnx", seconds=0.1)


@pytest.mark.parametrize("wrong, message", [(dict(seconds=-1), "--seconds: must be a finite number > 0, got '-1'"),
                                            (dict(batch=0), "--batch: '0' must be a comma-separated list"),
                                            (dict(shapes={"x": [0, 16]}), "--shape x: '0,16' must be")])
def test_bench_gives_the_clis_message_for_a_wrong_argument(tiny_model, wrong, message):
    with pytest.raises(fusor.InvalidArgument, match=message) as e:
        fusor.bench(tiny_model, **{"seconds": 0.1, **wrong})
    assert "--help" not in str(e.value)


def test_generate_matches_the_cli(tmp_path):
    from conftest import model_path
    model = model_path("llama-tiny").parent
    result = fusor.generate(model, prompt="def main():", max_new_tokens=6, ignore_eos=True)
    done = cli("generate", model, "--prompt", "def main():", "--max-new-tokens", 6, "--ignore-eos", "--json")
    assert done.returncode == 0, done.stderr
    from_cli = json.loads(done.stdout)
    assert result.keys() == from_cli.keys()
    for key in ["prompt_ids", "output_ids", "text", "finish_reason"]:
        assert result[key] == from_cli[key], key
    assert len(result["output_ids"]) == 6
    sampled = fusor.generate(model, prompt_ids=result["prompt_ids"], max_new_tokens=4, temperature=0.8, top_k=20,
                             seed=3, ignore_eos=True)
    assert sampled == {**sampled, "output_ids": fusor.generate(model, prompt_ids=result["prompt_ids"],
                                                               max_new_tokens=4, temperature=0.8, top_k=20, seed=3,
                                                               ignore_eos=True)["output_ids"]}
    with pytest.raises(fusor.InvalidArgument, match="one of them"):
        fusor.generate(model, max_new_tokens=2)


def test_generate_stops_at_a_stop_string_not_at_its_characters():
    from conftest import model_path
    model = model_path("llama-tiny").parent
    text = fusor.generate(model, prompt="def main():", max_new_tokens=24, ignore_eos=True)["text"]
    # A stop string one of whose characters comes earlier in the text than the string does.
    stop = next(text[k:k + 3] for k in range(1, len(text) - 3)
                if text.find(text[k:k + 3]) == k and any(c in text[:k] for c in text[k:k + 3]))
    for given in (stop, [stop]):
        result = fusor.generate(model, prompt="def main():", max_new_tokens=24, ignore_eos=True, stop=given)
        assert result["text"] == text[:text.index(stop)] and result["finish_reason"] == "stop", given


def test_generate_with_temperature_0_is_greedy_whatever_else_is_given():
    from conftest import model_path
    model = model_path("llama-tiny").parent
    greedy = fusor.generate(model, prompt="def main():", max_new_tokens=8, ignore_eos=True)["output_ids"]
    for knobs in ({"top_k": 50}, {"top_p": 0.9}, {"top_k": 5, "seed": 7}):
        got = fusor.generate(model, prompt="def main():", max_new_tokens=8, ignore_eos=True, temperature=0, **knobs)
        assert got["output_ids"] == greedy, knobs
    with pytest.raises(fusor.InvalidArgument, match="seed"):
        fusor.generate(model, prompt="def main():", max_new_tokens=2, seed=-1)


def test_generate_takes_the_knobs_left_out_from_generation_config(tmp_path):
    from conftest import model_path
    model = model_path("llama-tiny").parent
    for f in ("model.onnx", "config.json", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / f).symlink_to(model / f)
    (tmp_path / "generation_config.json").write_text(json.dumps({"do_sample": True, "temperature": 0.8, "top_k": 20}))
    args = dict(prompt="def main():", max_new_tokens=6, ignore_eos=True, seed=3)
    sampled = fusor.generate(tmp_path, **args)["output_ids"]
    greedy = fusor.generate(model, **args)["output_ids"]
    assert sampled == fusor.generate(model, temperature=0.8, top_k=20, **args)["output_ids"] and sampled != greedy
    assert fusor.generate(tmp_path, temperature=0, **args)["output_ids"] == greedy


def test_ctrl_c_stops_generate_at_once_not_after_the_last_token():
    import os
    import signal
    import threading
    import time
    from conftest import model_path
    model = model_path("gpt2-tiny").parent
    sent = []
    timer = threading.Timer(0.5, lambda: (sent.append(time.monotonic()), os.kill(os.getpid(), signal.SIGINT)))
    timer.start()
    # About 2.5 s for the 500 tokens on a 2-core machine; the check for signals runs every 50 ms.
    with pytest.raises(KeyboardInterrupt):
        fusor.generate(model, prompt_ids=[1, 2, 3], max_new_tokens=500, ignore_eos=True)
    assert time.monotonic() - sent[0] < 1.0


def test_generate_takes_numpy_seeds_no_stop_and_one_eos_id_and_names_a_wrong_argument():
    from conftest import model_path
    model = model_path("llama-tiny").parent
    args = dict(prompt="def main():", max_new_tokens=3, temperature=0.8, ignore_eos=True)
    want = fusor.generate(model, seed=3, **args)["output_ids"]
    for seed in (np.int64(3), np.uint64(3)):
        assert fusor.generate(model, seed=seed, **args)["output_ids"] == want, type(seed)
    assert fusor.generate(model, seed=3, stop=None, eos_ids=np.int64(2), **args)["output_ids"] == want
    for wrong, message in [(dict(max_new_tokens=2**63), r"max_new_tokens must be an integer in \[0, 2\*\*63\), not"),
                           (dict(seed=1.5), r"seed must be an integer in \[0, 2\*\*64\), not 1.5"),
                           (dict(eos_ids=[-1]), r"eos_ids must be an integer in \[0, 2\*\*31\)"),
                           (dict(prompt="a\ud800"), "prompt is not UTF-8 text: surrogates not allowed at index 1"),
                           (dict(stop=["\udc00"]), "stop is not UTF-8 text"),
                           # pybind11's multi-line TypeError listing the C++ signature, before:
                           (dict(temperature="0.5"), "temperature must be a number, not '0.5'"),
                           (dict(top_k=2.5), r"top_k must be an integer in \[0, 2\*\*31\), not 2.5"),
                           (dict(top_k=2**70), r"top_k must be an integer in \[0, 2\*\*31\)"),
                           (dict(repetition_penalty="1"), "repetition_penalty must be a number, not '1'")]:
        with pytest.raises(fusor.InvalidArgument, match=message):
            fusor.generate(model, **{**args, **wrong})
