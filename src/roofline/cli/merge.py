"""`roofline merge RUN_DIR`: the ranks of a distributed run (RUN_DIR/rank{r}/) merged into one report."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from roofline.cli.common import output_dir
from roofline.render.units import fmt_bytes, fmt_rate, fmt_time


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "merge",
        help="merge the per-rank reports of a distributed run (RUN_DIR/rank*/) into one report",
        description="Per-rank step time split into compute, communication and idle; the share of communication "
                    "hidden under compute; stragglers and the op that makes them slow; each collective's bus "
                    "bandwidth against the measured ceiling (`roofline ceilings --collectives`); doctor findings.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR",
                   help="directory holding rank0/, rank1/, ... (report.json + trace.json.gz)")
    p.add_argument("-o", "--output", type=output_dir, default=None, help="output directory (default: RUN_DIR)")
    p.add_argument("--ceilings", metavar="FILE",
                   help="collective ceilings JSON (`roofline ceilings --collectives --json`)")
    p.add_argument("--threshold", type=float, default=None,
                   help="straggler threshold: busy time above the median rank's by this fraction (default 0.1)")
    p.add_argument("--no-html", action="store_true", help="skip report.html")
    p.add_argument("--no-png", action="store_true", help="skip roofline.png")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline.distributed.merge import STRAGGLER_THRESHOLD, merge_run_dir, write_merged
    from roofline.doctor import diagnose
    from roofline.render.findings import render_findings

    threshold = STRAGGLER_THRESHOLD if args.threshold is None else args.threshold
    report = merge_run_dir(args.run_dir, ceilings_file=args.ceilings, threshold=threshold)
    report.findings = diagnose(report)
    written = write_merged(report, args.output or args.run_dir, png=not args.no_png, html=not args.no_html)
    sys.stdout.write(distributed_text(report))
    sys.stdout.write(render_findings(report.findings, total_time_s=report.summary.reference_time_s, top=10))
    print(f"wrote {written}")
    return 0


def distributed_text(report: Any) -> str:
    """The ranks, stragglers and collectives of a merged report, as text (formatting only)."""
    info = report.distributed
    lines = [f"{len(report.ranks)} rank(s), {info.backend if info else None} backend, per step:",
             f"  {'rank':>4}  {'step':>9}  {'compute':>9}  {'comm':>9}  {'exposed':>9}  {'hidden':>6}  {'idle':>9}"]
    for row in report.ranks:
        hidden = row.hidden_communication_share
        lines.append(
            f"  {row.rank:>4}  {fmt_time(row.step_time_s):>9}  {fmt_time(row.compute_time_s):>9}  "
            f"{fmt_time(row.communication_time_s):>9}  {fmt_time(row.exposed_communication_s):>9}  "
            f"{(f'{hidden:.0%}' if hidden is not None else '-'):>6}  {fmt_time(row.idle_time_s):>9}"
            + ("  straggler" if row.straggler else "")
        )
    if info is None:
        return "\n".join(lines) + "\n\n"
    for s in info.stragglers:
        lines.append(f"straggler: rank {s.rank} busy {fmt_time(s.busy_time_s)} per step, "
                     f"{fmt_time(s.excess_s)} above the other ranks' median; "
                     f"slowest: {s.slowest_op or 'unknown'}")
    if info.collectives:
        lines.append("collectives (per step; bus bandwidth vs the measured ceiling):")
        for c in info.collectives[:8]:
            bw = c.busbw_bytes_per_s
            ceiling = c.ceiling_busbw_bytes_per_s
            lines.append(
                f"  {c.kind:<15} {fmt_bytes(c.bytes):>10} x{c.calls_per_step:g}  {fmt_time(c.time_s):>9}  "
                f"busbw {fmt_rate(bw, 'B/s') if bw else '-':>12}"
                + (f"  ceiling {fmt_rate(ceiling, 'B/s')} ({c.ceiling_share:.0%})"
                   if ceiling and c.ceiling_share else "")
            )
    if info.collective_ceiling_note:
        lines.append(f"note: {info.collective_ceiling_note}")
    return "\n".join(lines) + "\n\n"
