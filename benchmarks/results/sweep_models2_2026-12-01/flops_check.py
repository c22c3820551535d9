"""Compare a report's FLOPs with torch.utils.flop_counter.FlopCounterMode over one step of the same factory.

usage: flops_check.py fac.py NAME REPORT_DIR [--backward]
Prints roofline's FLOPs per step (forward / backward / total) and FlopCounterMode's total for the same step."""
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
by_phase = defaultdict(float)
for op in r["ops"]:
    by_phase[op.get("phase") or "?"] += (op["flops"] or 0) * (op.get("count") or 1)
by_phase = {k: v / steps for k, v in by_phase.items()}
with FlopCounterMode(display=False) as fc:
    out_ = model(**inputs) if isinstance(inputs, dict) else model(*(inputs if isinstance(inputs, tuple) else (inputs,)))
    if backward:
        t = out_ if isinstance(out_, torch.Tensor) else out_.loss
        (t if t.ndim == 0 else t.float().mean()).backward()
ref = fc.get_total_flops()
tot = sum(by_phase.values())
print(f"{name}: roofline {tot:,.0f} FLOPs/step {dict((k, round(v)) for k, v in by_phase.items())}; "
      f"FlopCounterMode {ref:,.0f}; ratio {tot / ref if ref else float('nan'):.3f}")
