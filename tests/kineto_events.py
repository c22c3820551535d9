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
