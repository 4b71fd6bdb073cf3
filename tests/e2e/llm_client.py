"""Drives an OpenAI-compatible server with aiperf, NVIDIA's LLM serving benchmark client, and reads
its result files (issue #17: a real client, unchanged, against `fusor serve`).

aiperf lives in its own venv, .venv-llmbench (scripts/llmbench/install, run by scripts/setup).
It makes synthetic prompts of exactly `input_tokens` tokens with the model's own tokenizer (a
local folder: no model hub), asks for `output_tokens` with `ignore_eos` (vLLM's extension) so that
every request runs to its max_tokens, and measures TTFT and inter-token latency per request.

    summary = run("http://127.0.0.1:8000", "llama", "models/llama-tiny", Load(concurrency=4), out_dir)
"""
import dataclasses
import json
import os
import pathlib
import re
import signal
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
AIPERF = ROOT / ".venv-llmbench" / "bin" / "aiperf"


@dataclasses.dataclass
class Load:
    concurrency: int = 4
    requests: int = 24
    input_tokens: int = 32
    output_tokens: int = 16
    streaming: bool = True
    endpoint: str = "completions"  # or "chat"
    warmup_requests: int = 0
    seed: int = 7
    # Count output tokens from the server's `usage` rather than by re-tokenizing the text that came
    # back: decoded text does not re-encode to the same tokens in general (a small random-weight
    # model's output least of all), and ITL and tokens/s are per generated token.
    server_token_count: bool = True
    extra: dict = dataclasses.field(default_factory=dict)  # more request fields, e.g. temperature
    request_timeout_s: float = 120  # a request that takes longer is an error, not a hang


def command(base_url, model, tokenizer, load, out_dir, server_metrics_url=None):
    """aiperf's command line for one run (a list, for subprocess)."""
    args = [
        str(AIPERF), "profile",
        "--model", model, "--url", base_url, "--endpoint-type", load.endpoint,
        "--tokenizer", str(pathlib.Path(tokenizer).resolve()),
        "--isl", str(load.input_tokens), "--isl-stddev", "0",
        "--osl", str(load.output_tokens), "--osl-stddev", "0",
        "--concurrency", str(load.concurrency), "--request-count", str(load.requests),
        "--random-seed", str(load.seed), "--request-timeout-seconds", str(load.request_timeout_s),
        "--ui-type", "none", "--no-gpu-telemetry",
        "--artifact-dir", str(out_dir),
    ]
    if load.streaming:
        args.append("--streaming")
    if load.server_token_count:
        args.append("--use-server-token-count")
    if load.endpoint == "chat":
        # aiperf sends chat's output limit as max_completion_tokens unless told otherwise; both
        # names are OpenAI's, and the plain one is what every server (vLLM, TGI, fusor) reads.
        args.append("--use-legacy-max-tokens")
    if load.warmup_requests:
        args += ["--warmup-request-count", str(load.warmup_requests)]
    extra = {"ignore_eos": True, **load.extra}
    args += ["--extra-inputs", json.dumps(extra)]
    # aiperf scrapes base_url/metrics unless told where; fusor serves /metrics on its own port.
    args += ["--server-metrics", server_metrics_url] if server_metrics_url else ["--no-server-metrics"]
    return args


def run(base_url, model, tokenizer, load, out_dir, server_metrics_url=None, timeout=900):
    """Runs aiperf once; returns summarize(out_dir). Raises with the end of its log if it fails."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    args = command(base_url, model, tokenizer, load, out_dir, server_metrics_url)
    # The tokenizer is a local folder; keep huggingface_hub from phoning home for anything else.
    # Without HF_HUB_OFFLINE (other e2e modules set it for transformers): with it aiperf 0.13
    # looks the tokenizer up in the hub's cache and refuses a local folder. It never reaches
    # the network for a folder path either way.
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update({"HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false"})
    log = out_dir / "aiperf.out"
    with open(log, "w") as f:
        # aiperf runs as a family of processes (workers, record processors): its own session, so
        # that a run past `timeout` ends with all of them.
        proc = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = f"nothing in {timeout} s (killed)"
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    if code != 0 or not (out_dir / "profile_export_aiperf.json").exists():
        tail = log.read_text()[-4000:]
        raise RuntimeError(f"aiperf exited {code}: {' '.join(args)}\n{tail}")
    return summarize(out_dir)


def _stat(metrics, name, stat):
    m = metrics.get(name)
    return None if m is None else m.get(stat)


def summarize(out_dir):
    """The numbers of one aiperf run, from its aggregate JSON and its per-request JSONL:

    requests (answered without error), errors, error_messages, ttft_ms_p50/p99, itl_ms_p50/p99
    (None when not streaming), output_tokens_per_s (all requests' output tokens over the
    benchmark's duration), request_latency_ms_p50/p99, duration_s, and per_request: for each
    request answered, the server's usage counts (prompt_tokens, completion_tokens), aiperf's counts
    (input_tokens: of the prompt it made; output_tokens: the server's, or of the text that came
    back without Load.server_token_count) and the request body it sent (body).
    """
    out_dir = pathlib.Path(out_dir)
    agg = json.loads((out_dir / "profile_export_aiperf.json").read_text())
    records = []
    for line in (out_dir / "profile_export.jsonl").read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            if r["metadata"].get("benchmark_phase", "profiling") == "profiling":
                records.append(r)
    errors = [r["error"] for r in records if r.get("error")]
    sent = {d["session_id"]: d["payloads"][0] for d in json.loads((out_dir / "inputs.json").read_text())["data"]}

    def value(r, name):
        m = r["metrics"].get(name)
        return None if m is None else m["value"]

    per_request = [
        {
            "prompt_tokens": value(r, "usage_prompt_tokens"),
            "completion_tokens": value(r, "usage_completion_tokens"),
            "input_tokens": value(r, "input_sequence_length"),
            "output_tokens": value(r, "output_sequence_length"),
            "body": sent.get(r["metadata"].get("conversation_id")),
        }
        for r in records
        if not r.get("error")
    ]
    return {
        "requests": len(per_request),
        "errors": len(errors),
        "error_messages": sorted({f"{e.get('code')} {e.get('message')}" for e in errors}),
        "ttft_ms_p50": _stat(agg, "time_to_first_token", "p50"),
        "ttft_ms_p99": _stat(agg, "time_to_first_token", "p99"),
        "itl_ms_p50": _stat(agg, "inter_token_latency", "p50"),
        "itl_ms_p99": _stat(agg, "inter_token_latency", "p99"),
        "output_tokens_per_s": _stat(agg, "output_token_throughput", "avg"),
        "request_latency_ms_p50": _stat(agg, "request_latency", "p50"),
        "request_latency_ms_p99": _stat(agg, "request_latency", "p99"),
        "duration_s": _stat(agg, "benchmark_duration", "avg"),
        "per_request": per_request,
    }


def counter(metrics_text, name, **labels):
    """The sum of a counter's samples whose labels include `labels` (0 when there are none)."""
    total = 0.0
    for m in re.finditer(rf"^{re.escape(name)}\{{([^}}]*)\}} (\S+)$", metrics_text, re.M):
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(m.group(2))
    return total
