"""ONNX Runtime GenAI under bench/genai_peers/closed_loop.py's load (run with .venv-ortgenai's python).

The model folder is the decoder export itself (models/llama-tiny: model.onnx + genai_config.json).
Its serving API is the Engine: requests begin turns between run()s, each run() steps the resident
requests. Continuous batching (engine.dynamic_batching) needs a PagedAttention model, which
onnxruntime-genai 0.18's model builder makes only for CUDA (fp16/bf16) or WebGPU (fp16); on CPU
with f32 the Engine batches statically (engine.static_batching, max_batch_size = the level's
concurrency, one padded KV cache per batch). f32 weights and KV cache: the export's own.
"""
import json
import sys

import numpy as np
import onnxruntime_genai as og

from closed_loop import Level, progress, read_job, write_result


def engine(job, concurrency):
    config = og.Config(job["model"])
    config.overlay(json.dumps({
        "model": {"decoder": {"session_options": {"intra_op_num_threads": job["threads"],
                                                  "inter_op_num_threads": 1}}},
        "engine": {"static_batching": {"max_batch_size": concurrency}}}))
    return og.Engine(og.Model(config))


def run_level(eng, max_new_tokens, level):
    events = eng.create_event_buffer(4 * level.concurrency + 16)
    requests = []  # keeps each Request alive while in flight; the key is its index

    def submit(ids):
        r = eng.create_request()
        turn = og.TurnOptions(r)
        turn.set_do_sample(False)
        turn.set_max_generated_tokens(max_new_tokens)
        turn.set_min_generated_tokens(max_new_tokens)  # masks EOS: exactly N tokens
        r.begin_turn(np.array(ids, np.int32), turn)
        requests.append(r)
        return len(requests) - 1

    def key_of(request):
        return next(k for k in level.in_flight if requests[k] is request)

    level.admit(submit)
    while not level.done():
        finished = []
        for ev in eng.run(events):
            key = key_of(ev.request)
            if ev.flags & og.EngineEventFlags.FAILED:
                sys.exit(f"ortgenai_driver: request {key} failed: {ev.error_code}")
            if ev.flags & og.EngineEventFlags.TOKEN:
                level.tokens(key, [ev.token])
            if ev.flags & og.EngineEventFlags.TURN_FINISHED:
                finished.append(key)
        for key in finished:
            requests[key].close()
            level.finish(key)
        level.admit(submit)
    return level.result()


def main():
    job = read_job(sys.argv)
    results = []
    for spec in job["levels"]:
        eng = engine(job, spec["concurrency"])
        if job.get("warmup"):
            run_level(eng, job["max_new_tokens"], Level(job["warmup"], spec["concurrency"]))
        level = run_level(eng, job["max_new_tokens"], Level(spec["prompts"], spec["concurrency"]))
        tokens = sum(r["tokens"] for r in level["requests"])
        progress(f"ortgenai: concurrency {spec['concurrency']}: {tokens} tokens in {level['wall_s']:.2f} s")
        results.append(level)
        del eng
    write_result("ONNX Runtime GenAI", og.__version__,
                 "Engine with engine.static_batching (max_batch_size = concurrency): continuous "
                 "batching needs PagedAttention, CUDA/WebGPU fp16 only; intra_op_num_threads "
                 f"{job['threads']}", results)


if __name__ == "__main__":
    main()
