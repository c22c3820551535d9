"""The files every report-producing command writes into its output directory, in one place.

report.json (the Report), roofline.png, report.html and trace.json.gz (the Chrome trace augmented with each
op's roofline figures, for Perfetto). The directory is written whole or not at all (roofline.io.atomic_directory):
a failure or Ctrl-C part-way leaves the previous run's files as they were, never a mix of two runs.
"""

from __future__ import annotations

import os
from pathlib import Path

from roofline.io import atomic_directory
from roofline.report import Report

OUTPUT_FILES = ("report.json", "roofline.png", "report.html", "trace.json.gz")

# Augmenting reads the whole trace as JSON objects (about 10x its size in memory): above this, say so and skip.
AUGMENT_LIMIT_BYTES = 192 * 2**20


# deflate never compresses better than about 1032:1: a larger recorded size is not a gzip trailer (a cut file)
_MAX_DEFLATE_RATIO = 1032


def uncompressed_size(path: Path) -> int:
    """A trace's JSON size; for .gz, the size gzip records in its trailer (modulo 4 GiB), when it can be one."""
    size = path.stat().st_size
    if path.suffix == ".gz" and size >= 4:
        with path.open("rb") as fh:
            fh.seek(-4, os.SEEK_END)
            recorded = int.from_bytes(fh.read(4), "little")
        return max(size, recorded) if recorded <= size * _MAX_DEFLATE_RATIO else size
    return size


def write_outputs(report: Report, out_dir: str | os.PathLike[str], *, raw_trace: str | os.PathLike[str] | dict | None = None,
                  png: bool = True, html: bool = True) -> tuple[list[Path], list[str]]:
    out = Path(out_dir)
    names: list[str] = []
    problems: list[str] = []
    with atomic_directory(out, OUTPUT_FILES) as tmp:
        report.save(tmp / "report.json")
        names.append("report.json")
        if png:
            from roofline.render.png import plot_roofline

            plot_roofline(report, tmp / "roofline.png")
            names.append("roofline.png")
        if raw_trace is not None:
            from roofline.render.trace_augment import write_augmented_trace

            if isinstance(raw_trace, dict) or uncompressed_size(Path(raw_trace)) <= AUGMENT_LIMIT_BYTES:
                write_augmented_trace(raw_trace, report, tmp / "trace.json.gz")
                names.append("trace.json.gz")
            else:
                problems.append(f"trace.json.gz not written: the trace is over {AUGMENT_LIMIT_BYTES >> 20} MiB of "
                                "JSON; open the original in Perfetto, the report carries the per-op figures")
        if html:
            from roofline.io import atomic_write_text
            from roofline.render.html import render_html

            atomic_write_text(tmp / "report.html", render_html(report))
            names.append("report.html")
    return [out / name for name in names], problems
