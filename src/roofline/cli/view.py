"""`roofline view report.json -o report.html`: render a saved report as one self-contained HTML page."""

from __future__ import annotations

import argparse
from pathlib import Path

from roofline.cli.common import output_file
from roofline.io import atomic_write_text
from roofline.report import Report


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "view", help="render a saved report.json as a self-contained report.html",
        description="Write the self-contained HTML page (roofline chart, ops, modules, findings, memory, syncs) of "
                    "a report.json written earlier by analyze, profile, trace or doctor; it opens offline.")
    parser.add_argument("report", help="report.json (or .json.gz) written by analyze, profile, trace or doctor")
    parser.add_argument("-o", "--output", type=output_file, default=None, help="HTML file to write (default: report.html next to the report)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline.render.html import render_html

    report = Report.load(args.report)
    out = Path(args.output) if args.output else Path(args.report).with_name("report.html")
    atomic_write_text(out, render_html(report))
    print(f"wrote {out} ({len(report.ops):,} ops); open it in any browser, no network needed")
    return 0
