"""The roofline chart as data: the matplotlib calls that draw it, worked out from a Report without importing
matplotlib (render/png.py draws them). A big report's chart is worked out by a process that holds the report and
drawn by one that imported matplotlib meanwhile (render/png_drawer.py).

Log-log, the DRAM roof (and the last-level cache roof, dashed, and the shared-memory roof, dotted, when measured),
one compute roof per dtype; ops the analysis judged against the cache roof are squared. Each op is a point at
(arithmetic intensity, achieved FLOP/s), coloured by what bounds it (red compute, blue memory, gray launch
overhead), sized by its share of time; ridge points are marked and the top ops labelled. Ops that do no FLOPs
(copies, casts) have no place on a FLOP/s axis and are left out; the caption counts them. With Nsight Compute
counters joined (``op.measured``) the chart is hierarchical (the Berkeley method, as Nsight Compute draws it for one
kernel): each op also stands at its measured DRAM intensity (filled diamond) and L2 intensity (hollow triangle), at
the same FLOP/s, joined to its modelled point by a thin line.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from roofline.render.colors import BOUND_COLORS
from roofline.render.units import fmt_pct, fmt_rate, rate_unit
from roofline.report import Report

COLORS = BOUND_COLORS
DTYPE_STYLES = ["-", "--", "-.", ":"]
MAX_POINTS = 3000


@dataclass
class ChartCall:
    """One call of the drawing: ``target`` "fig" or "ax" and the method's name and arguments, or a step the drawing
    process works out itself: "labels" (the top ops' labels, placed where they do not overlap: it measures the
    text) and "legend if any"."""

    target: str
    method: str
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


class _Recorder:
    """Stands in for the Figure or the Axes: each method called is recorded as a ChartCall."""

    def __init__(self, target: str, calls: list[ChartCall]) -> None:
        self._target, self._calls = target, calls

    def __getattr__(self, method: str):
        def record(*args: Any, **kwargs: Any) -> None:
            self._calls.append(ChartCall(self._target, method, args, kwargs))
        return record


def chart_calls(report: Report, *, top_labels: int = 8, title: str | None = None) -> list[ChartCall]:
    """The roofline chart of ``report`` as the matplotlib calls that draw it (render/png.py's ``draw_chart``)."""
    calls: list[ChartCall] = []
    fig, ax = _Recorder("fig", calls), _Recorder("ax", calls)
    c = report.ceilings
    points = [op for op in report.ops
              if op.flops > 0 and op.bytes > 0 and op.time_s > 0 and op.arithmetic_intensity > 0
              and op.achieved_flops_per_s > 0 and math.isfinite(op.arithmetic_intensity)]
    skipped = len(report.ops) - len(points)
    total = sum(op.time_s for op in report.ops) or 1.0
    share = report.summary.share_by_bound

    ax.set_xscale("log")
    ax.set_yscale("log")
    levels = _measured_levels(points)
    intensities = [op.arithmetic_intensity for op in points if math.isfinite(op.arithmetic_intensity)]
    intensities += [x for _, xs in levels for x in xs.values()]
    ridges = [c.ridge_point(d) for d in c.peak_flops_per_s if math.isfinite(c.ridge_point(d))]
    lo = min(intensities + ridges + [1.0]) / 4
    hi = max(intensities + ridges + [1.0]) * 4
    bw = c.memory_bandwidth_bytes_per_s
    drawn_dtypes = {op.dtype for op in points}
    dtypes = [d for d in c.peak_flops_per_s if d in drawn_dtypes] or list(c.peak_flops_per_s)[:1]
    # Roofs are named in the legend, not on the plot, so their labels cannot collide at the ridge.
    ridges_drawn = [c.peak_flops_per_s[d] / bw for d in dtypes] if bw else []
    if bw:
        top = max(ridges_drawn) if ridges_drawn else hi  # a memory roof with no compute roof (a datasheet without peaks)
        ax.plot([lo, top], [lo * bw, top * bw], color="black", linewidth=1.4,
                label=f"memory roof {fmt_rate(bw, 'B/s')} ({c.source})")
    cache_bw = c.cache_bandwidth_bytes_per_s
    if bw and cache_bw > bw and dtypes:
        top = max(c.peak_flops_per_s[d] / cache_bw for d in dtypes)
        ax.plot([lo, top], [lo * cache_bw, top * cache_bw], color="gray", linestyle="--", linewidth=1.1,
                label=f"cache roof {fmt_rate(cache_bw, 'B/s')} (last-level cache; ops that fit and beat DRAM)")
    shared_bw = c.shared_memory_bandwidth_bytes_per_s or 0.0
    if bw and shared_bw > max(bw, cache_bw):
        top = max(c.peak_flops_per_s[d] / shared_bw for d in dtypes)
        ax.plot([lo, top], [lo * shared_bw, top * shared_bw], color="gray", linestyle=":", linewidth=1.1,
                label=f"shared-memory roof {fmt_rate(shared_bw, 'B/s')} (all SMs, 16-byte loads)")
    for i, dtype in enumerate(dtypes):
        peak = c.peak_flops_per_s[dtype]
        ridge = peak / bw if bw else lo
        style = DTYPE_STYLES[(i + 1) % len(DTYPE_STYLES)]
        ax.plot([ridge, hi], [peak, peak], color="black", linestyle=style, linewidth=1.4,
                label=f"{dtype} roof {fmt_rate(peak, rate_unit(dtype))}, ridge {ridge:.3g} FLOP/B")
        ax.scatter([ridge], [peak], marker="D", color="black", s=30, zorder=5)

    merged_note = ""
    by_bound: dict[str, list] = {}
    for op in points:
        by_bound.setdefault(op.bound, []).append(op)
    for bound, color in COLORS.items():
        group = by_bound.get(bound)
        if not group:
            continue
        xs, ys, times = _points(group)
        if len(xs) < len(group):
            merged_note = " Calls that land on the same spot (0.01 decade) are drawn as one point with their summed time."
        ax.scatter(
            xs, ys, s=[20 + 600 * t / total for t in times],
            color=color, alpha=0.65, edgecolors="white", linewidths=0.5,
            label=f"{bound}-bound ({fmt_pct(share.get(bound, 0.0))} of op time)",
        )
    above = [op for op in points if op.above_roof]
    if above:
        ax.scatter([op.arithmetic_intensity for op in above], [op.achieved_flops_per_s for op in above],
                   s=[20 + 600 * op.time_s / total for op in above], facecolors="none", edgecolors="black",
                   linewidths=1.2, label=f"above the roof ({len(above)} ops, outlined)", zorder=4)

    cached = [op for op in points if op.roof != "dram"]
    if cached:
        ax.scatter([op.arithmetic_intensity for op in cached], [op.achieved_flops_per_s for op in cached],
                   s=[30 + 600 * op.time_s / total for op in cached], marker="s", facecolors="none",
                   edgecolors="gray", linewidths=0.9, zorder=4,
                   label=f"served from cache ({len(cached)} ops, squared: judged against the cache roof)")
    _draw_levels(ax, levels)
    ax.set_xlim(lo, hi)
    calls.append(ChartCall("labels", "", (_label_candidates(points, top_labels), top_labels)))
    ax.set_xlabel("arithmetic intensity (FLOP / byte, minimum bytes moved)")
    ax.set_ylabel("achieved performance (FLOP/s)")
    ax.set_title(title or f"Roofline: {report.workload or report.kind} on {c.device_name or c.device}", fontsize=11)
    ax.grid(True, which="both", alpha=0.25)
    calls.append(ChartCall("legend if any", "", (), {"fontsize": 7, "loc": "lower right"}))
    caption = (f"{len(points)} of {len(report.ops)} ops drawn, sized by share of time; {skipped} not drawn (no FLOPs: "
               f"copies, casts, views have no place on a FLOP/s axis).{merged_note} Roofs: "
               f"{_clipped(c.method, CAPTION_ROOFS_CHARS) or c.source}")
    fig.text(0.01, 0.005, caption, fontsize=6, wrap=True)
    fig.subplots_adjust(left=0.08, right=0.98, top=0.94, bottom=0.12)
    return calls


LEVEL_MARKERS = {"dram": ("D", "DRAM"), "l2": ("^", "L2")}


CAPTION_ROOFS_CHARS = 120


def _clipped(text: str, limit: int) -> str:
    """``text``, or its clauses (else words) up to ``limit`` characters with an ellipsis saying where the rest is: a
    plain cut left a CPU trace's caption ending "...; for roofs, wr"."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    head = head.rsplit("; ", 1)[0] if "; " in head else head.rsplit(" ", 1)[0].rstrip(";,:")
    return head + " ... (whole in report.json: ceilings.method)"


def _measured_levels(points: list) -> list[tuple[object, dict[str, float]]]:
    """(op, {level: measured intensity}) for ops with ncu counters, as the analysis set them."""
    levels = []
    for op in points:
        m = op.measured
        if m is None:
            continue
        xs = {name: x for name, x in (("dram", m.dram_intensity), ("l2", m.l2_intensity))
              if x is not None and x > 0 and math.isfinite(x)}
        if xs:
            levels.append((op, xs))
    return levels


def _draw_levels(ax, levels: list) -> None:
    if not levels:
        return
    for op, xs in levels:
        ax.plot([op.arithmetic_intensity, *xs.values()], [op.achieved_flops_per_s] * (1 + len(xs)), color="gray",
                linewidth=0.4, alpha=0.6, zorder=2)
    for level, (marker, label) in LEVEL_MARKERS.items():
        at = [(xs[level], op.achieved_flops_per_s, COLORS.get(op.bound, "gray")) for op, xs in levels if level in xs]
        if not at:
            continue
        xs_, ys, colors = zip(*at)
        filled = level == "dram"
        ax.scatter(xs_, ys, marker=marker, s=22, zorder=4, linewidths=0.9,
                   facecolors=list(colors) if filled else "none", edgecolors=list(colors),
                   label=f"{label} traffic measured by ncu ({len(at)} ops: FLOPs / {label} bytes)")


def _label_candidates(points: list, top_labels: int) -> list[tuple[str, float, float]]:
    """(label, intensity, FLOP/s) of the ops with the most time, longest first: the labels tried in turn."""
    candidates = []
    for op in heapq.nlargest(4 * top_labels, points, key=attrgetter("time_s")):  # = sorted(reverse=True)[:n]
        label = op.name.removeprefix("aten::")
        if op.module:
            label += f" @ {op.module.split('.')[-1] if len(op.module) > 24 else op.module}"
        candidates.append((label, op.arithmetic_intensity, op.achieved_flops_per_s))
    return candidates


def _points(ops: list) -> tuple[list[float], list[float], list[float]]:
    """(intensity, FLOP/s, time) per point; above a few thousand calls, calls that share a spot (to 0.01 decade)
    merge into one point carrying their summed time, so a report of 100,000+ ops still draws in a second."""
    if len(ops) <= MAX_POINTS:
        return ([op.arithmetic_intensity for op in ops], [op.achieved_flops_per_s for op in ops],
                [op.time_s for op in ops])
    spots: dict[tuple[int, int], list[float]] = {}
    for op in ops:
        key = (round(100 * math.log10(op.arithmetic_intensity)), round(100 * math.log10(op.achieved_flops_per_s)))
        spot = spots.setdefault(key, [op.arithmetic_intensity, op.achieved_flops_per_s, 0.0])
        spot[2] += op.time_s
    xs, ys, ts = zip(*spots.values())
    return list(xs), list(ys), list(ts)


