"""The rule registry and `diagnose`: every rule is a pure function Report -> list[Finding], registered by name."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import numpy as np

from roofline.errors import RooflineError
from roofline.report import Finding, Report

Check = Callable[[Report], list[Finding]]


@dataclasses.dataclass(frozen=True)
class Rule:
    name: str
    check: Check
    summary: str


RULES: dict[str, Rule] = {}

_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


def register(name: str, summary: str) -> Callable[[Check], Check]:
    """Decorator: register ``check`` under ``name``; every Finding it returns carries that rule name."""

    def wrap(check: Check) -> Check:
        if name in RULES:
            raise ValueError(f"doctor rule {name!r} registered twice")
        RULES[name] = Rule(name, check, summary)
        return check

    return wrap


def diagnose(report: Report, *, rules: Iterable[str] | None = None) -> list[Finding]:
    """Run the rules over the report's evidence; findings ranked by estimated savings, largest first.

    Pure: reads the report, never changes it. Each finding's share_of_time is its saving over the summary's
    reference time, the one figure every view shows. A rule that fails on odd evidence does not hide the others' findings;
    its failure becomes an 'info' finding that says so.
    """
    from roofline.doctor.evidence import memoised

    selected = _select(rules)
    findings: list[Finding] = []
    with memoised():
        cap = profiled_time_s(report)
        for rule in selected:
            try:
                produced = rule.check(report)
            except Exception as exc:  # noqa: BLE001 - one rule's bug must not cost the user every other finding
                produced = [Finding(
                    rule=rule.name, title=f"rule {rule.name} could not run on this report", category="doctor",
                    evidence={"error": f"{type(exc).__name__}: {exc}"}, severity="info",
                    savings_method="not estimated: the rule failed",
                )]
            for finding in produced:
                finding.rule = rule.name
                _bound_savings(finding, cap)
            findings.extend(produced)
    base = report.summary.reference_time_s
    for finding in findings:
        finding.share_of_time = finding.estimated_savings_s / base if base else None
    return rank(findings)


def profiled_time_s(report: Report) -> float:
    """The longest honest reading of how long the profile covers: the steps' wall time, the ops' summed time,
    the host span of each step's ops, the measured step time, or the span of the device timeline (op time and
    measured sync stalls together when nothing else is known). No finding can save more than this."""
    from roofline.doctor.evidence import kernel_table, step_spans

    span = 0.0
    if report.kernels:
        table = kernel_table(report)
        span = float(np.max(table.start_s + table.dur_s)) - float(np.min(table.start_s))
    spans = step_spans(report)
    # Each step's first start counts from at most 0.0 and its last end to at least 0.0 (a step's clock starts at 0).
    first, last = np.minimum(spans.earliest_start, 0.0), np.maximum(spans.latest_end, 0.0)
    host = sum((last - first).tolist())
    stalls = sum(site.stall_s for site in report.syncs)
    timed = [t.median_s * max(report.steps, 1) for t in (report.step_time, report.profiled_step_time) if t]
    return max(report.summary.wall_time_s or 0.0, report.summary.total_time_s + stalls, span, host, *timed)


def _bound_savings(finding: Finding, cap: float) -> None:
    if cap > 0 and (finding.estimated_savings_s or 0.0) > cap:
        finding.estimated_savings_s = cap
        finding.savings_method += " (capped at the profiled time)"


def rank(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-(f.estimated_savings_s or 0.0), _SEVERITY_ORDER.get(f.severity, 3), f.rule))


def _select(names: Iterable[str] | None) -> list[Rule]:
    _load_rules()
    if names is None:
        return list(RULES.values())
    names = list(names)
    unknown = [n for n in names if n not in RULES]
    if unknown:
        raise RooflineError(f"unknown doctor rule(s) {', '.join(unknown)}; known: {', '.join(sorted(RULES))}")
    return [RULES[n] for n in names]


def _load_rules() -> None:
    from roofline.doctor import rules  # noqa: F401 - importing the package registers every rule
