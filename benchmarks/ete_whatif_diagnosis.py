"""Where a saved `benchmarks/ete.py` run's what-if misses come from, per round, with no GPU (issue 21).

    PYTHONPATH=src python3 benchmarks/ete_whatif_diagnosis.py OUT [OUT ...]

Per what-if and round: the source report's step measured without the profiler (the calibrated host model's anchor),
its unchanged replay (host and device streams), the projection's host and device streams (calibrated and dispatch
host models) and, where the run has the target's own report (profiled for the diagnosis, or a workload of the same
configuration: `ete_offline.TARGET_TWINS`), that report's step, host and measured device time; then the target's
timings grouped by round. Per run: each host-bound configuration's report step over its true time (is the host slower
right after a profiler session? the report's step is timed just after the previous configuration's profile, the
true times tens of seconds later) and each repeat's timing over its round's median by position (the first repeat
follows the last profile). Text to stdout; the figures of benchmarks/results/h200/ete/WHATIF_DIAGNOSIS.md.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from ete_common import change_of  # noqa: E402
from ete_offline import _reports, _rounds, _target_reports, has_reports, host_costs_of  # noqa: E402

from roofline.analyze.efficiency import load_table  # noqa: E402
from roofline.analyze.whatif import predict_report  # noqa: E402


def _ms(x: float) -> str:
    return f"{x * 1e3:.2f}"


def per_round(out: Path) -> list[str]:
    res = json.loads((out / "ete.json").read_text())
    costs, table, rep = host_costs_of(res), load_table(), res["repeats"]
    lines = [f"== {out.name}: {res.get('rounds')} rounds of {rep} repeats"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = _reports(out, Path(tmp))
        for p in res["whatif"]:
            sources, change = _rounds(folder, f"source:{p['pair']}"), change_of(p)
            if not sources or not p.get("true_repeats_s"):
                continue
            tr = p["true_repeats_s"]
            lines.append(f"-- {p['pair']}: target true {_ms(p['true_s'])} (IQR {_ms(p['true_spread_s'])}), source "
                         f"true {_ms(p['source_true_s'])}; target repeats by round "
                         f"{[[round(x * 1e3, 2) for x in tr[i:i + rep]] for i in range(0, len(tr), rep)]}")
            target = _target_reports(folder, p["pair"])
            for i, r in enumerate(sources):
                pr = predict_report(r, table=table, host_costs=costs, **change)
                sm = predict_report(r, table=table, host_costs=costs)
                dp = predict_report(r, table=table, host_costs=costs, host_model="dispatch", **change)
                line = (f"   r{i + 1} source: unprofiled {_ms(r.step_time.median_s)} replay {_ms(sm.step_time_s)} "
                        f"host {_ms(sm.host_time_s)} dev {_ms(sm.device_time_s)} ({sm.bound}) | projected "
                        f"{_ms(pr.step_time_s)} host {_ms(pr.host_time_s)} dev {_ms(pr.device_time_s)} ({pr.bound}); "
                        f"dispatch host {_ms(dp.host_time_s)}")
                if i < len(target):
                    tp = predict_report(target[i], table=table, host_costs=costs)
                    line += (f" | target report: unprofiled {_ms(target[i].step_time.median_s)} host "
                             f"{_ms(tp.host_time_s)} dev {_ms(tp.device_time_s)} ({tp.bound})")
                lines.append(line)
    return lines


def after_profiling(out: Path) -> list[str]:
    res = json.loads((out / "ete.json").read_text())
    rep = res["repeats"]
    host_bound, device_bound, position = [], [], [[] for _ in range(rep)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = _reports(out, Path(tmp))
        items = [(w["workload"], w["workload"], w.get("true_s"), w.get("true_repeats_s")) for w in res["workloads"]]
        items += [(p["pair"], "source:" + p["pair"], p.get("source_true_s"), p.get("source_true_repeats_s"))
                  for p in res["whatif"]]
        for label, key, true, repeats in items:
            reports = _rounds(folder, key)
            if not reports or not true:
                continue
            device = statistics.median(sum(o.time_s for o in r.ops) for r in reports)
            ratios = [r.step_time.median_s / true for r in reports if r.step_time]
            is_host = true > 1.15 * device
            (host_bound if is_host else device_bound).append((label, ratios))
            if repeats and is_host:
                for i in range(0, len(repeats), rep):
                    chunk = repeats[i:i + rep]
                    mid = statistics.median(chunk)
                    for j, x in enumerate(chunk):
                        position[j].append(x / mid)
    hb = [v for _, x in host_bound for v in x]
    db = [v for _, x in device_bound for v in x]
    lines = [f"== {out.name}: the report's unprofiled step (just after the previous configuration's profile) over "
             "the true time, host-bound configurations (true > 1.15 x device)"]
    lines += [f"   {label}: {[round(x, 2) for x in ratios]}" for label, ratios in host_bound]
    if hb and db:
        lines.append(f"   host-bound: median {statistics.median(hb):.2f}, {sum(v > 1 for v in hb)} of {len(hb)} "
                     f"above 1; device-bound: median {statistics.median(db):.2f}, {sum(v > 1 for v in db)} of {len(db)} above 1")
    lines.append("   each repeat's timing over its round's median by position (host-bound, median): "
                 f"{[round(statistics.median(p), 3) for p in position if p]}")
    return lines


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: ete_whatif_diagnosis.py OUT [OUT ...]", file=sys.stderr)
        return 2
    for arg in sys.argv[1:]:
        out = Path(arg)
        if not has_reports(out):
            print(f"error: {out} has no ete.json with its reports (a directory benchmarks/ete.py wrote)",
                  file=sys.stderr)
            return 2
        print("\n".join(per_round(out) + after_profiling(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
