"""Human-readable numbers with their units, for every renderer."""

from __future__ import annotations

import math

from roofline.time_text import fmt_time  # noqa: F401 - every renderer's, shared with analysis's notes


def fmt_rate(value: float | None, unit: str) -> str:
    """FLOP/s, B/s and the like: 1.23 TFLOP/s."""
    if value is None or not math.isfinite(value):
        return "-"
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def rate_unit(dtype: str) -> str:
    """The unit of a compute roof: integer products are operations (OP/s, 'TOPS'), float ones FLOP/s."""
    return "OP/s" if dtype.startswith(("int", "uint")) else "FLOP/s"


def fmt_count(value: float | None, unit: str = "") -> str:
    if value is None or not math.isfinite(value):
        return "-"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}".rstrip()
    return f"{value:.3g} {unit}".rstrip()


def fmt_bytes(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    for scale, suffix in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {suffix}"
    return f"{value:.0f} B"


def fmt_pct(fraction: float | None) -> str:
    if fraction is None or not math.isfinite(fraction):
        return "-"
    return f"{100 * fraction:.1f}%"
