"""The serving load the generative peer drivers put on an engine, and their job / result format.
Standard library only: each driver imports it from its own venv.

Job (JSON file, argv[1]):
  {"model": DIR, "threads": T, "max_new_tokens": N,
   "warmup": [[ids]...],                          # run first at each level, untimed
   "levels": [{"concurrency": C, "prompts": [[ids]...]}, ...]}
Result (one JSON object on stdout):
  {"engine", "version", "batching": how the engine batches, "levels": [{"concurrency", "wall_s",
   "requests": [{"submit_s", "first_token_s", "last_token_s", "tokens", "output_ids"}]}]}
Times are seconds from the level's start. A closed loop: C requests in flight, the next one
submitted as soon as one finishes, as a serving load with C clients; every request asks for exactly
N new tokens (EOS ignored).
"""
import collections
import json
import sys
import time


def read_job(argv):
    if len(argv) != 2:
        sys.exit(f"usage: {argv[0]} JOB.json  (the format: bench/genai_peers/closed_loop.py)")
    with open(argv[1]) as f:
        job = json.load(f)
    for key in ("model", "threads", "max_new_tokens", "levels"):
        if key not in job:
            sys.exit(f"{argv[0]}: job lacks '{key}'")
    if job["max_new_tokens"] <= 0 or job["threads"] <= 0:
        sys.exit(f"{argv[0]}: max_new_tokens and threads must be positive")
    for level in job["levels"]:
        if level["concurrency"] <= 0 or not level["prompts"] or not all(level["prompts"]):
            sys.exit(f"{argv[0]}: a level needs concurrency > 0 and non-empty prompts")
    return job


class Level:
    """One concurrency level's requests: which are waiting, which in flight, and their times.
    An engine adapter calls admit() to submit up to C, token() per generated token, finish()."""

    def __init__(self, prompts, concurrency):
        self.concurrency = concurrency
        self.waiting = collections.deque(range(len(prompts)))
        self.prompts = prompts
        self.records = [{"submit_s": None, "first_token_s": None, "last_token_s": None,
                         "tokens": 0, "output_ids": []} for _ in prompts]
        self.in_flight = {}  # engine's key -> request index
        self.t0 = time.perf_counter()

    def now(self):
        return time.perf_counter() - self.t0

    def admit(self, submit):
        """submit(prompt ids) -> key, for as many waiting requests as there are free slots."""
        while self.waiting and len(self.in_flight) < self.concurrency:
            i = self.waiting.popleft()
            self.records[i]["submit_s"] = self.now()
            self.in_flight[submit(self.prompts[i])] = i

    def tokens(self, key, ids):
        if not ids:
            return
        r = self.records[self.in_flight[key]]
        t = self.now()
        if r["first_token_s"] is None:
            r["first_token_s"] = t
        r["last_token_s"] = t
        r["tokens"] += len(ids)
        r["output_ids"].extend(int(x) for x in ids)

    def finish(self, key):
        del self.in_flight[key]

    def done(self):
        return not self.waiting and not self.in_flight

    def result(self):
        return {"concurrency": self.concurrency, "wall_s": self.now(), "requests": self.records}


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


def write_result(engine, version, batching, levels):
    json.dump({"engine": engine, "version": version, "batching": batching, "levels": levels},
              sys.stdout)
    sys.stdout.write("\n")
