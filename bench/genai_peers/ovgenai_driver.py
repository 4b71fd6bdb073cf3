"""OpenVINO GenAI under bench/genai_peers/closed_loop.py's load (run with .venv-ovgenai's python).

The model folder is bench/genai_peers/ov_convert.py's IR. ContinuousBatchingPipeline is OpenVINO
GenAI's serving engine (the one OpenVINO Model Server drives): requests are added between step()s,
each step runs the decode tokens of every running sequence plus prompt chunks (its paged KV cache,
the scheduler's defaults but for the cache size). f32 everywhere: this CPU has AVX-512 BF16, where
OpenVINO would otherwise infer in bf16, and the KV cache would default to a lower precision.
"""
import sys

import numpy as np
import openvino as ov
import openvino_genai as genai

from closed_loop import Level, progress, read_job, write_result

PROPERTIES = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32"}
CACHE_GB = 1  # KV blocks: llama-tiny needs 4 KiB a token, so 1 GB holds 250k tokens


def run_level(pipe, config, level):
    handles = {}

    def submit(ids):
        key = len(handles)
        handles[key] = pipe.add_request(key, ov.Tensor(np.array([ids], np.int64)), config)
        return key

    level.admit(submit)
    while not level.done():
        pipe.step()
        for key in list(level.in_flight):
            h = handles[key]
            if h.can_read():
                for out in h.read().values():
                    level.tokens(key, list(out.generated_ids))
            if h.get_status() != genai.GenerationStatus.RUNNING:
                if h.get_status() != genai.GenerationStatus.FINISHED:
                    sys.exit(f"ovgenai_driver: request {key} ended {h.get_status()}")
                level.finish(key)
        level.admit(submit)
    return level.result()


def main():
    job = read_job(sys.argv)
    scheduler = genai.SchedulerConfig()
    scheduler.cache_size = CACHE_GB
    props = dict(PROPERTIES, INFERENCE_NUM_THREADS=job["threads"])
    pipe = genai.ContinuousBatchingPipeline(job["model"], scheduler, "CPU", props)
    config = genai.GenerationConfig()
    config.max_new_tokens = config.min_new_tokens = job["max_new_tokens"]
    config.ignore_eos = True
    config.do_sample = False
    results = []
    for spec in job["levels"]:
        if job.get("warmup"):
            run_level(pipe, config, Level(job["warmup"], spec["concurrency"]))
        level = run_level(pipe, config, Level(spec["prompts"], spec["concurrency"]))
        tokens = sum(r["tokens"] for r in level["requests"])
        progress(f"ovgenai: concurrency {spec['concurrency']}: {tokens} tokens in {level['wall_s']:.2f} s")
        results.append(level)
    write_result("OpenVINO GenAI", genai.get_version().split("-")[0],
                 "ContinuousBatchingPipeline: add_request between step()s (continuous batching, "
                 f"paged KV cache, default scheduler, cache_size {CACHE_GB} GB), "
                 + ", ".join(f"{k} {v}" for k, v in props.items()), results)


if __name__ == "__main__":
    main()
