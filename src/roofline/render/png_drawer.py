"""roofline.png of a big trace's report drawn by a process forked before the trace is read, which imports
matplotlib and draws a throwaway chart once the trace is read (``go``: the report is then built on one core, the
other idle), then waits for the chart's calls (render/roofline_chart.py).

matplotlib's import is about 0.38 s of CPU of the ~1.1 s a big report's PNG costs; done when the PNG is wanted,
it competed with the doctor, report.json and report.html for the two cores of the command's last second. The
calls are worked out by a child forked from the process holding the report, which writes them to the drawer
directly: report.html's op-table child, first thing, as soon as the ops are placed (``send_chart_before``), or a
child of their own once the report is built (``send_chart``); the drawer sends the PNG back. Whatever goes wrong
(the drawer or that child dies), ``png`` says None and the caller draws it itself, as without the drawer.

The drawer waits for ``go`` rather than running at a low priority from the start: niced, it could not be raised
again for the real chart (an unprivileged process cannot lower its niceness), and the chart, starved by the doctor
and report.json, was then drawn alone on one core at the command's very end (the 1 M-event trace: 0.25 s).
"""

from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Callable
from typing import Any

from roofline.forked import Forked, can_fork, fork_running, release_free_memory
from roofline.render.roofline_chart import chart_calls


class PngDrawer:
    """The drawing process and its two pipes: chart calls in, PNG bytes out."""

    def __init__(self, pid: int, go_fd: int, calls_fd: int, png_fd: int) -> None:
        self._pid, self._go_fd, self._calls_fd, self._png_fd = pid, go_fd, calls_fd, png_fd
        self._sender: int | None = None
        self._sent_by_job = False

    @classmethod
    def start(cls) -> "PngDrawer | None":
        """The drawer, forked now; None where fork is unavailable or unsafe (another thread)."""
        if not can_fork():
            return None
        go_read, go_write = os.pipe()
        calls_read, calls_write = os.pipe()
        png_read, png_write = os.pipe()
        pid = fork_running(_draw_when_asked, go_read, calls_read, png_write, close=(go_write, calls_write, png_read))
        for fd in (go_read, calls_read, png_write):
            os.close(fd)
        return cls(pid, go_write, calls_write, png_read)

    def go(self) -> None:
        """Import matplotlib and warm up now: the trace is read, and the second core would idle while one builds the
        report. Once; also done by ``send_chart`` and ``stop``."""
        if self._go_fd >= 0:
            try:
                os.write(self._go_fd, b"g")  # a byte, not EOF: children forked meanwhile hold this end open too
            except OSError:  # the drawer is gone: ``png`` finds out
                pass
            os.close(self._go_fd)
            self._go_fd = -1

    def send_chart(self, report) -> None:
        """Work out ``report``'s chart calls in a forked child, which sends them to the drawer (the report shared
        copy-on-write, never pickled whole); nothing if ``send_chart_before`` sent them."""
        if self._sent_by_job:
            return
        self.go()
        release_free_memory()
        self._sender = fork_running(_send_calls, report, self._calls_fd, close=(self._png_fd,))
        self._close_calls()  # the sender holds them now: if it dies, the drawer reads EOF and exits

    def send_chart_before(self, report, work: Callable[..., Any], *args: Any) -> Forked:
        """One forked child that sends ``report``'s chart calls to the drawer, then does ``work(*args)`` and sends
        its result back (``Forked``; done here if the child fails). ``report``'s ops, ceilings and summary
        totals must be final; the rest of it may still change.

        One child rather than a sender of its own: every child forked from the process holding a big report makes
        that process copy each page it writes afterwards while the child lives (CPython writes an object's
        reference count on every read), and each child copies the pages it reads itself."""
        self.go()
        job = Forked(_chart_calls_then, report, self._calls_fd, os.getpid(), work, args)
        self._close_calls()  # the job holds them now: if it dies before they are whole, the drawer fails, not hangs
        self._sent_by_job = True
        return job

    def png(self) -> bytes | None:
        """The drawer's PNG, or None if it has none (it or the sender failed): the caller draws it then."""
        self._close_calls()
        sent = self._sent_by_job or (self._sender is not None and os.waitpid(self._sender, 0)[1] == 0)
        with os.fdopen(self._png_fd, "rb") as fh:
            png = fh.read()
        self._png_fd = -1
        drawn = os.waitpid(self._pid, 0)[1] == 0
        return png if sent and drawn and png else None

    def stop(self) -> None:
        """No chart after all (the command failed, or its report is too small to want the drawer): the drawer is
        stopped and reaped, if ``png`` has not collected it."""
        if self._png_fd < 0:
            return
        self.go()
        self._close_calls()
        os.close(self._png_fd)
        self._png_fd = -1
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self._pid, 0)
        if self._sender is not None:
            os.waitpid(self._sender, 0)

    def _close_calls(self) -> None:
        if self._calls_fd >= 0:
            os.close(self._calls_fd)
            self._calls_fd = -1


def _draw_when_asked(go_fd: int, calls_fd: int, png_fd: int) -> None:
    os.read(go_fd, 1)
    os.close(go_fd)
    from roofline.render.outputs import import_matplotlib_without_property_docs

    import_matplotlib_without_property_docs()
    from roofline.render.png import png_of

    _warm_up(png_of)
    figure = _figure_with_decade_labels()
    with os.fdopen(calls_fd, "rb") as fh:
        calls = pickle.load(fh)
    png = png_of(calls, figure)
    with os.fdopen(png_fd, "wb") as out:
        out.write(png)


def _warm_up(png_of) -> None:
    """Draw a throwaway chart while the report is built: a process's first chart costs ~0.25 s more than its next
    (matplotlib loads fonts, builds its mathtext parser and measures each text once, then caches them), and the
    drawer otherwise waits idle until the report is built. It fills caches only: the real chart is the same
    bytes. A warm-up that fails is skipped."""
    try:
        png_of(chart_calls(warm_up_report()))
    except Exception:  # noqa: BLE001 - the real chart, drawn next, reports its own errors
        pass


DECADES = range(-12, 19)


def _figure_with_decade_labels():
    """The empty figure the real chart will be drawn on, its renderer having parsed the log axes' label of every
    decade in DECADES (10^-12 to 10^18) as tick labels: matplotlib keeps a renderer's last 50 mathtext parses,
    and a new figure's renderer starts with none, so the warm-up chart's parses are lost with it; each label the
    real chart's axes carry then cost ~6 ms at the end (the 1 M-event trace's chart: 18 of them). The PNG is the
    same bytes. None if that fails (the chart then gets a new figure)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import LogLocator

    from roofline.render.png import chart_figure

    try:
        figure = chart_figure()
        ax = figure.add_subplot()
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(10.0 ** DECADES[0], 10.0 ** DECADES[-1])
        ax.set_ylim(10.0 ** DECADES[0], 10.0 ** DECADES[-1])
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(LogLocator(base=10, numticks=len(DECADES) + 2))
        figure.canvas.draw()
        figure.clf()
        return figure
    except Exception:  # noqa: BLE001 - the chart is drawn on a figure of its own then
        plt.close("all")
        return None


def warm_up_report():
    """A small report drawn like a real one: ops of each bound spread over intensities 0.01-10,000 FLOP/B and
    FLOP/s from 10^6 to 10^15 (the log ticks most charts label), one above its roof, one served from cache."""
    from roofline.report import Ceilings, OpRecord, Report, Summary

    ceilings = Ceilings(device="cuda", device_name="warm-up", memory_bandwidth_bytes_per_s=4e12,
                        peak_flops_per_s={"float32": 6e13, "bfloat16": 1e15, "float16": 1e15},
                        cache_bandwidth_bytes_per_s=1e13, launch_overhead_s=5e-6, source="datasheet")
    ops = []
    for i, (intensity, rate, bound) in enumerate([(0.01, 1e6, "launch"), (0.3, 1e9, "memory"), (2.0, 5e11, "memory"),
                                                  (40.0, 1e13, "compute"), (400.0, 8e14, "compute"),
                                                  (9000.0, 2e15, "compute"), (1.0, 3e12, "memory")]):
        ops.append(OpRecord(name=f"aten::warm_up_{i}", module=f"Model.layers.{i}", dtype="float16",
                            flops=rate * 1e-4, bytes=rate * 1e-4 / intensity, time_s=1e-4 * (i + 1),
                            arithmetic_intensity=intensity, achieved_flops_per_s=rate, bound=bound,
                            above_roof=i == 5, roof="cache" if i == 6 else "dram"))
    return Report(kind="trace", workload="warm-up", ceilings=ceilings, ops=ops,
                  summary=Summary(share_by_bound={"compute": 0.5, "memory": 0.4, "launch": 0.1}))


def _chart_calls_then(report, calls_fd: int, parent: int, work: Callable[..., Any], args: tuple) -> Any:
    """``send_chart_before``'s job: in the child, the chart's calls to the drawer first; then (there, or here if
    the child failed) ``work(*args)``."""
    if os.getpid() != parent:
        _send_calls(report, calls_fd)
    return work(*args)


def _send_calls(report, calls_fd: int) -> None:
    """In the child holding the report: its chart's calls, written to the drawer."""
    with os.fdopen(calls_fd, "wb") as out:
        pickle.dump(chart_calls(report), out, protocol=pickle.HIGHEST_PROTOCOL)
