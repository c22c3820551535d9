"""The memory-access view as a PNG: per op name and per module, the bytes each level moved (DRAM and L2, measured
by Nsight Compute) beside the modelled minimum, with the excess ratio and the L2 hit rate written at each row.

Every number comes from ``Report.ncu`` (analyze/ncu_join.py); this module only draws it.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from roofline.render.units import fmt_bytes, fmt_pct  # noqa: E402
from roofline.report import Report  # noqa: E402

ROWS = 12
BARS = (("modelled_bytes", "modelled minimum", "#9e9e9e"), ("dram_bytes", "DRAM (ncu)", "#1f77b4"),
        ("l2_bytes", "L2 (ncu)", "#ff7f0e"))


def render_memory_png(report: Report, rows: int = ROWS) -> bytes:
    s = report.ncu
    if s is None:
        raise ValueError("the report has no Nsight Compute counters (report.ncu is None)")
    panels = [("by op", s.by_op[:rows]), ("by module", s.by_module[:rows])]
    height = 1.6 + 0.32 * sum(len(groups) for _, groups in panels)
    fig, axes = plt.subplots(2, 1, figsize=(10, max(5.0, height)), dpi=110,
                             gridspec_kw={"height_ratios": [max(1, len(g)) for _, g in panels]})
    for ax, (title, groups) in zip(axes, panels):
        _panel(ax, title, groups)
    fig.suptitle(f"Memory access: {report.workload or report.kind} (bytes per level vs the modelled minimum; "
                 f"{fmt_pct(s.joined_share)} of {s.kernels} ncu kernels joined)", fontsize=10)
    caption = "; ".join([f"{s.ops_measured} ops measured: DRAM {fmt_bytes(s.dram_bytes)}, L2 {fmt_bytes(s.l2_bytes)}, "
                         f"modelled minimum {fmt_bytes(s.modelled_bytes)}"] + s.notes[:2])
    fig.text(0.01, 0.005, caption, fontsize=6, wrap=True)
    fig.subplots_adjust(left=0.27, right=0.80, top=0.93, bottom=0.08, hspace=0.25)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _panel(ax, title: str, groups: list) -> None:
    ax.set_title(f"{title}, by time (top {len(groups)})", fontsize=9, loc="left")
    if not groups:
        ax.text(0.5, 0.5, "no measured ops", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    height = 0.8 / len(BARS)
    for j, (attr, label, color) in enumerate(BARS):
        ys, widths = [], []
        for i, g in enumerate(groups):
            value = getattr(g, attr)
            if value:
                ys.append(i + (j - 1) * height)
                widths.append(value)
        if not ys:
            continue
        ax.barh(ys, widths, height=height, color=color, label=label)
    ax.set_xscale("log")
    ax.set_yticks(range(len(groups)))
    ax.set_yticklabels([_short(g.name) for g in groups], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("bytes per step", fontsize=8)
    ax.grid(True, axis="x", which="both", alpha=0.25)
    for i, g in enumerate(groups):
        excess = f"x{g.excess_ratio:.2f} of min" if g.excess_ratio is not None else "no model"
        hit = f"L2 hit {fmt_pct(g.l2_hit_rate)}" if g.l2_hit_rate is not None else ""
        ax.annotate(f"{excess}  {hit}", (1.01, i), xycoords=("axes fraction", "data"), fontsize=7, va="center",
                    color="#d62728" if (g.excess_ratio or 0) > 1.2 else "black")
    ax.legend(fontsize=7, loc="lower right")


def _short(name: str, width: int = 40) -> str:
    name = name.removeprefix("aten::")
    return name if len(name) <= width else "…" + name[-(width - 1):]

