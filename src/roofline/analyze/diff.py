"""What changed between two Reports: per op (name + module), per module and per bound class, findings that
appeared or went away, and whether the total got worse by more than run-to-run noise.

Pure data: renderers (render/diff.py) print it, the CLI (cli/diff.py) turns the verdict into an exit code.
Rows of a group sum time, FLOPs and bytes over its op calls; a group's efficiency is the time-weighted mean of
its calls' efficiencies and its bound is the bound of the calls holding most of its time.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from roofline.analyze.communication import message_unrecorded
from roofline.capture.trace_model import GRAPH_REPLAY_LABEL, GRAPH_REPLAY_OP
from roofline.report import Finding, OpRecord, Report, Timing


@dataclass
class Side:
    """One group's figures in one report."""

    time_s: float = 0.0
    flops: float = 0.0
    bytes: float = 0.0
    efficiency: float = 0.0
    bound: str = ""
    calls: int = 0
    unsized: int = 0  # calls of collectives whose message the trace did not record: bytes unknown, not 0


@dataclass
class RowDelta:
    key: str
    a: Side | None
    b: Side | None

    @property
    def status(self) -> str:
        if self.a is None:
            return "added"
        if self.b is None:
            return "removed"
        return "changed" if self.delta_time_s or self.bound_changed else "same"

    @property
    def delta_time_s(self) -> float:
        return (self.b.time_s if self.b else 0.0) - (self.a.time_s if self.a else 0.0)

    @property
    def delta_time_pct(self) -> float | None:
        if not self.a or self.a.time_s <= 0:
            return None
        return 100.0 * self.delta_time_s / self.a.time_s

    @property
    def bound_changed(self) -> bool:
        return bool(self.a and self.b and self.a.bound != self.b.bound)


@dataclass
class FindingChange:
    rule: str
    title: str
    locations: list[str]
    estimated_savings_s: float
    fix: str


@dataclass
class TotalVerdict:
    """The gate's inputs and answer. ``noise_s`` is the run-to-run spread the change must exceed."""

    quantity: str
    a_total_s: float
    b_total_s: float
    noise_s: float
    noise_method: str
    threshold_pct: float | None = None
    failed: bool = False
    reason: str = ""

    @property
    def delta_s(self) -> float:
        return self.b_total_s - self.a_total_s

    @property
    def delta_pct(self) -> float | None:
        return 100.0 * self.delta_s / self.a_total_s if self.a_total_s > 0 else None


@dataclass
class ReportDiff:
    a_label: str
    b_label: str
    total: TotalVerdict
    ops: list[RowDelta] = field(default_factory=list)
    modules: list[RowDelta] = field(default_factory=list)
    classes: list[RowDelta] = field(default_factory=list)
    findings_appeared: list[FindingChange] = field(default_factory=list)
    findings_gone: list[FindingChange] = field(default_factory=list)
    a_flops: float = 0.0
    b_flops: float = 0.0
    a_bytes: float = 0.0
    b_bytes: float = 0.0
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how A and B were compared, where not the plain way
    op_key: str = "name @ module"  # "name" where one side has no module paths (see diff_reports)

    @property
    def bound_changes(self) -> list[RowDelta]:
        return [row for row in self.ops if row.bound_changed]


def diff_reports(a: Report, b: Report, a_label: str = "A", b_label: str = "B", fail_above_pct: float | None = None) -> ReportDiff:
    """Compare B against A (B is the new run). Rows are sorted by |time change|, largest first.

    A and B may be one run read two ways (``same_run``: a run's report and `roofline trace` of the trace.json.gz
    it wrote): then each side's figures are per step (the run's report may hold one step's medians, the trace's
    every profiled step), ops are keyed by name alone where one side has no module paths (a trace records them
    only with ``with_modules``), and neither devices nor workload names are warned about: they are one run's."""
    one_run = same_run(a, b)
    per_a, per_b = _steps(a), _steps(b)
    modules = _has_modules(a) == _has_modules(b) if one_run else True  # where both or neither have module paths
    replays_a, replays_b = replay_order(a.ops), replay_order(b.ops)

    def op_key(replays: dict[str, str]):
        if modules:
            return lambda op: f"{replays.get(op.name, op.name)} @ {op.module or '(top level)'}"
        return lambda op: replays.get(op.name, op.name)

    replay_note = _replay_note(replays_a, replays_b, a_label, b_label)
    return ReportDiff(
        a_label=a_label,
        b_label=b_label,
        total=total_verdict(a, b, fail_above_pct, per=(per_a, per_b), one_run=bool(one_run)),
        ops=_rows(a.ops, b.ops, op_key(replays_a), per_a, per_b, op_key(replays_b)),
        modules=_rows(a.ops, b.ops, lambda op: op.module or "(top level)", per_a, per_b) if modules else [],
        classes=_rows(a.ops, b.ops, lambda op: op.bound, per_a, per_b),
        findings_appeared=_finding_changes(b.findings, a.findings, modules),
        findings_gone=_finding_changes(a.findings, b.findings, modules),
        op_key="name @ module" if modules else "name",
        a_flops=sum(op.flops for op in a.ops) / per_a,
        b_flops=sum(op.flops for op in b.ops) / per_b,
        a_bytes=_traffic(a.ops) / per_a,
        b_bytes=_traffic(b.ops) / per_b,
        warnings=[] if one_run else device_warnings(a, b) + workload_warnings(a, b),
        notes=([_same_run_line(a, b, one_run, per_a, per_b, modules)] if one_run else _steps_line(per_a, per_b))
              + replay_note,
    )


def replay_order(ops: list[OpRecord]) -> dict[str, str]:
    """Each labelled CUDA graph replay row's name ("CUDA graph replay #3") -> the same row numbered by the order its
    graph is first replayed in the report. Capture numbers count per process (capture/cuda_graphs.py): two runs in
    one notebook number their graphs #1, #2 and #3, #4, and keyed by name their replays never paired."""
    order: dict[str, str] = {}
    for op in sorted((op for op in ops if op.name.startswith(GRAPH_REPLAY_LABEL)), key=lambda op: op.index):
        if op.name not in order:
            order[op.name] = f"{GRAPH_REPLAY_OP} {len(order) + 1} (by first replay)"
    return order


def _replay_note(a: dict[str, str], b: dict[str, str], a_label: str, b_label: str) -> list[str]:
    """Why replay rows are named by their order where the two reports' capture numbers differ."""
    if not a or not b or list(a) == list(b):
        return []

    def numbers(replays: dict[str, str]) -> str:
        return ", ".join(name.removeprefix(GRAPH_REPLAY_OP + " ") for name in replays)

    return [f"CUDA graph replays paired by the order their graphs were first replayed, not by capture number "
            f"({a_label}: {numbers(a)}; {b_label}: {numbers(b)}): capture numbers count per process"]


def _traffic(ops: list[OpRecord]) -> float:
    """The ops' memory traffic, as Summary.total_bytes counts it: a collective's bytes are its message (unknown,
    0, where the trace recorded no size), not memory traffic; its row shows it."""
    return sum(op.bytes for op in ops if op.bound != "communication")


def same_run(a: Report, b: Report) -> str:
    """"A" or "B": the side that is `roofline trace` of the trace the other side's run wrote (its
    ``extra["written_by_roofline"]``, analyze/trace_file.py, names the run: its workload and the time it was
    captured, or the profiler's trace file); "" when A and B are not one run."""
    for side, read, other in (("B", b, a), ("A", a, b)):
        written = read.extra.get("written_by_roofline")
        if read.kind != "trace" or other.kind == "trace" or not isinstance(written, dict) \
                or written.get("workload") != other.workload:
            continue
        source = other.extra.get("trace")
        path = source.get("path") if isinstance(source, dict) else None
        if (written.get("captured_at") and written["captured_at"] == other.environment.timestamp) or \
                (written.get("trace_name") and written["trace_name"] == path):
            return side
    return ""


def _steps(report: Report) -> int:
    """How many steps the report's ops cover (a live run's report: one step's medians; a trace's: every step)."""
    return max(int(report.steps or 1), 1)


def _steps_line(per_a: int, per_b: int) -> list[str]:
    """Two runs that profiled different numbers of steps (`--active 5` against the default 3): their ops' sums
    cover different spans, so each side is divided by its own steps (and the step-time spread is per step)."""
    if per_a == per_b:
        return []
    return [f"compared per step: A's ops cover {per_a} profiled step(s), B's {per_b}; each side's times, FLOPs, bytes "
            "and calls are divided by its own"]


def _has_modules(report: Report) -> bool:
    return any(op.module for op in report.ops)


def _same_run_line(a: Report, b: Report, trace_side: str, per_a: int, per_b: int, modules: bool) -> str:
    run = a if trace_side == "B" else b
    other = "A" if trace_side == "B" else "B"
    compared = ["per step" + (f" (A's ops cover {per_a} step(s), B's {per_b})" if per_a != per_b else "")]
    if not modules:
        compared.append("ops and findings by name (one side has no module paths)")
    return (f"A and B are one run of {run.workload} read two ways ({other}: `roofline {run.kind}`, {trace_side}: "
            f"`roofline trace` of its trace.json.gz), compared {', '.join(compared)}: what differs is what each "
            "reading counts, not the code or the device")


def device_name_of(report: Report) -> str:
    return report.environment.device_name or report.ceilings.device_name or report.ceilings.device


def device_warnings(a: Report, b: Report) -> list[str]:
    """A line when the two runs ran on different devices: their times then differ by hardware, not only code."""
    da, db = device_name_of(a), device_name_of(b)
    if not da or not db or da == db:
        return []
    return [f"the runs are on different devices (A: {da}; B: {db}): time changes reflect the hardware as well as "
            "the code"]



# Below this share of time in op groups (name @ module) both runs have, two runs are not one workload changed.
SHARED_TIME_FLOOR = 0.2


def workload_warnings(a: Report, b: Report) -> list[str]:
    """What makes A and B not one workload measured twice: few ops in common (by time), or different names."""
    named = f" ({a.workload} vs {b.workload})" if a.workload and b.workload and a.workload != b.workload else ""
    shared = _shared_time_share(a, b)
    if shared is not None and shared < SHARED_TIME_FLOOR:
        return [f"A and B are different workloads{named}: only {shared:.0%} of their time is in ops (name @ module) "
                "both have; the changes below compare unrelated runs, not one workload before and after a change"]
    if named and not (_named_after_its_file(a) or _named_after_its_file(b)):
        share = f"{shared:.0%} of their time is in ops both have" if shared is not None else "no ops to compare"
        return [f"A and B are different workloads{named}; {share}"]
    return []


def _named_after_its_file(report: Report) -> bool:
    """A trace report of a raw trace takes its file's name for workload (before.json, after.json: never the same for
    two traces of one model); one of roofline's own trace.json.gz keeps the workload its run was named."""
    return report.kind == "trace" and not (report.extra or {}).get("written_by_roofline")


def _shared_time_share(a: Report, b: Report) -> float | None:
    keys_a = {(op.name, op.module) for op in a.ops}
    keys_b = {(op.name, op.module) for op in b.ops}
    total = sum(op.time_s for op in a.ops) + sum(op.time_s for op in b.ops)
    if not total:
        return None
    shared = (sum(op.time_s for op in a.ops if (op.name, op.module) in keys_b)
              + sum(op.time_s for op in b.ops if (op.name, op.module) in keys_a))
    return shared / total


def total_verdict(a: Report, b: Report, fail_above_pct: float | None = None, per: tuple[int, int] = (1, 1),
                  one_run: bool = False) -> TotalVerdict:
    """Total device time of A and B, the spread it must beat, and (given a threshold) whether it failed.

    The compared quantity is ``Summary.total_time_s`` (device time summed over ops) when both reports have it,
    else the step-time medians. The noise is the sum of both reports' interquartile spreads of the
    un-profiled step time (``step_time``), else of ``profiled_step_time``; with neither, it is zero and only the
    threshold applies. Summing the two spreads is deliberately conservative, so a CI gate does not flake.
    """
    if a.summary.total_time_s > 0 and b.summary.total_time_s > 0:
        quantity = "total device time (Summary.total_time_s, sum over ops)"
        a_total, b_total = a.summary.total_time_s, b.summary.total_time_s
        if per != (1, 1):
            quantity = "total device time per step (Summary.total_time_s / steps its ops cover)"
            a_total, b_total = a_total / per[0], b_total / per[1]
    else:
        quantity = "step time median"
        a_total, b_total = _median(a), _median(b)
    noise_s, noise_method = _noise(a, b) if not one_run else (
        0.0, "none: A and B are one run read twice, so no run-to-run spread lies between them")
    verdict = TotalVerdict(quantity, a_total, b_total, noise_s, noise_method, fail_above_pct)
    if fail_above_pct is not None:
        _judge(verdict, fail_above_pct)
    return verdict


def _judge(verdict: TotalVerdict, pct: float) -> None:
    delta, rel = verdict.delta_s, verdict.delta_pct
    if rel is None:
        verdict.reason = "report A has no total time; nothing to compare"
        return
    over_threshold = rel > pct
    over_noise = delta > verdict.noise_s
    verdict.failed = over_threshold and over_noise
    if verdict.failed:
        verdict.reason = f"worse by {rel:+.2f}% (> {pct:g}%) and by {delta * 1e3:.3f} ms (> noise {verdict.noise_s * 1e3:.3f} ms)"
    elif over_threshold:
        verdict.reason = f"worse by {rel:+.2f}% but within run-to-run noise ({delta * 1e3:.3f} ms <= {verdict.noise_s * 1e3:.3f} ms)"
    else:
        verdict.reason = f"change {rel:+.2f}% is within the {pct:g}% threshold"


def _median(report: Report) -> float:
    for timing in (report.step_time, report.profiled_step_time):
        if timing and timing.n > 0:
            return timing.median_s
    return 0.0


def _usable(timing: Timing | None) -> bool:
    return bool(timing and timing.n > 1)


def _noise(a: Report, b: Report) -> tuple[float, str]:
    for attr in ("step_time", "profiled_step_time"):
        ta, tb = getattr(a, attr), getattr(b, attr)
        if _usable(ta) and _usable(tb):
            return (
                ta.spread_s + tb.spread_s,
                f"IQR of {attr} of A ({ta.spread_s * 1e3:.3f} ms, n={ta.n}) + B ({tb.spread_s * 1e3:.3f} ms, n={tb.n})",
            )
    for attr in ("step_time", "profiled_step_time"):
        ta, tb = getattr(a, attr), getattr(b, attr)
        if _usable(ta) or _usable(tb):
            one = ta if _usable(ta) else tb
            which = "A" if one is ta else "B"
            return 2 * one.spread_s, f"2 x IQR of {attr} of {which} only ({one.spread_s * 1e3:.3f} ms, n={one.n}); the other report has no samples"
    return 0.0, "no run-to-run spread measured in either report: the threshold alone decides"


def _rows(a_ops: list[OpRecord], b_ops: list[OpRecord], key, per_a: int = 1, per_b: int = 1,
          key_b=None) -> list[RowDelta]:
    """Rows of the ops grouped by ``key`` (B's by ``key_b`` where given)."""
    a_groups, b_groups = _group(a_ops, key, per_a), _group(b_ops, key if key_b is None else key_b, per_b)
    rows = [RowDelta(k, a_groups.get(k), b_groups.get(k)) for k in {*a_groups, *b_groups}]
    rows.sort(key=lambda r: (-abs(r.delta_time_s), r.key))
    return rows


def _group(ops: list[OpRecord], key, per: int = 1) -> dict[str, Side]:
    """Each group's figures; over ``per`` steps, each step's share (time, work and calls divided by it)."""
    sides: dict[str, Side] = {}
    weighted_eff: dict[str, float] = defaultdict(float)
    time_by_bound: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for op in ops:
        k = key(op)
        side = sides.setdefault(k, Side())
        side.time_s += op.time_s
        side.flops += op.flops
        side.bytes += op.bytes
        side.calls += op.count
        if message_unrecorded(op):
            side.unsized += op.count
        weighted_eff[k] += op.efficiency * op.time_s
        time_by_bound[k][op.bound] += op.time_s
    for k, side in sides.items():
        side.efficiency = weighted_eff[k] / side.time_s if side.time_s > 0 else 0.0
        if per > 1:
            side.time_s, side.flops, side.bytes, side.calls = (side.time_s / per, side.flops / per, side.bytes / per,
                                                               round(side.calls / per))
        side.bound = max(time_by_bound[k].items(), key=lambda kv: (kv[1], kv[0]))[0]
    return sides


def _finding_key(finding: Finding, located: bool = True) -> tuple:
    """A finding's identity across runs; by rule alone where the locations (module paths) are not comparable."""
    return (finding.rule, tuple(sorted(finding.locations)) or finding.title) if located else (finding.rule,)


def _finding_changes(present: list[Finding], other: list[Finding], located: bool = True) -> list[FindingChange]:
    other_keys = {_finding_key(f, located) for f in other}
    changes = [
        FindingChange(f.rule, f.title, list(f.locations), f.estimated_savings_s, f.fix)
        for f in present
        if _finding_key(f, located) not in other_keys
    ]
    changes.sort(key=lambda c: -c.estimated_savings_s)
    return changes
