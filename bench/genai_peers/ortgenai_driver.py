"""ONNX Runtime GenAI under bench/genai_peers/closed_loop.py's load (run with .venv-ortgenai's python).

The model folder is bench/genai_peers/ortgenai_build.py's (the model builder's form of the weights,
f32) or the decoder export itself (models/llama-tiny: model.onnx + genai_config.json); f32 weights
and KV cache either way. onnxruntime-genai 0.18 has no continuous batching for this model: its
Engine batches continuously (engine.dynamic_batching) only a PagedAttention model, which its model
builder makes for CUDA (fp16/bf16) or WebGPU (fp16) alone. On CPU it batches statically, two ways
(job "api"):
  generator  (default) a Generator over a batch (batch_size = up to C waiting requests, padded on the
             right with pad_token_id to the longest prompt, which it masks), run until every
             sequence has its N tokens; the next batch starts when it ends. Every request asks
             for N tokens, so a batch is the C requests in flight.
  engine     the Engine with engine.static_batching.max_batch_size = C. In 0.18 it steps at most 4
             requests at a time whatever max_batch_size says (the rest wait for the batch to end).
With the export itself, the Engine returns wrong tokens for the shorter prompts of a batch of
unequal lengths (checked against transformers' and fusor's greedy tokens): it masks each row as the
model builder's GroupQueryAttention layout needs (a KV buffer written at the sequence's own
length), while an Optimum export concatenates after the padding. The Generator's batches, and the
builder's model either way, come back right.
"""
import json
import sys

import numpy as np
import onnxruntime_genai as og

from closed_loop import Level, progress, read_job, write_result


def model(job, concurrency):
    config = og.Config(job["model"])
    config.overlay(json.dumps({
        "model": {"decoder": {"session_options": {"intra_op_num_threads": job["threads"],
                                                  "inter_op_num_threads": 1}}},
        "engine": {"static_batching": {"max_batch_size": concurrency}}}))
    return og.Model(config)


def pad_id(job):
    with open(f"{job['model']}/genai_config.json") as f:
        return json.load(f)["model"].get("pad_token_id", 0)


def run_generator(m, job, level):
    """Static batches: the requests admitted together run as one Generator to the end."""
    batch = []
    while not level.done():
        level.admit(lambda ids: batch.append(ids) or len(batch) - 1)
        keys = sorted(level.in_flight)
        prompts = [batch[k] for k in keys]
        width = max(len(p) for p in prompts)
        ids = np.array([p + [pad_id(job)] * (width - len(p)) for p in prompts], np.int32)
        params = og.GeneratorParams(m)
        total = width + job["max_new_tokens"]
        params.set_search_options(batch_size=len(prompts), max_length=total, min_length=total,
                                  do_sample=False)
        gen = og.Generator(m, params)
        gen.append_tokens(ids)
        while not gen.is_done():
            gen.generate_next_token()
            for k, t in zip(keys, gen.get_next_tokens()):
                level.tokens(k, [t])
        for k in keys:
            level.finish(k)
        del gen
    return level.result()


def run_engine(m, job, level):
    eng = og.Engine(m)
    events = eng.create_event_buffer(4 * level.concurrency + 16)
    requests = []  # keeps each Request alive while in flight; the key is its index

    def submit(ids):
        r = eng.create_request()
        turn = og.TurnOptions(r)
        turn.set_do_sample(False)
        turn.set_max_generated_tokens(job["max_new_tokens"])
        turn.set_min_generated_tokens(job["max_new_tokens"])  # masks EOS: exactly N tokens
        r.begin_turn(np.array(ids, np.int32), turn)
        requests.append(r)
        return len(requests) - 1

    level.admit(submit)
    while not level.done():
        finished = []
        for ev in eng.run(events):
            key = next(k for k in level.in_flight if requests[k] is ev.request)
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


MODES = {
    "generator": (run_generator, "Generator over static batches of up to C requests (batch_size), "
                                 "the next batch when one ends"),
    "engine": (run_engine, "Engine with engine.static_batching.max_batch_size C (steps 4 requests "
                           "at a time in 0.18)"),
}


def main():
    job = read_job(sys.argv)
    api = job.get("api", "generator")
    if api not in MODES:
        sys.exit(f"ortgenai_driver: api '{api}' is not one of {', '.join(MODES)}")
    run, how = MODES[api]
    results = []
    for spec in job["levels"]:
        m = model(job, spec["concurrency"])
        if job.get("warmup"):
            run(m, job, Level(job["warmup"], spec["concurrency"]))
        level = run(m, job, Level(spec["prompts"], spec["concurrency"]))
        tokens = sum(r["tokens"] for r in level["requests"])
        progress(f"ortgenai: concurrency {spec['concurrency']}: {tokens} tokens in {level['wall_s']:.2f} s")
        results.append(level)
        del m
    write_result("ONNX Runtime GenAI", og.__version__,
                 f"{how}; no continuous batching on CPU (it needs PagedAttention: CUDA/WebGPU fp16); "
                 f"intra_op_num_threads {job['threads']}", results)


if __name__ == "__main__":
    main()
