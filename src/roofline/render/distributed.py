"""The ranks, stragglers and collectives of a merged multi-rank report, as text. Formatting only."""

from __future__ import annotations

from roofline.render.units import fmt_bytes, fmt_rate, fmt_time
from roofline.report import Report


class DistributedRenderer:
    file_name = "distributed.txt"

    def render(self, report: Report) -> str:
        return distributed_text(report)


def distributed_text(report: Report) -> str:
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
