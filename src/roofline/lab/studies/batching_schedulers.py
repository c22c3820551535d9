"""Static and continuous batching of one request stream, on a simulated clock that real step times drive.

Both schedulers run the same ``SlotEngine`` (the same slot KV cache: the same memory budget) over the same
requests. The clock is simulated: it starts at 0, jumps over idle gaps to the next arrival (nothing is slept), and
every prefill or decode step advances it by that step's measured wall time (``measured``: from the call until its
tokens are on the host, which waits for the device). A request that arrives while a step runs is seen when the
step ends, as in a server whose scheduler runs between steps. ``modelled`` replaces the measurement by a cost
model, which makes the scheduling deterministic for tests.

- static: wait until ``slots`` requests are queued or the oldest has waited ``timeout_s``; prefill the batch
  together (left-padded to its longest prompt); decode until every request of the batch is done. A finished
  request's row is still computed at every step (padding waste) and its slot stays taken until the batch ends.
- continuous: a queued request joins as soon as a slot is free: its prompt is prefilled alone into that slot
  (joins go before the next decode step), then it decodes with the others; it leaves when done and frees its
  slot. A decode step runs rows 0..highest taken slot; free slots below that are computed too (counted as waste).

A request is done at its ``max_new``-th token or at ``eos_id``, whichever comes first.
"""

from __future__ import annotations

import heapq
import math
import random
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from roofline.lab.data import UNK, WikiText
from roofline.lab.studies.batching_engine import SlotEngine

PREFILL, DECODE = "prefill", "decode"


@dataclass(frozen=True)
class Request:
    id: int
    prompt: tuple[int, ...]
    max_new: int
    arrival_s: float


@dataclass
class Served:
    id: int
    arrival_s: float
    prompt_len: int
    max_new: int
    slot: int
    tokens: list[int] = field(default_factory=list)
    first_token_s: float = math.nan
    finish_s: float = math.nan


@dataclass(frozen=True)
class Step:
    """One forward pass: ``computed`` token positions of which ``useful`` belong to live requests' real tokens."""

    kind: str
    start_s: float
    seconds: float
    rows: int
    computed: int
    useful: int


@dataclass
class Run:
    scheduler: str
    served: list[Served]
    steps: list[Step]
    complete: bool


# timer(kind, rows, positions, fn) -> (fn's tokens on the host, seconds the step took)
Timer = Callable[[str, int, int, Callable[[], object]], tuple[list[int], float]]
StepHook = Callable[[Step], None]


def measured(kind: str, rows: int, positions: int, fn: Callable[[], object]) -> tuple[list[int], float]:
    """The step's wall time, from its call until its tokens are on the host (``tolist`` waits for the device)."""
    began = time.perf_counter()
    tokens = fn().tolist()
    return tokens, time.perf_counter() - began


def modelled(cost: Callable[[str, int, int], float]) -> Timer:
    """A timer that runs the step but charges ``cost(kind, rows, positions)`` seconds: deterministic scheduling."""

    def timer(kind: str, rows: int, positions: int, fn: Callable[[], object]) -> tuple[list[int], float]:
        return fn().tolist(), cost(kind, rows, positions)

    return timer


@dataclass(frozen=True)
class Workload:
    """Requests of uniformly drawn prompt and output lengths, arriving as a Poisson process (seeded)."""

    requests: int
    prompt_words: tuple[int, int]
    new_tokens: tuple[int, int]
    seed: int = 0

    def as_dict(self) -> dict:
        return {"requests": self.requests, "prompt_words": list(self.prompt_words),
                "new_tokens": list(self.new_tokens), "seed": self.seed}


def make_requests(corpus: WikiText, workload: Workload, rate_per_s: float,
                  vocab_size: int | None = None) -> list[Request]:
    """The workload's requests at ``rate_per_s``: prompts are consecutive stretches of WikiText-2 test text
    (headings skipped, ``<eos>`` between paragraphs; the text wraps around if it runs out). The lengths and the
    unit-rate gaps come from one seeded stream, so every rate sees the same requests, only closer together.
    Words whose id is not below ``vocab_size`` read as ``<unk>`` (as in the lab's other prompts)."""
    if rate_per_s <= 0 or workload.requests < 1:
        raise ValueError(f"need a positive rate and at least one request, got {rate_per_s}, {workload.requests}")
    words = [w for line in corpus.lines if len(line) > 1 and line[0] != "=" for w in line]
    stream = corpus.vocab.encode(words)
    if vocab_size is not None:
        unk = corpus.vocab.word_to_id.get(UNK, 0)
        stream = [i if i < vocab_size else unk for i in stream]
    if not stream:
        raise ValueError(f"no text in {corpus.directory / 'test.txt'}")
    rng = random.Random(workload.seed)
    requests, cursor, clock = [], 0, 0.0
    for i in range(workload.requests):
        length = rng.randint(*workload.prompt_words)
        new = rng.randint(*workload.new_tokens)
        clock += rng.expovariate(1.0)
        prompt = [stream[(cursor + k) % len(stream)] for k in range(length)]
        cursor = (cursor + length) % len(stream)
        requests.append(Request(i, tuple(prompt), new, clock / rate_per_s))
    return requests


def _done(served: Served, eos_id: int) -> bool:
    return len(served.tokens) >= served.max_new or served.tokens[-1] == eos_id


class _Loop:
    """What both schedulers share: the clock, the arrivals, the step log and the early stop."""

    def __init__(self, requests, timer: Timer, on_step: StepHook | None, max_steps: int | None) -> None:
        self.pending = deque(sorted(requests, key=lambda r: (r.arrival_s, r.id)))
        self.queue: deque[Request] = deque()
        self.clock = 0.0
        self.steps: list[Step] = []
        self.served: list[Served] = []
        self.timer, self.on_step, self.max_steps = timer, on_step, max_steps

    def admit(self) -> None:
        while self.pending and self.pending[0].arrival_s <= self.clock:
            self.queue.append(self.pending.popleft())

    def stopped(self) -> bool:
        return self.max_steps is not None and len(self.steps) >= self.max_steps

    def step(self, kind: str, rows: int, computed: int, useful: int, fn) -> list[int]:
        tokens, seconds = self.timer(kind, rows, computed, fn)
        record = Step(kind, self.clock, seconds, rows, computed, useful)
        self.clock += seconds
        self.steps.append(record)
        if self.on_step is not None:
            self.on_step(record)
        return tokens


def serve_static(engine: SlotEngine, requests: list[Request], eos_id: int, *, timeout_s: float,
                 timer: Timer = measured, on_step: StepHook | None = None, max_steps: int | None = None) -> Run:
    loop = _Loop(requests, timer, on_step, max_steps)
    slots = engine.slots
    while (loop.pending or loop.queue) and not loop.stopped():
        loop.admit()
        if not loop.queue:
            loop.clock = loop.pending[0].arrival_s
            continue
        deadline = loop.queue[0].arrival_s + timeout_s
        if len(loop.queue) < slots and loop.clock < deadline:
            nxt = loop.pending[0].arrival_s if loop.pending else math.inf
            loop.clock = max(loop.clock, min(nxt, deadline))
            continue
        batch = [loop.queue.popleft() for _ in range(min(slots, len(loop.queue)))]
        _run_static_batch(loop, engine, batch, eos_id)
    return Run("static", loop.served, loop.steps, complete=not (loop.pending or loop.queue) and
               all(not math.isnan(s.finish_s) for s in loop.served))


def _run_static_batch(loop: _Loop, engine: SlotEngine, batch: list[Request], eos_id: int) -> None:
    longest = max(len(r.prompt) for r in batch)
    pad = [longest - len(r.prompt) for r in batch]
    served = [Served(r.id, r.arrival_s, len(r.prompt), r.max_new, slot) for slot, r in enumerate(batch)]
    loop.served += served
    first = loop.step(PREFILL, len(batch), len(batch) * longest, sum(len(r.prompt) for r in batch),
                      lambda: engine.prefill(0, [list(r.prompt) for r in batch], eos_id))
    live = []
    for s, token in zip(served, first):
        s.tokens.append(token)
        s.first_token_s = loop.clock
        if _done(s, eos_id):
            s.finish_s = loop.clock
        else:
            live.append(s)
    position = longest
    while live and not loop.stopped():
        feed = [s.tokens[-1] for s in served]
        out = loop.step(DECODE, len(batch), len(batch), len(live),
                        lambda: engine.decode(feed, [position] * len(batch), pad))
        position += 1
        for s in list(live):
            s.tokens.append(out[s.slot])
            if _done(s, eos_id):
                s.finish_s = loop.clock
                live.remove(s)


def serve_continuous(engine: SlotEngine, requests: list[Request], eos_id: int, *, timer: Timer = measured,
                     on_step: StepHook | None = None, max_steps: int | None = None) -> Run:
    loop = _Loop(requests, timer, on_step, max_steps)
    free = list(range(engine.slots))
    active: dict[int, Served] = {}
    filled: dict[int, int] = {}
    while (loop.pending or loop.queue or active) and not loop.stopped():
        loop.admit()
        if not loop.queue and not active:
            loop.clock = loop.pending[0].arrival_s
            continue
        if loop.queue and free:
            request, slot = loop.queue.popleft(), heapq.heappop(free)
            served = Served(request.id, request.arrival_s, len(request.prompt), request.max_new, slot)
            loop.served.append(served)
            n = len(request.prompt)
            (token,) = loop.step(PREFILL, 1, n, n, lambda: engine.prefill(slot, [list(request.prompt)], eos_id))
            served.tokens.append(token)
            served.first_token_s = loop.clock
            if _done(served, eos_id):
                served.finish_s = loop.clock
                heapq.heappush(free, slot)
            else:
                active[slot], filled[slot] = served, n
            continue
        rows = max(active) + 1
        feed = [active[r].tokens[-1] if r in active else eos_id for r in range(rows)]
        write = [filled[r] if r in active else 0 for r in range(rows)]
        out = loop.step(DECODE, rows, rows, len(active), lambda: engine.decode(feed, write, [0] * rows))
        for slot in sorted(active):
            served = active[slot]
            served.tokens.append(out[slot])
            filled[slot] += 1
            if _done(served, eos_id):
                served.finish_s = loop.clock
                del active[slot], filled[slot]
                heapq.heappush(free, slot)
    return Run("continuous", loop.served, loop.steps, complete=not (loop.pending or loop.queue or active))


def _percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p99": None, "mean": None}
    array = np.asarray(values, dtype=float)
    return {"p50": float(np.percentile(array, 50)), "p99": float(np.percentile(array, 99)),
            "mean": float(array.mean())}


def summarize(run: Run) -> dict:
    """The run's figures: throughput (generated tokens / (first arrival -> last token)), latencies (p50/p99 over
    requests, numpy's linear percentile), busy share (time inside steps / that span), time and waste by kind."""
    if not run.complete:
        raise ValueError(f"the {run.scheduler} run stopped before serving every request")
    served = run.served
    generated = sum(len(s.tokens) for s in served)
    start = min(s.arrival_s for s in served)
    span = max(s.finish_s for s in served) - start
    by_kind = {}
    for kind in (PREFILL, DECODE):
        steps = [st for st in run.steps if st.kind == kind]
        computed = sum(st.computed for st in steps)
        useful = sum(st.useful for st in steps)
        by_kind[kind] = {"steps": len(steps), "seconds": sum(st.seconds for st in steps),
                         "computed_tokens": computed, "wasted_tokens": computed - useful,
                         "waste_share": (computed - useful) / computed if computed else 0.0}
    busy = sum(v["seconds"] for v in by_kind.values())
    return {
        "requests": len(served),
        "generated_tokens": generated,
        "span_s": span,
        "throughput_tokens_per_s": generated / span if span > 0 else math.inf,
        "busy_share": busy / span if span > 0 else 1.0,
        "ttft_s": _percentiles([s.first_token_s - s.arrival_s for s in served]),
        "per_token_s": _percentiles([(s.finish_s - s.first_token_s) / (len(s.tokens) - 1)
                                     for s in served if len(s.tokens) > 1]),
        "latency_s": _percentiles([s.finish_s - s.arrival_s for s in served]),
        "by_kind": by_kind,
    }
