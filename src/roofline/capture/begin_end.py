"""Duration events written as begin/end pairs (``ph`` "B" and "E") read as the complete events they stand for.

Chrome-trace tools and some exporters (Perfetto's JSON export, trace re-writers) write a span as a "B" event where it
starts and an "E" event where it ends, on the same process and thread. The Trace Event Format's rule: an "E" closes the
latest open "B" of its (pid, tid) (spans nest, properly stacked); the "E" may leave out name, category and args, and
args it has are merged into the "B"'s (catapult's importer keeps the "E"'s value where both give one). A pair becomes
one complete event (ph "X", the "B"'s name, category and times, ``dur`` = E.ts - B.ts).

A pair is handed on when its "E" arrives, so a stream read in blocks holds only the open spans, not the trace. Only
where a closed span starts at the very time of a span still open on its thread (a child at its parent's first
microsecond; ops tie there in traces of whole-microsecond times) is it held back until that span closes: the reader
orders ops of equal start and length by arrival, which must be the "B"s' order, as a complete-event trace's order
is, or a child would be read as its parent's parent.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import msgspec


# A pair's duration to the ns: no profiler records finer, and the difference of two timestamps of ~5e12 us (Kineto's
# clock) carries float noise below it (7782.2041015625 for a span written as X with dur 7782.204).
_NS_DECIMALS = 3


class BeginEndPairs:
    """Pairs "B" and "E" events per (pid, tid); ``add`` takes either and returns the complete events now ready.
    Events are read through their ``ph``, ``pid``, ``tid`` and ``ts`` attributes; ``complete(begin, end, ts, dur)``
    makes a pair's event (by default: the trace reader's msgspec struct, ``ph`` "X")."""

    def __init__(self, complete: Callable[[Any, Any, float, float], Any] | None = None) -> None:
        self._complete = complete or _complete
        self._open: dict[tuple[Any, Any], list[tuple[int, float | None, Any]]] = {}
        self._held: dict[tuple[Any, Any], list[tuple[int, float, Any]]] = {}
        self._seq = 0
        self.seen = 0  # "B" and "E" events read
        self.unmatched_ends = 0
        self.unmatched_begins = 0  # counted by ``finish``
        self.bad_times = 0  # pairs whose "B" or "E" has no usable ts

    def add(self, event: Any) -> list:
        self.seen += 1
        key = (event.pid, event.tid)
        if event.ph == "B":
            self._seq += 1
            self._open.setdefault(key, []).append((self._seq, _number(event.ts), event))
            return []
        stack = self._open.get(key)
        if not stack:
            self.unmatched_ends += 1
            return []
        seq, ts, begin = stack.pop()
        end = _number(event.ts)
        if ts is None or end is None:
            self.bad_times += 1
            return self._release(key, stack) if key in self._held else []
        complete = self._complete(begin, event, ts, round(end - ts, _NS_DECIMALS))
        limit = stack[-1][1] if stack else None
        if key not in self._held and (limit is None or ts > limit):
            return [complete]
        self._held.setdefault(key, []).append((seq, ts, complete))
        return self._release(key, stack)

    def finish(self) -> list:
        """The held complete events (a span never closed holds back those that start with it); the spans still open
        counted in ``unmatched_begins``."""
        self.unmatched_begins += sum(len(stack) for stack in self._open.values())
        self._open.clear()
        ready = [item for held in self._held.values() for item in held]
        self._held.clear()
        ready.sort(key=lambda item: item[0])
        return [item[2] for item in ready]

    def _release(self, key: tuple[Any, Any], stack: list) -> list:
        """The held events of ``key`` that start after the innermost open span (or all, none being open), in the
        order of their "B"s."""
        held = self._held[key]
        limit = stack[-1][1] if stack else None
        if limit is None:
            ready, keep = held, []
        else:
            ready = [item for item in held if item[1] > limit]
            keep = [item for item in held if not item[1] > limit]
        if keep:
            self._held[key] = keep
        else:
            del self._held[key]
        ready.sort(key=lambda item: item[0])
        return [item[2] for item in ready]


def _complete(begin: Any, end: Any, ts: float, dur: float) -> Any:
    args = begin.args
    if end.args is not None:
        given = {name: value for name in end.args.__struct_fields__
                 if (value := getattr(end.args, name)) is not None}
        args = msgspec.structs.replace(args, **given) if args is not None else end.args
    return msgspec.structs.replace(begin, ph="X", ts=ts, dur=dur, args=args)


def _number(value: Any) -> float | None:
    if type(value) is float or type(value) is int:
        value = float(value)
    elif isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    else:
        return None
    return value if math.isfinite(value) else None


def complete_event_dicts(events: list) -> list:
    """Parsed trace events with each begin/end pair as its complete event, in its "B"'s place; unmatched "B" and "E"
    events dropped (the trace reader warned of them). The list itself when it holds no pair."""
    if not any(isinstance(e, dict) and e.get("ph") in ("B", "E") for e in events):
        return events
    pairs = BeginEndPairs(complete=_complete_dict)
    done: dict[int, dict] = {}
    for i, event in enumerate(events):
        if isinstance(event, dict) and event.get("ph") in ("B", "E"):
            done.update(pairs.add(_Placed(i, event)))
    done.update(pairs.finish())
    return [done[i] if i in done else event for i, event in enumerate(events)
            if i in done or not (isinstance(event, dict) and event.get("ph") in ("B", "E"))]


class _Placed:
    """A parsed event and its place in the list, as ``BeginEndPairs`` reads events."""

    __slots__ = ("index", "event", "ph", "pid", "tid", "ts")

    def __init__(self, index: int, event: dict) -> None:
        self.index, self.event = index, event
        self.ph, self.pid, self.tid, self.ts = event.get("ph"), event.get("pid"), event.get("tid"), event.get("ts")


def _complete_dict(begin: _Placed, end: _Placed, ts: float, dur: float) -> tuple[int, dict]:
    event = {key: value for key, value in begin.event.items()}
    event.update(ph="X", ts=ts, dur=dur)
    args, more = begin.event.get("args"), end.event.get("args")
    if isinstance(more, dict) and more:
        event["args"] = {**(args if isinstance(args, dict) else {}), **more}
    return begin.index, event
