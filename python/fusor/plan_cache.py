"""A bounded LRU of execution contexts, keyed by the input shapes they were planned for.

A fusor Session is a plan bound to concrete shapes plus one execution context (its arena). An
InferenceSession keeps, per shape key, the contexts that are idle: a run takes one (or plans a
new one on a miss), runs with the GIL released, and gives it back. Concurrent runs of one shape
therefore each get their own context, and a shape seen again costs no planning. When more than
`capacity` shapes are kept, the least recently used shape's contexts are dropped.
"""
import collections
import threading
import time


class PlanCache:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self._idle = collections.OrderedDict()  # key -> [context, ...], most recent last
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.plans = 0
        self.plan_seconds = 0.0
        self.last_plan_seconds = 0.0

    def acquire(self, key):
        """An idle context for `key`, or None (then plan one and release it here after the run)."""
        with self._lock:
            idle = self._idle.get(key)
            if idle is not None:
                self._idle.move_to_end(key)
                if idle:
                    self.hits += 1
                    return idle.pop()
            self.misses += 1
            return None

    def plan(self, build):
        """Calls build() (planning a new context, GIL released) and records how long it took."""
        start = time.perf_counter()
        context = build()
        seconds = time.perf_counter() - start
        with self._lock:
            self.plans += 1
            self.plan_seconds += seconds
            self.last_plan_seconds = seconds
        return context

    def release(self, key, context):
        with self._lock:
            idle = self._idle.get(key)
            if idle is None:
                idle = self._idle[key] = []
                while len(self._idle) > self.capacity:
                    self._idle.popitem(last=False)
                    self.evictions += 1
            else:
                self._idle.move_to_end(key)
            idle.append(context)

    def info(self) -> dict:
        with self._lock:
            return {"capacity": self.capacity, "shapes": len(self._idle),
                    "contexts": sum(len(v) for v in self._idle.values()), "hits": self.hits,
                    "misses": self.misses, "evictions": self.evictions, "plans": self.plans,
                    "last_plan_seconds": self.last_plan_seconds,
                    "mean_plan_seconds": self.plan_seconds / self.plans if self.plans else 0.0}
