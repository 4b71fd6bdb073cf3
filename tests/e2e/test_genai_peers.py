"""The generative engines of bench/compare-generate-serving (bench/genai_peers/ and fusor's in-process
driver): each, under the closed-loop load (C requests in flight, prompts of different lengths),
returns transformers' greedy tokens for every request (models/llama-tiny/greedy_reference.json),
exactly max_new_tokens of them, and never has more than C requests in flight. OpenVINO GenAI runs
ov_convert.py's IR of the export; ONNX Runtime GenAI the export itself (its Generator's static
batches); fusor-inproc fusor serve's scheduler in one process (build/bench/generate_closed_loop);
and fusor serve itself through the C++ client (build/bench/sse_closed_loop), whose text must be
fusor generate's. The peers are skipped where bench/setup-peers has not made their venv."""
import json
import subprocess
from pathlib import Path

import pytest

from conftest import FUSOR, MODELS, ROOT, model_path, run_fusor
from serve_util import Served

PEERS = ROOT / "bench" / "genai_peers"
CONCURRENCY = 4
NEW_TOKENS = 24


def venv_python(name):
    python = ROOT / f".venv-{name}" / "bin" / "python"
    if not python.exists():
        pytest.skip(f".venv-{name} is missing (bench/setup-peers {name} makes it)")
    return python


def reference():
    """Ten prompts of 1 to 50 ids and transformers' greedy tokens after each, cut to NEW_TOKENS."""
    model_path("llama-tiny")
    ref = json.loads((MODELS / "llama-tiny" / "greedy_reference.json").read_text())
    prompts = [p for p in ref["prompts"] if len(p["prompt_ids"]) <= 50][:10]
    assert len({len(p["prompt_ids"]) for p in prompts}) > 5
    return [p["prompt_ids"] for p in prompts], [p["output_ids"][:NEW_TOKENS] for p in prompts]


def run_driver(command, model, prompts, tmp_path, extra=None):
    job = {"model": str(model), "threads": 2, "max_new_tokens": NEW_TOKENS, "warmup": [prompts[0]],
           "levels": [{"concurrency": CONCURRENCY, "prompts": prompts}], **(extra or {})}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    r = subprocess.run([*command, path], capture_output=True, text=True, timeout=300, cwd=PEERS)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])["levels"][0]["requests"]


def check(requests, want):
    assert [r["output_ids"] for r in requests] == want
    check_load(requests)


def check_load(requests):
    assert all(r["tokens"] == NEW_TOKENS for r in requests)
    assert all(r["submit_s"] <= r["first_token_s"] <= r["last_token_s"] for r in requests)
    # At each submission, the requests submitted and not yet finished number at most C.
    for r in requests:
        t = r["submit_s"]
        live = [q for q in requests if q["submit_s"] <= t < q["last_token_s"]]
        assert len(live) <= CONCURRENCY, (t, len(live))


def test_openvino_genai_continuous_batching_gives_transformers_tokens(tmp_path):
    python = venv_python("ovgenai")
    prompts, want = reference()
    ir = tmp_path / "llama-tiny-ovgenai"
    r = subprocess.run([python, PEERS / "ov_convert.py", MODELS / "llama-tiny", ir],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    check(run_driver([python, "ovgenai_driver.py"], ir, prompts, tmp_path), want)


def test_onnxruntime_genai_static_batches_give_transformers_tokens(tmp_path):
    python = venv_python("ortgenai")
    prompts, want = reference()
    check(run_driver([python, "ortgenai_driver.py"], MODELS / "llama-tiny", prompts, tmp_path,
                     {"api": "generator"}), want)


def bench_tool(name):
    tool = Path(FUSOR).resolve().parent / "bench" / name
    assert tool.exists(), f"{tool}: built with fusor (CMakeLists.txt)"
    return tool


def test_fusor_scheduler_in_process_gives_transformers_tokens(tmp_path):
    prompts, want = reference()
    check(run_driver([bench_tool("generate_closed_loop")], MODELS / "llama-tiny", prompts, tmp_path), want)


def test_fusor_in_process_driver_stops_on_a_refused_request_with_one_line(tmp_path):
    prompts, _ = reference()
    prompts[3] = [99999, 5]  # outside the vocabulary
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"model": str(MODELS / "llama-tiny"), "threads": 2, "max_new_tokens": 4,
                               "levels": [{"concurrency": CONCURRENCY, "prompts": prompts}]}))
    r = subprocess.run([bench_tool("generate_closed_loop"), job], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "generate_closed_loop: request 3: token id 99999 is outside the vocabulary [0, 8192)"]


def test_fusor_serve_through_the_cpp_client_gives_fusor_generates_text(tmp_path):
    prompts, _ = reference()
    batch = tmp_path / "prompts.jsonl"
    batch.write_text("".join(json.dumps({"prompt_ids": p}) + "\n" for p in prompts))
    r = run_fusor("generate", MODELS / "llama-tiny", "--batch", batch, "--max-new-tokens", NEW_TOKENS,
                  "--ignore-eos", "--json")
    assert r.returncode == 0, r.stderr
    want = [s["text"] for s in json.loads(r.stdout.strip().splitlines()[-1])["sequences"]]
    server = Served(tmp_path, models=[("llama", MODELS / "llama-tiny")])
    try:
        requests = run_driver([bench_tool("sse_closed_loop"), f"http://{server.url}", "llama"], "unused",
                              prompts, tmp_path)
    finally:
        assert server.stop() == 0, server.output()
    assert [q["text"] for q in requests] == want
    check_load(requests)
