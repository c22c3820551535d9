"""Hand-written Kineto events for tests that build a small trace file (one helper, not one per test file)."""

from __future__ import annotations

import json
from pathlib import Path


def x(cat, name, ts, dur, pid=1, tid=1, **args):
    """A complete ('X') event; ``args`` as Kineto spells them (pass "External id" and the like with **{...})."""
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def write_trace(directory, events, name: str = "t.json", **metadata) -> Path:
    """The events as a trace file in ``directory``, with ``metadata`` (deviceProperties...) beside them."""
    path = Path(directory) / name
    path.write_text(json.dumps({"schemaVersion": 1, **metadata, "traceEvents": events}))
    return path


HOST_CATEGORIES = frozenset({"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "python_function",
                             "cuda_sync"})


def as_begin_end_pairs(trace: dict, categories=HOST_CATEGORIES) -> dict:
    """``trace`` as a Chrome-trace tool re-exports it: each complete event of ``categories`` becomes a "B" where it
    starts and a bare "E" (no name, category or args) where it ends, per (pid, tid) in time order, as a stack walk
    writes them; kernels, flows and the rest stay as they are."""
    kept, spans = [], {}
    for i, event in enumerate(trace["traceEvents"]):
        if event.get("ph") == "X" and event.get("cat") in categories:
            spans.setdefault((event["pid"], event["tid"]), []).append((event["ts"], -event["dur"], i, event))
        else:
            kept.append(event)
    out = list(kept)

    def end(span):
        return {"ph": "E", "pid": span["pid"], "tid": span["tid"], "ts": span["ts"] + span["dur"]}

    for items in spans.values():
        items.sort(key=lambda item: item[:3])
        stack = []
        for ts, _, _, event in items:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= ts:
                out.append(end(stack.pop()))
            out.append({**{k: v for k, v in event.items() if k != "dur"}, "ph": "B"})
            stack.append(event)
        while stack:
            out.append(end(stack.pop()))
    return {**trace, "traceEvents": out}
