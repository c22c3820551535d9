"""The roofline chart as a PNG (matplotlib, Agg backend): log-log, one memory roof, one compute roof per dtype.

Each op is a point at (arithmetic intensity, achieved FLOP/s), coloured by what bounds it (red compute, blue
memory, gray launch overhead), sized by its share of time; ridge points are marked and the top ops labelled.
Ops that do no FLOPs (copies, casts) have no place on a FLOP/s axis and are left out; the caption counts them.
"""

from __future__ import annotations

import io
import math
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from roofline.io import atomic_write_bytes  # noqa: E402
from roofline.render.units import fmt_pct  # noqa: E402
from roofline.report import Report  # noqa: E402

COLORS = {"compute": "#d62728", "memory": "#1f77b4", "launch": "#7f7f7f", "unmodeled": "#bcbd22", "unknown": "#9467bd"}
DTYPE_STYLES = ["-", "--", "-.", ":"]
MAX_POINTS = 3000


def render_png(report: Report, *, top_labels: int = 8, title: str | None = None) -> bytes:
    c = report.ceilings
    points = [op for op in report.ops
              if op.flops > 0 and op.bytes > 0 and op.time_s > 0 and op.arithmetic_intensity > 0
              and op.achieved_flops_per_s > 0 and math.isfinite(op.arithmetic_intensity)]
    skipped = len(report.ops) - len(points)
    total = sum(op.time_s for op in report.ops) or 1.0

    fig, ax = plt.subplots(figsize=(10, 6.5), dpi=110)
    ax.set_xscale("log")
    ax.set_yscale("log")
    intensities = [op.arithmetic_intensity for op in points if math.isfinite(op.arithmetic_intensity)]
    ridges = [c.ridge_point(d) for d in c.peak_flops_per_s if math.isfinite(c.ridge_point(d))]
    lo = min(intensities + ridges + [1.0]) / 4
    hi = max(intensities + ridges + [1.0]) * 4
    bw = c.memory_bandwidth_bytes_per_s
    dtypes = [d for d in c.peak_flops_per_s if any(op.dtype == d for op in points)] or list(c.peak_flops_per_s)[:1]
    for i, dtype in enumerate(dtypes):
        peak = c.peak_flops_per_s[dtype]
        ridge = peak / bw if bw else hi
        style = DTYPE_STYLES[i % len(DTYPE_STYLES)]
        ax.plot([lo, ridge], [lo * bw, peak], color="black", linestyle=style, linewidth=1.4)
        ax.plot([ridge, hi], [peak, peak], color="black", linestyle=style, linewidth=1.4,
                label=f"{dtype} roof {peak / 1e12:.3g} TFLOP/s, ridge {ridge:.3g} FLOP/B")
        ax.scatter([ridge], [peak], marker="D", color="black", s=30, zorder=5)
    ax.plot([], [], color="white", label=f"memory roof {bw / 1e9:.4g} GB/s ({c.source})")

    merged_note = ""
    for bound, color in COLORS.items():
        group = [op for op in points if op.bound == bound]
        if not group:
            continue
        xs, ys, times = _points(group)
        if len(xs) < len(group):
            merged_note = " Calls that land on the same spot (0.01 decade) are drawn as one point with their summed time."
        ax.scatter(
            xs, ys, s=[20 + 600 * t / total for t in times],
            color=color, alpha=0.65, edgecolors="white", linewidths=0.5,
            label=f"{bound}-bound ({fmt_pct(sum(op.time_s for op in group) / total)} of time)",
        )
    placed: list[tuple[float, float]] = []
    for op in sorted(points, key=lambda o: o.time_s, reverse=True):
        if len(placed) >= top_labels:
            break
        x, y = math.log10(op.arithmetic_intensity), math.log10(max(op.achieved_flops_per_s, 1e-30))
        if any(abs(x - px) < 0.25 and abs(y - py) < 0.12 for px, py in placed):
            continue
        placed.append((x, y))
        label = op.name.removeprefix("aten::")
        if op.module:
            label += f" @ {op.module.split('.')[-1] if len(op.module) > 24 else op.module}"
        ax.annotate(label, (op.arithmetic_intensity, op.achieved_flops_per_s), fontsize=7,
                    xytext=(4, 4), textcoords="offset points")

    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP / byte, minimum bytes moved)")
    ax.set_ylabel("achieved performance (FLOP/s)")
    ax.set_title(title or f"Roofline: {report.workload or report.kind} on {c.device_name or c.device}", fontsize=11)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    caption = (f"{len(points)} ops with FLOPs plotted, sized by share of time; {skipped} ops without FLOPs "
               f"(copies, casts, views) not plottable on a FLOP/s axis.{merged_note} Roofs: {c.method[:120] or c.source}")
    fig.text(0.01, 0.005, caption, fontsize=6, wrap=True)
    fig.subplots_adjust(left=0.08, right=0.98, top=0.94, bottom=0.12)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


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


def plot_roofline(report: Report, path: str | os.PathLike[str] = "roofline.png", **kwargs) -> Path:
    """Write the roofline PNG of a report atomically and return its path."""
    return atomic_write_bytes(Path(path), render_png(report, **kwargs))
