"""The files every report-producing command writes into its output directory, in one place.

report.json (the Report), roofline.png, report.html and trace.json.gz (the Chrome trace augmented with each
op's roofline figures, for Perfetto). Each file is written atomically; one renderer failing does not lose the
others, and the failure is named in the returned notes.
"""

from __future__ import annotations

import os
from pathlib import Path

from roofline.report import Report


def write_outputs(report: Report, out_dir: str | os.PathLike[str], *, raw_trace: str | os.PathLike[str] | dict | None = None,
                  png: bool = True, html: bool = True) -> tuple[list[Path], list[str]]:
    out = Path(out_dir)
    written: list[Path] = [report.save(out / "report.json")]
    problems: list[str] = []
    if png:
        from roofline.render.png import plot_roofline

        written.append(plot_roofline(report, out / "roofline.png"))
    if raw_trace is not None:
        from roofline.render.trace_augment import write_augmented_trace

        written.append(write_augmented_trace(raw_trace, report, out / "trace.json.gz"))
    if html:
        from roofline.io import atomic_write_text
        from roofline.render.html import render_html

        written.append(atomic_write_text(out / "report.html", render_html(report)))
    return written, problems
