"""`roofline diff A.json B.json [--html OUT] [--fail-above PCT]`: what changed from run A to run B.

Exit codes: 0 (no regression beyond the gate), 1 (``--fail-above`` given and the total got worse by more than
PCT percent and by more than the run-to-run noise of the two reports), 2 (a file is missing or not a report).
"""

from __future__ import annotations

import argparse

from roofline.cli.common import finite_number, non_negative_int, output_file
from roofline.errors import RooflineError
from roofline.io import atomic_write_text
from roofline.report import Report


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "diff", help="compare two reports: per op, module and bound class; CI gate",
        description="Compare report B against baseline A (two report.json files): total device time, each op, "
                    "module and bound class, with the change in time; --fail-above makes it a CI gate.")
    parser.add_argument("a", help="the baseline report.json")
    parser.add_argument("b", help="the new report.json")
    parser.add_argument("--html", type=output_file, default=None, metavar="OUT", help="also write the diff as a self-contained HTML page")
    parser.add_argument(
        "--fail-above", type=finite_number, default=None, metavar="PCT",
        help="exit 1 when B's total device time is worse than A's by more than PCT%% and by more than the run-to-run spread",
    )
    parser.add_argument("--top", type=non_negative_int, default=15, help="rows per console table (default 15)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline.analyze.diff import diff_reports
    from roofline.render.diff import render_diff_console, render_diff_html

    if args.fail_above is not None and args.fail_above < 0:
        raise RooflineError("--fail-above takes a non-negative percentage, e.g. --fail-above 5")
    a, b = Report.load(args.a), Report.load(args.b)
    diff = diff_reports(a, b, a_label=args.a, b_label=args.b, fail_above_pct=args.fail_above)
    print(render_diff_console(diff, top=args.top), end="")
    if args.html:
        atomic_write_text(args.html, render_diff_html(diff))
        print(f"wrote {args.html}")
    return 1 if diff.total.failed else 0
