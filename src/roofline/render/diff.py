"""A ReportDiff for people: a console summary (rich) and a self-contained HTML page. Formatting only."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from roofline.analyze.diff import ReportDiff, RowDelta
from roofline.render.console import TextBuffer


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds * 1e3:.3f} ms"


def _signed_ms(seconds: float) -> str:
    return f"{seconds * 1e3:+.3f} ms"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1f}%"


def render_diff_console(diff: ReportDiff, top: int = 15, width: int = 140) -> str:
    """The diff as console text (ANSI colour when ``color``); callers print it."""
    buf = TextBuffer()
    console = Console(file=buf, width=width, force_terminal=False, color_system=None, highlight=False)
    t = diff.total
    console.print(f"[bold]roofline diff[/bold]  A = {escape(diff.a_label)}   B = {escape(diff.b_label)}")
    for warning in diff.warnings:
        console.print(f"warning: {warning}", markup=False)
    for note in diff.notes:
        console.print(f"note: {note}", markup=False)
    console.print(
        f"{t.quantity}: A {_ms(t.a_total_s)} -> B {_ms(t.b_total_s)}  "
        f"({_signed_ms(t.delta_s)}, {_pct(t.delta_pct)})"
    )
    console.print(f"run-to-run noise: {_ms(t.noise_s)} ({t.noise_method})", markup=False)
    console.print(
        f"FLOPs: {diff.a_flops:.4g} -> {diff.b_flops:.4g}   bytes: {diff.a_bytes:.4g} -> {diff.b_bytes:.4g}"
    )
    console.print(_rows_table("By bound class", diff.classes, len(diff.classes)))
    console.print(_rows_table(f"Ops ({diff.op_key}), top {top} by |Δ time|", diff.ops, top))
    if diff.modules:
        console.print(_rows_table(f"Modules, top {top} by |Δ time|", diff.modules, top))
    bound_changes = diff.bound_changes
    if bound_changes:
        console.print(f"Bound changed for {len(bound_changes)} op group(s):")
        for row in bound_changes[:top]:
            console.print(f"  {row.key}: {row.a.bound} -> {row.b.bound}", markup=False)
    for title, items in (("Findings that appeared", diff.findings_appeared), ("Findings that went away", diff.findings_gone)):
        console.print(f"{title}: {len(items) or 'none'}")
        for f in items:
            console.print(f"  [{f.rule}] {f.title} (≈ {_ms(f.estimated_savings_s)})", markup=False)
    if t.threshold_pct is not None:
        console.print(f"gate --fail-above {t.threshold_pct:g}%: {'FAIL' if t.failed else 'pass'} — {t.reason}", markup=False)
    return buf.getvalue()


def _bytes(side) -> str:
    """A group's bytes; where some of its collectives' sizes went unrecorded, "?" or at least the known ones."""
    if side.unsized:
        return f">={side.bytes:.3g}" if side.bytes else "?"
    return f"{side.bytes:.3g}"


def _rows_table(title: str, rows: list[RowDelta], top: int) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for name, justify in (("key", "left"), ("time A", "right"), ("time B", "right"), ("Δ time", "right"), ("Δ %", "right"),
                          ("FLOPs A→B", "right"), ("bytes A→B", "right"), ("eff A→B", "right"), ("bound", "left")):
        table.add_column(name, justify=justify, overflow="fold", no_wrap=name != "key")
    for row in rows[:top]:
        a, b = row.a, row.b
        table.add_row(
            Text(row.key),
            _ms(a.time_s if a else None),
            _ms(b.time_s if b else None),
            _signed_ms(row.delta_time_s),
            _pct(row.delta_time_pct) if row.status == "changed" or row.status == "same" else row.status,
            f"{a.flops:.3g}→{b.flops:.3g}" if a and b else "",
            f"{_bytes(a)}→{_bytes(b)}" if a and b else "",
            f"{a.efficiency:.0%}→{b.efficiency:.0%}" if a and b else "",
            Text(f"{a.bound}→{b.bound}" if row.bound_changed else (a or b).bound),
        )
    return table


def diff_payload(diff: ReportDiff, max_rows: int = 2000) -> dict[str, Any]:
    """The diff as plain data for the HTML page; rows past ``max_rows`` (smallest changes) are left out."""

    def rows(items: list[RowDelta]) -> list[dict[str, Any]]:
        return [
            {
                "key": r.key,
                "status": r.status,
                "a": dataclasses.asdict(r.a) if r.a else None,
                "b": dataclasses.asdict(r.b) if r.b else None,
                "delta_time_s": r.delta_time_s,
                "delta_time_pct": r.delta_time_pct,
                "bound_changed": r.bound_changed,
            }
            for r in items[:max_rows]
        ]

    t = diff.total
    return {
        "kind": "diff",
        "a_label": diff.a_label,
        "b_label": diff.b_label,
        "total": {**dataclasses.asdict(t), "delta_s": t.delta_s, "delta_pct": t.delta_pct},
        "warnings": list(diff.warnings),
        "notes": list(diff.notes),
        "op_key": diff.op_key,
        "work": {"a_flops": diff.a_flops, "b_flops": diff.b_flops, "a_bytes": diff.a_bytes, "b_bytes": diff.b_bytes},
        "classes": rows(diff.classes),
        "ops": rows(diff.ops),
        "modules": rows(diff.modules),
        "n_ops": len(diff.ops),
        "n_modules": len(diff.modules),
        "findings_appeared": msgspec.to_builtins(diff.findings_appeared),
        "findings_gone": msgspec.to_builtins(diff.findings_gone),
    }


def render_diff_html(diff: ReportDiff) -> str:
    from roofline.render.html import page_html

    return page_html(diff_payload(diff), title=f"roofline diff · {diff.a_label} → {diff.b_label}", script="diff.js")
