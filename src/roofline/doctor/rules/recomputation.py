"""Recomputation across generation steps (no KV cache): each step redoes the work of the whole prefix.

Evidence: the same call site's matmul/attention ops called again and again (within one step, or across steps)
with the token dimension of their input growing by the same amount every call: 5, 6, 7, 8 rows... With a
cache, each call after the first would process only the new rows.
"""

from __future__ import annotations

from collections import defaultdict

from roofline.doctor.evidence import (ATTENTION_KINDS, MATMUL_KINDS, location, matmul_operands, once_per_diagnose,
                                      op_kind, op_table, rows, severity_for, top_locations)
from roofline.doctor.registry import register
from roofline.report import Finding, OpRecord, Report

RULE = "recomputation"
MIN_RUN = 3
WEIGHT_KINDS = frozenset({"linear", "mm", "addmm", "_addmm_activation"})


@once_per_diagnose  # recomputation and unbatched-loop both group the calls
def call_sites(report: Report) -> dict[tuple, list[tuple[OpRecord, list[int]]]]:
    """Matmul/attention calls grouped by call site, in the order they ran, with each call's activation shape."""
    table = op_table(report)
    shapes = table.per_call(_call_shapes)
    sites: dict[tuple, list[tuple[OpRecord, list[int]]]] = defaultdict(list)
    ops, calls, call_kind = table.ops, table.call, table.call_kind
    for i in table.run_of(shapes):
        op, c = ops[i], calls[i]
        a, weight = shapes[c]
        sites[(op.module, op.source, call_kind[c], a[-1], weight)].append((op, list(a)))
    return sites


def _call_shapes(op: OpRecord) -> tuple[list[int], tuple[int, ...] | None] | None:
    """A matmul/attention call's activation shape and, for a weight matmul, its weight's (None for other ops)."""
    kind = op_kind(op.name)
    if kind not in MATMUL_KINDS and kind not in ATTENTION_KINDS:
        return None
    operands = matmul_operands(op)
    if operands is None:
        return None
    a, b, _, _ = operands
    return a, (tuple(b) if kind in WEIGHT_KINDS else None)


def growing_runs(calls: list[tuple[OpRecord, list[int]]]) -> list[tuple[list[OpRecord], list[int], int]]:
    """Maximal runs of calls whose row count grows by one constant step: (ops, rows, step)."""
    runs = []
    counts = [rows(shape) for _, shape in calls]
    i = 0
    while i < len(calls) - 1:
        delta = counts[i + 1] - counts[i]
        j = i + 1
        if delta > 0:
            while j + 1 < len(calls) and counts[j + 1] - counts[j] == delta:
                j += 1
        if delta > 0 and j - i + 1 >= MIN_RUN:
            runs.append(([c[0] for c in calls[i:j + 1]], counts[i:j + 1], delta))
            i = j + 1
        else:
            i += 1
    return runs


def find_recomputation(report: Report) -> list[tuple[tuple, list[tuple[list[OpRecord], list[int], int]]]]:
    found = []
    for site, calls in call_sites(report).items():
        runs = growing_runs(calls)
        if runs:
            found.append((site, runs))
    return found


@register(RULE, "work per new token growing with sequence length (no KV cache)")
def check(report: Report) -> list[Finding]:
    found = find_recomputation(report)
    if not found:
        return []
    savings = 0.0
    time = 0.0
    ops: list[OpRecord] = []
    calls = 0
    longest: list[int] = []
    for _, runs in found:
        for run_ops, run_rows, delta in runs:
            for op, n in zip(run_ops[1:], run_rows[1:]):
                savings += op.time_s * (1.0 - delta / n)
            time += sum(op.time_s for op in run_ops)
            ops.extend(run_ops)
            calls += len(run_ops)
            if len(run_rows) > len(longest):
                longest = run_rows
    runs_total = sum(len(r) for _, r in found)
    sample = longest if len(longest) <= 8 else longest[:4] + ["..."] + longest[-2:]
    return [Finding(
        rule=RULE, category="recomputation",
        title=(f"recomputation: {len(found)} matmul/attention call sites redo the whole prefix every call "
               f"({runs_total} growing runs, rows {sample})"),
        evidence={"call_sites": len(found), "runs": runs_total, "calls": calls, "time_s": time,
                  "rows_longest_run": longest,
                  "sites": [location(r[0][0][0]) for _, r in found[:8]]},
        locations=top_locations(ops), estimated_savings_s=savings,
        savings_method=("for every call after the first of each growing run, its measured time x (1 - new rows / "
                        "rows processed): the share a KV cache would not recompute, assuming time proportional to "
                        "rows; only matmul/attention ops counted, so a lower bound for the whole step"),
        fix=("cache keys and values across generation steps (a static, preallocated KV cache written at the current "
             "position) and feed only the new token(s) to the model after the prefill"),
        severity=severity_for(report, savings),
    )]
