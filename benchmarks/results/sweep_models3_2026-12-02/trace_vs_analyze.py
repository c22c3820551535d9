"""FLOPs per step of `trace T/NAME.json` (make_traces.py) against `analyze fac.py:NAME` of the same set-up, by phase.

usage: trace_vs_analyze.py ANALYZE_REPORT_DIR TRACE_REPORT_DIR"""
import json, sys
from collections import defaultdict


def per_step(path):
    r = json.load(open(f"{path}/report.json")); steps = max(1, r.get("steps") or 1); by = defaultdict(float)
    for op in r["ops"]:
        by[op.get("phase")] += (op["flops"] or 0) * (op.get("count") or 1) / steps
    return steps, sum(by.values()), {k: round(v) for k, v in by.items()}


a, t = per_step(sys.argv[1]), per_step(sys.argv[2])
print(f"analyze {a[1]:,.0f} {a[2]}; trace {t[1]:,.0f} {t[2]} over {t[0]} steps; ratio {t[1] / a[1]:.4f}")
