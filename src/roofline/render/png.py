"""The roofline chart as a PNG (matplotlib, Agg backend), drawn from its calls (render/roofline_chart.py: what
the chart shows and why)."""

from __future__ import annotations

import io
import math
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from roofline.io import atomic_write_bytes  # noqa: E402
from roofline.render.roofline_chart import ChartCall, chart_calls  # noqa: E402
from roofline.report import Report  # noqa: E402


def render_png(report: Report, *, top_labels: int = 8, title: str | None = None) -> bytes:
    return png_of(chart_calls(report, top_labels=top_labels, title=title))


def png_of(calls: list[ChartCall], fig=None) -> bytes:
    """The PNG of a chart's calls, drawn on ``fig`` when given (an empty ``chart_figure()``)."""
    fig = draw_chart(calls, fig)
    wrap_figure_texts(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def draw_roofline(report: Report, *, top_labels: int = 8, title: str | None = None):
    """The chart as a matplotlib Figure (the caller saves and closes it)."""
    return draw_chart(chart_calls(report, top_labels=top_labels, title=title))


def chart_figure():
    """An empty Figure of the chart's size and resolution."""
    return plt.figure(figsize=(10, 6.5), dpi=110)


def draw_chart(calls: list[ChartCall], fig=None):
    """A Figure drawn from ``calls``, on ``fig`` when given (an empty ``chart_figure()``; the caller saves and
    closes it)."""
    fig = chart_figure() if fig is None else fig
    ax = fig.add_subplot()
    for call in calls:
        if call.target == "labels":
            _label_points(fig, ax, *call.args)
        elif call.target == "legend if any":
            if ax.get_legend_handles_labels()[0]:
                ax.legend(*call.args, **call.kwargs)
        else:
            getattr(fig if call.target == "fig" else ax, call.method)(*call.args, **call.kwargs)
    return fig


def wrap_figure_texts(fig) -> None:
    """Break the lines of the figure's texts drawn with ``wrap=True`` (the caption) now, where matplotlib would
    break them at this size, and draw them unwrapped: for a figure saved as it is (``png_of``; a Figure handed to
    the caller, ``draw_roofline``, keeps matplotlib's wrapping, which follows a resize).

    matplotlib wraps such a text at every draw by measuring each prefix of its words anew, from two words up,
    until one is too wide: 67 text layouts for a 350-character caption, 0.11 s of the big-trace chart's draw
    (issue 23). The widths grow with the words, so the longest prefix that fits is found by bisection, with
    matplotlib's own measure (the renderer's width, rounded up) and line width (the figure's right edge less
    the text's x): the same lines, in ~6 layouts a line. A text with math (``$``) or rotated, or any failure,
    is left to matplotlib."""
    try:
        renderer = fig.canvas.get_renderer()
        for text in fig.texts:
            if text.get_wrap() and "$" not in text.get_text() and not text.get_usetex() \
                    and text.get_rotation() == 0 and text.get_horizontalalignment() == "left":
                x = text.get_transform().transform(text.get_position())[0]
                lines = _wrapped_lines(text.get_text(), fig.bbox.x1 - x, text.get_fontproperties(), renderer)
                text.set_text("\n".join(lines))
                text.set_wrap(False)
    except Exception:  # noqa: BLE001 - matplotlib's own wrapping at the draw remains
        return


def _wrapped_lines(text: str, line_width: float, font, renderer) -> list[str]:
    """matplotlib's greedy wrap of ``text`` (Text._get_wrapped_text): each line takes the most words whose
    rendered width (rounded up) is at most ``line_width``, at least one."""
    def width(words: list[str]) -> int:
        return math.ceil(renderer.get_text_width_height_descent(" ".join(words), font, ismath=False)[0])

    lines = []
    for paragraph in text.split("\n"):
        words = paragraph.split(" ")
        while words:
            fits, too_many = 1, len(words) + 1  # a prefix of `fits` words fits; of `too_many` it does not
            while too_many - fits > 1:
                middle = (fits + too_many) // 2
                if width(words[:middle]) > line_width:
                    too_many = middle
                else:
                    fits = middle
            lines.append(" ".join(words[:fits]))
            words = words[fits:]
    return lines


def _label_points(fig, ax, candidates: list[tuple[str, float, float]], top_labels: int) -> None:
    """Name the ops with the most time (``candidates``: label, intensity, FLOP/s, longest first), skipping any
    label whose box would overlap one already placed; a label that would run off the right of the plot is put on
    the point's left."""
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    boxes = []
    for label, x, y in candidates:
        if len(boxes) >= top_labels:
            break
        text = ax.annotate(label, (x, y), fontsize=7,
                           xytext=(4, 4), textcoords="offset points")
        box = text.get_window_extent(renderer)
        if box.x1 > frame.x1:
            text.set_position((-4, 4))
            text.set_horizontalalignment("right")
            box = text.get_window_extent(renderer)
        box = box.expanded(1.05, 1.15)
        if any(box.overlaps(b) for b in boxes):
            text.remove()
            continue
        boxes.append(box)


def plot_roofline(report: Report, path: str | os.PathLike[str] = "roofline.png", **kwargs) -> Path:
    """Write the roofline PNG of a report atomically and return its path."""
    return atomic_write_bytes(Path(path), render_png(report, **kwargs))
