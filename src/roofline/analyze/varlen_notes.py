"""How variable-length (packed, jagged) attention was counted, for the report's summary: the per-op notes that say
so (count/attention_varlen.py) are not part of a report's op rows."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from roofline.count.attention_varlen import NOTE_PREFIX


def varlen_attention_notes(counted: Iterable[tuple[str, str]]) -> list[str]:
    """One line per op name from the (name, OpCost.note) of the report's modelled ops: how many of its calls were
    variable-length and how the first was counted (per sequence, or a trace's estimate with its range)."""
    calls: dict[str, list[str]] = defaultdict(list)
    for name, note in counted:
        at = note.find(NOTE_PREFIX)
        if at >= 0:
            calls[name].append(note[at:].split("; ")[0])
    return [f"{name} on variable-length batches ({len(notes)} call(s)); first call: {notes[0]}"
            for name, notes in calls.items()]
