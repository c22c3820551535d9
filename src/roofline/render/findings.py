"""The doctor's findings as text: a ranked summary table, then each finding with its evidence, savings and fix.

Formatting only: every number comes from the Findings (and the report's step time, for the share column).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from roofline.render import FINDINGS_SHOWN  # noqa: F401 - the default of every findings cut-off
from roofline.render.console import fit, terminal_width, to_text
from roofline.render.units import fmt_bytes, fmt_pct, fmt_time
from roofline.report import Finding, Report

SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "grey50"}


def findings_table(findings: Sequence[Finding], *, total_time_s: float | None = None,
                   width: int | None = None) -> Table:
    """Ranked findings; below 100 columns the severity column (repeated in the details) is left out."""
    narrow = width is not None and width < 100
    table = Table(title=f"Doctor: {len(findings)} finding(s), largest estimated saving first", title_justify="left")
    table.add_column("#", justify="right", no_wrap=True)
    if not narrow:
        table.add_column("severity", no_wrap=True)
    table.add_column("saving", justify="right", no_wrap=True)
    shares = any(f.share_of_time is not None for f in findings) or bool(total_time_s)
    if shares:
        table.add_column("of time", justify="right", no_wrap=True)
    table.add_column("rule", no_wrap=True)
    table.add_column("finding", overflow="fold", ratio=1)
    for rank, f in enumerate(findings, 1):
        style = SEVERITY_STYLE.get(f.severity, "")
        row = [str(rank)] + ([] if narrow else [f"[{style}]{f.severity}[/{style}]" if style else f.severity])
        row.append(fmt_time(f.estimated_savings_s))
        if shares:
            share = f.share_of_time if f.share_of_time is not None else (
                f.estimated_savings_s / total_time_s if total_time_s else None)
            row.append(fmt_pct(share) if share is not None else "-")
        row += [f.rule, f.title]
        table.add_row(*row)
    return table


def _fmt_value(key: str, value: Any) -> str:
    if isinstance(value, float):
        if key.endswith("_s") and not key.endswith("_per_s"):
            return fmt_time(value)
        if key.startswith("bytes") or key.endswith("_bytes"):
            return fmt_bytes(value)
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        text = ", ".join(str(v) for v in value[:8]) + (", ..." if len(value) > 8 else "")
        return f"[{text}]"
    return str(value)


def finding_details(rank: int, f: Finding) -> str:
    lines = [f"{rank}. [{f.severity}] {f.title}  ({f.rule}, {f.category})"]
    for loc in f.locations[:5]:
        lines.append(f"   at {loc}")
    if f.evidence:
        evidence = "; ".join(f"{k}={_fmt_value(k, v)}" for k, v in f.evidence.items())
        lines.append(f"   evidence: {evidence}")
    lines.append(f"   estimated saving: {fmt_time(f.estimated_savings_s)} - {f.savings_method}")
    lines.append(f"   fix: {f.fix}")
    return "\n".join(lines)


def render_findings(findings: Sequence[Finding], *, total_time_s: float | None = None, top: int | None = None,
                    width: int | None = None) -> str:
    if not findings:
        return "Doctor: no findings.\n"
    shown = list(findings)[:top] if top else list(findings)
    width = width or terminal_width()
    text = to_text(findings_table(shown, total_time_s=total_time_s, width=width), width=width)
    details = fit("\n\n".join(finding_details(i, f) for i, f in enumerate(shown, 1)), width)
    more = f"\n\n({len(findings) - len(shown)} more finding(s) not shown; --findings 0 to see all)" if len(shown) < len(findings) else ""
    return text + "\n" + details + more + "\n"


class FindingsRenderer:
    """The doctor's findings as text, the largest ``top`` (0 or None: all)."""

    file_name = "findings.txt"

    def __init__(self, top: int | None = FINDINGS_SHOWN, width: int | None = None) -> None:
        self.top, self.width = top, width

    def render(self, report: Report) -> str:
        return render_findings(report.findings, total_time_s=report.summary.reference_time_s, top=self.top,
                               width=self.width)
