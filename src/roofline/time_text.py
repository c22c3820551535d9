"""``fmt_time``: a duration as text in the unit a reader takes in at once (89 us, not 8.9e-05 s).

Below every layer that writes text: renderers (through render/units.py) and analysis, whose notes in a report say
how long things took, write durations alike.
"""

from __future__ import annotations

import math


def fmt_time(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "-"
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3g} us"
    return f"{seconds * 1e9:.3g} ns"
