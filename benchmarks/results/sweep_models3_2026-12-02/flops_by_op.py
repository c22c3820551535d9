"""A report's FLOPs per step by op name next to FlopCounterMode's by op, to see where a ratio comes from.

usage: flops_by_op.py fac.py NAME REPORT_DIR [--backward]"""
import importlib.util, json, sys
from collections import defaultdict
import torch
from torch.utils.flop_counter import FlopCounterMode

path, name, out = sys.argv[1:4]
backward = "--backward" in sys.argv
spec = importlib.util.spec_from_file_location("fac", path); fac = importlib.util.module_from_spec(spec); spec.loader.exec_module(fac)
model, inputs = getattr(fac, name)()
r = json.load(open(f"{out}/report.json"))
steps = max(1, r.get("steps") or 1)
ours = defaultdict(float)
for op in r["ops"]:
    ours[op["name"].removeprefix("aten::")] += (op["flops"] or 0) * (op.get("count") or 1) / steps
with FlopCounterMode(display=False) as fc:
    out_ = model(**inputs) if isinstance(inputs, dict) else model(*(inputs if isinstance(inputs, tuple) else (inputs,)))
    if backward:
        t = out_ if isinstance(out_, torch.Tensor) else out_.loss
        (t if t.ndim == 0 else t.float().mean()).backward()
ref = defaultdict(float)
for k, v in fc.get_flop_counts()["Global"].items():
    ref[str(k).removeprefix("aten.")] += v
for k in sorted(set(ours) | set(ref), key=lambda k: -max(ours.get(k, 0), ref.get(k, 0))):
    if ours.get(k, 0) or ref.get(k, 0):
        print(f"{k:45s} {ours.get(k, 0):>14,.0f} {ref.get(k, 0):>14,.0f}")
print(f"{'TOTAL':45s} {sum(ours.values()):>14,.0f} {sum(ref.values()):>14,.0f}")
