"""The files every report-producing command writes into its output directory, in one place.

report.json (the Report), roofline.png, memory.png (with Nsight Compute counters), report.html and trace.json.gz (the Chrome trace augmented with each
op's roofline figures, for Perfetto). The directory is written whole or not at all (roofline.io.atomic_directory):
a failure or Ctrl-C part-way leaves the previous run's files as they were, never a mix of two runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from roofline.capture.event_stream import gzip_json_size
from roofline.forked import Forked, Ready, can_fork, meanwhile
from roofline.io import atomic_directory, atomic_write_bytes, atomic_write_chunks
from roofline.report import Report

OUTPUT_FILES = ("report.json", "roofline.png", "memory.png", "report.html", "trace.json.gz", "ncu.csv")

# Augmenting reads the whole trace as JSON objects (about 10x its size in memory): above this, say so and skip.
AUGMENT_LIMIT_BYTES = 192 * 2**20


# From this many ops, roofline.png is drawn by a forked child while this process goes on (the doctor, report.json,
# report.html): matplotlib's import and drawing, about 1.7 s on the 1 M-event trace's 127,620 ops and mostly fixed
# (ticks, text, the PNG encoder), need nothing the rest of the command does.
BACKGROUND_PNG_MIN_OPS = 20_000

# The PNG's child's priority. At 10 it yielded to the doctor's child and this process while the doctor's rules were
# the critical path (1 M-event trace, two cores, four rounds: 7.6 s against 8.0 s at 0). Since the rules share one op
# table the PNG is the last thing waited for, and at 0 the command is faster again: 5.98 against 6.06 s and 6.14
# against 6.35 s (medians of 5 and 6 alternating rounds, 8 of 11 pairs faster; benchmarks/results/big_trace_png_niceness.txt).
PNG_CHILD_NICENESS = 0


def uncompressed_size(path: Path) -> int:
    """A trace's JSON size; for a gzipped one, the size gzip records in its trailer (modulo 4 GiB), when it can be
    one (capture/event_stream.py's ``gzip_json_size``)."""
    size = path.stat().st_size
    recorded = gzip_json_size(path)
    return size if recorded is None else max(size, recorded)


def too_big_to_augment(raw_trace: str | os.PathLike[str] | dict) -> bool:
    """Whether a trace file holds more than AUGMENT_LIMIT_BYTES of JSON (a parsed dict never does: it is in memory
    already)."""
    return not isinstance(raw_trace, dict) and Path(raw_trace).exists() and \
        uncompressed_size(Path(raw_trace)) > AUGMENT_LIMIT_BYTES


class OutputSkipped(Exception):
    """A renderer that cannot write its file for this report says why (the other files are still written)."""


class NotApplicable(OutputSkipped):
    """The report has nothing for this file (memory.png without Nsight Compute counters): skipped silently."""


class Renderer(Protocol):
    """pyinstrument's renderer contract: ``render(report)`` is the whole output, text or bytes (or an iterator of
    byte chunks, written as they come), formatted from the Report (never computed); ``file_name`` is the file
    write_outputs puts it in (its extension says the format)."""

    file_name: str

    def render(self, report: Report) -> str | bytes | Iterator[bytes]: ...


class JsonRenderer:
    file_name = "report.json"

    def render(self, report: Report, before_findings: Callable[[], None] | None = None) -> Iterator[bytes]:
        return report.json_chunks(before_findings=before_findings)


class PngRenderer:
    file_name = "roofline.png"

    def render(self, report: Report) -> bytes:
        from roofline.render.png import render_png

        return render_png(report)


class MemoryPngRenderer:
    """The memory-access view, for a report with Nsight Compute counters joined (``report.ncu``)."""

    file_name = "memory.png"

    def render(self, report: Report) -> bytes:
        if report.ncu is None:
            raise NotApplicable
        from roofline.render.memory_png import render_memory_png

        return render_memory_png(report)


class HtmlRenderer:
    file_name = "report.html"

    def __init__(self) -> None:
        self._prepared: tuple[Report, dict] | None = None

    def prepare(self, report: Report, early: Any = None) -> None:
        """The page's op table and chart (most of a big report's page), built before the findings are known;
        ``early``: ``html_parts_meanwhile(report)``, started when the ops were placed, collected only when the
        page is rendered: report.json is written meanwhile rather than after a wait for the child."""
        from roofline.render.html import ops_parts

        self._prepared = (report, early if early is not None else Ready(ops_parts(report.ops)))

    def render(self, report: Report) -> Iterator[bytes]:
        from roofline.render.html import html_chunks

        prepared = self._prepared[1].result() if self._prepared is not None and self._prepared[0] is report else None
        self._prepared = None
        return (chunk.encode() for chunk in html_chunks(report, prepared))


class TraceRenderer:
    """The run's own Chrome trace (a path, or its parsed dict) with each op's roofline figures in its args."""

    file_name = "trace.json.gz"

    def __init__(self, raw_trace: str | os.PathLike[str] | dict) -> None:
        self.raw_trace = raw_trace

    def render(self, report: Report) -> str:
        from roofline.render.trace_augment import augmented_trace_json

        if too_big_to_augment(self.raw_trace):
            raise OutputSkipped(f"trace.json.gz not written: the trace is over {AUGMENT_LIMIT_BYTES >> 20} MiB of "
                                "JSON; open the original in Perfetto, the report carries the per-op figures")
        return augmented_trace_json(self.raw_trace, report)


class RawTraceRenderer:
    """A profiler trace too large to annotate (over AUGMENT_LIMIT_BYTES of JSON), copied as it is into trace.json.gz
    a megabyte at a time: a profile's trace is a temporary file, so skipping it would leave the user none, and
    reading it whole to annotate it took a whole-script profile of HF generate with Python stacks past 12 GB."""

    file_name = "trace.json.gz"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def render(self, report: Report) -> Iterator[bytes]:
        import gzip

        with (gzip.open if self.path.suffix == ".gz" else open)(self.path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                yield chunk


class TextFileRenderer:
    """A file the run produced beside the report (ncu's CSV), written with the others, whole or not at all."""

    def __init__(self, file_name: str, text: str) -> None:
        self.file_name = file_name
        self.text = text

    def render(self, report: Report) -> str:
        return self.text


class BackgroundRenderer:
    """A renderer started now in a forked child (roofline/forked.py: the report shared copy-on-write, never
    pickled); ``render`` collects its output. Whatever goes wrong in the child, ``render`` renders in-process
    instead, so errors surface exactly as they would without the fork. The report must not change in between in
    anything the renderer draws (the doctor only adds findings, which the PNG does not show)."""

    def __init__(self, renderer: Renderer, report: Report) -> None:
        self.renderer = renderer
        self.file_name = renderer.file_name
        self._job = Forked(_rendered_apart, renderer, report, os.getpid(), niceness=PNG_CHILD_NICENESS)

    def render(self, report: Report) -> str | bytes | Iterator[bytes]:
        kind, value = self._job.result()
        if kind == "not applicable":
            raise NotApplicable(value)
        if kind == "skipped":
            raise OutputSkipped(value)
        return value


def _rendered_apart(renderer: Renderer, report: Report, parent: int) -> tuple[str, str | bytes]:
    """``_rendered`` in the forked child (or, if the child failed, in ``parent`` itself, as without the fork)."""
    if os.getpid() != parent and isinstance(renderer, PngRenderer):
        import_matplotlib_without_property_docs()
    return _rendered(renderer, report)


def import_matplotlib_without_property_docs() -> None:
    """Import the PNG's matplotlib (roofline.render.png) in a process that draws one chart and exits: without the
    property tables matplotlib writes into the docstrings of every Artist class as it creates them
    (``matplotlib.artist.kwdoc``, about 0.15 s of the import's ~0.5 s of CPU), which nothing there reads. The
    chart is the same bytes; the docstrings of that process's matplotlib lack the tables. Never in a process that
    goes on (a notebook, the API): help() there must stay whole."""
    if "roofline.render.png" in sys.modules:
        return
    import matplotlib.artist

    kwdoc = getattr(matplotlib.artist, "kwdoc", None)
    if kwdoc is None:  # another matplotlib: imported as it comes
        import roofline.render.png  # noqa: F401
        return
    matplotlib.artist.kwdoc = lambda artist: ""
    try:
        import roofline.render.png  # noqa: F401
    finally:
        matplotlib.artist.kwdoc = kwdoc


def _rendered(renderer: Renderer, report: Report) -> tuple[str, str | bytes]:
    """A renderer's whole output, or why it has none, as something a child can send back."""
    try:
        content = renderer.render(report)
    except NotApplicable as why:
        return "not applicable", str(why)
    except OutputSkipped as why:
        return "skipped", str(why)
    return "content", content if isinstance(content, (str, bytes)) else b"".join(content)


def is_big(report: Report) -> bool:
    """A report big enough that its PNG and its doctor are worth a forked child each (BACKGROUND_PNG_MIN_OPS)."""
    return len(report.ops) >= BACKGROUND_PNG_MIN_OPS


class DrawnPngRenderer:
    """roofline.png from a drawer started before the trace was read (render/png_drawer.py), sent the report's chart
    now; drawn here if the drawer has none."""

    file_name = PngRenderer.file_name

    def __init__(self, drawer: Any, report: Report) -> None:
        self._drawer = drawer
        drawer.send_chart(report)

    def render(self, report: Report) -> bytes:
        png = self._drawer.png()
        return png if png is not None else PngRenderer().render(report)


def in_background(renderers: Sequence[Renderer], report: Report, drawer: Any = None) -> list[Renderer]:
    """The renderers with a big report's roofline PNG started in the background now (``is_big``), where fork is
    available and safe (roofline/forked.py): by ``drawer`` where one was started (render/png_drawer.py), else by
    a forked child. A drawer a small report does not want is stopped."""
    if not is_big(report) or not can_fork():
        if drawer is not None:
            drawer.stop()
        return list(renderers)
    if drawer is not None and not any(isinstance(r, PngRenderer) for r in renderers):
        drawer.stop()
    return [(DrawnPngRenderer(drawer, report) if drawer is not None else BackgroundRenderer(r, report))
            if isinstance(r, PngRenderer) else r for r in renderers]


def png_drawer_for(path: str | os.PathLike[str]) -> Any:
    """A PNG drawer started now for a trace file big enough that its report will likely want one (at least
    DRAWER_MIN_BYTES of JSON: ~20,000 ops, ``is_big``), else None."""
    try:
        big = uncompressed_size(Path(path)) >= DRAWER_MIN_BYTES
    except OSError:
        return None
    if not big:
        return None
    from roofline.render.png_drawer import PngDrawer

    return PngDrawer.start()


# A trace of this much JSON holds some 200,000 events: its report is big (is_big) unless most are not ops.
DRAWER_MIN_BYTES = 64 << 20


def prepare(renderers: Sequence[Renderer], report: Report, html_parts: Any = None) -> None:
    """Let the renderers that can build what needs no findings now (``prepare``), while the doctor runs elsewhere.
    ``html_parts``: report.html's op table and chart started earlier (``html_parts_meanwhile``)."""
    for renderer in renderers:
        if isinstance(renderer, HtmlRenderer):
            renderer.prepare(report, html_parts)


def html_parts_meanwhile(report: Report, drawer: Any = None) -> Any:
    """report.html's op table and chart of a report whose ops are placed and summarised, worked out by a forked
    child from now on for a big report (while the rest of the report is built: one CPU is idle then), in-process
    when collected otherwise. Given a PNG drawer (render/png_drawer.py), that child first sends it the roofline
    chart's calls. The ops must not change afterwards (the doctor and roofline.png only read them)."""
    from roofline.render.html import ops_parts

    big = len(report.ops) >= BACKGROUND_PNG_MIN_OPS
    if drawer is not None and big and can_fork():
        return drawer.send_chart_before(report, ops_parts, report.ops)
    return meanwhile(ops_parts, report.ops, fork=big)


def report_renderers(*, png: bool = True, html: bool = True,
                     raw_trace: str | os.PathLike[str] | dict | None = None) -> list[Renderer]:
    """The files of a report-producing command: report.json, then roofline.png (and memory.png when the report has
    Nsight Compute counters), trace.json.gz, report.html."""
    renderers: list[Renderer] = [JsonRenderer()]
    if png:
        renderers.append(PngRenderer())
        renderers.append(MemoryPngRenderer())
    if raw_trace is not None:
        renderers.append(TraceRenderer(raw_trace))
    if html:
        renderers.append(HtmlRenderer())
    return renderers


def write_outputs(report: Report, out_dir: str | os.PathLike[str], renderers: Sequence[Renderer] | None = None, *,
                  raw_trace: str | os.PathLike[str] | dict | None = None, png: bool = True,
                  html: bool = True, findings: Callable[[], list] | None = None) -> tuple[list[Path], list[str]]:
    """Every command's one way to write its files: each renderer's output into ``out_dir`` (whole or not at all),
    by default ``report_renderers(png=, html=, raw_trace=)``. Returns the paths written and why any were not.

    ``findings``: where the report's findings will come from (a doctor running elsewhere), asked once, when first
    needed: report.json is written up to its findings field before, the other files after."""
    if renderers is None:
        renderers = report_renderers(png=png, html=html, raw_trace=raw_trace)
    settle = _Settle(report, findings)
    out = Path(out_dir)
    names: list[str] = []
    problems: list[str] = []
    with atomic_directory(out, OUTPUT_FILES) as tmp:
        for renderer in renderers:
            try:
                if isinstance(renderer, JsonRenderer):
                    content = renderer.render(report, before_findings=settle)
                else:
                    settle()
                    content = renderer.render(report)
            except NotApplicable:
                continue
            except OutputSkipped as why:
                problems.append(str(why))
                continue
            if isinstance(content, (str, bytes)):
                atomic_write_bytes(tmp / renderer.file_name, content.encode() if isinstance(content, str) else content)
            else:
                atomic_write_chunks(tmp / renderer.file_name, content)
            names.append(renderer.file_name)
        settle()
    return [out / name for name in names], problems


class _Settle:
    """Sets the report's findings from ``findings()`` the first time it is called (then does nothing)."""

    def __init__(self, report: Report, findings: Callable[[], list] | None) -> None:
        self.report, self.findings = report, findings

    def __call__(self) -> None:
        if self.findings is not None:
            findings, self.findings = self.findings, None
            self.report.findings = findings()
