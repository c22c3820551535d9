"""A Prediction for people: the step time with its range, what bounds it, the dominant ops, the per-module table
and the ops that change bound. Formatting only."""

from __future__ import annotations

from roofline.render.units import fmt_pct, fmt_time
from roofline.report import Prediction

ROWS = 12


def render_prediction(p: Prediction, top: int = ROWS) -> str:
    scenario = ", ".join(f"{k} {v}" for k, v in p.scenario.items()) or "as measured"
    lines = [f"predicted step ({scenario}) on {p.device_name}: {fmt_time(p.step_time_s)} "
             f"(range {fmt_time(p.low_s)} - {fmt_time(p.high_s)})"]
    if p.measured_step_time_s:
        lines.append(f"measured step (no profiler): {fmt_time(p.measured_step_time_s)}; predicted / measured "
                     f"{p.step_time_s / p.measured_step_time_s:.2f}")
    # On a CPU (``serial``) the ops run on the host thread: the two columns are the ops' own time and the Python
    # between them, not a device and a host stream.
    device, host = ("op", "Python") if p.bound == "serial" else ("device", "host")
    if p.bound == "serial":
        lines.append(f"one thread, no device stream: ops {fmt_time(p.device_time_s)} + Python between them "
                     f"{fmt_time(p.host_time_s)} over {p.ops} ops, {p.syncs} syncs")
    else:
        lines.append(f"{p.bound}-bound: host {fmt_time(p.host_time_s)}, device {fmt_time(p.device_time_s)} over "
                     f"{p.ops} ops, {p.syncs} syncs")
    lines.append("")
    lines.append(f"{'dominant ops':<44} {'calls':>6} {device:>10} {host:>10} {'measured':>10}  bound")
    for g in p.dominant[:top]:
        lines.append(f"{_cut(g.name, 44):<44} {g.calls:>6} {fmt_time(g.device_time_s):>10} "
                     f"{fmt_time(g.host_time_s):>10} {fmt_time(g.measured_time_s):>10}  {g.bound}")
    lines.append("")
    lines.append(f"{'module':<44} {device:>10} {host:>10} {'measured':>10} {'share':>7}")
    total = sum(m.device_time_s + m.host_time_s for m in p.modules) or 1.0
    for m in p.modules[:top]:
        lines.append(f"{_cut(m.module, 44):<44} {fmt_time(m.device_time_s):>10} {fmt_time(m.host_time_s):>10} "
                     f"{fmt_time(m.measured_time_s):>10} {fmt_pct((m.device_time_s + m.host_time_s) / total):>7}")
    if p.scenario:
        lines.append("")
        if p.bound_changes:
            lines.append("ops that change bound:")
            for c in p.bound_changes[:top]:
                where = f" ({c.module})" if c.module else ""
                lines.append(f"  {_cut(c.name + where, 60):<60} x{c.calls:<4} {c.before} -> {c.after}")
        else:
            lines.append("no op changes bound")
    for note in p.notes:
        lines.append(f"note: {note}")
    lines.append(f"method: {p.method}")
    return "\n".join(lines) + "\n"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
