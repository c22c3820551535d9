"""The calibrated host model's rules for a device-bound source, compared offline over saved benchmarks/ete.py runs.

Patches analyze/predict.py as it was at commit 264ff35 (the dispatch model's host taken where the unchanged step is
device-bound and it gives less), so run it from a checkout of that commit:

    git archive 264ff35 src benchmarks | tar -x -C /tmp/at264
    PYTHONPATH=/tmp/at264/src:/tmp/at264/benchmarks python3 rules.py RUN_DIR...

Prints, per run and rule, the calibrated model's workloads within 0.85-1.15, what-ifs within 0.8-1.25 and each
what-if's predicted/measured (ete_offline.repredict: the median over the run's rounds)."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import ete_offline
import roofline.analyze.predict as P
from ete_common import WHATIF_WITHIN, WITHIN

ORIGINAL_SCALE, ORIGINAL_DISPATCH = P._calibrated_scale, P._dispatch_host_total


def _replay(identity, costs, serial, scale):
    trial = P._without_host(identity)
    P._add_profiled_host(trial, costs, serial, scale)
    return P._pipeline(trial, serial, "device_s", 1.0)


def _factor_one(identity, costs, serial, report):
    """(b) factor 1 wherever the calibrated replay is device-bound."""
    s, how, h, d = ORIGINAL_SCALE(identity, costs, serial, report)
    if not serial and h < d:
        _, h1, d1 = _replay(identity, costs, serial, 1.0)
        return 1.0, how, min(h1, d - 1e-12), d
    return s, how, h, d


def _edge(identity, costs, serial, report):
    """(d1) the factor grows only until the replay turns device-bound."""
    s, how, h, d = ORIGINAL_SCALE(identity, costs, serial, report)
    if serial or s <= 1.0 or h >= d:
        return s, how, h, d
    e = P._bisect(lambda x: _replay(identity, costs, serial, x)[1] - _replay(identity, costs, serial, x)[2], 1.0, s)
    _, h2, d2 = _replay(identity, costs, serial, e)
    return e, how, min(h2, d2 - 1e-12), d2


def _device_miss_one(identity, costs, serial, report):
    """(d2) the factor kept, but 1 where even the largest factor leaves the replay above the measured step."""
    s, how, h, d = ORIGINAL_SCALE(identity, costs, serial, report)
    if serial or s <= 1.0 or h >= d:
        return s, how, h, d
    step, _, _ = _replay(identity, costs, serial, s)
    if step > report.step_time.median_s * (1 + P.CALIBRATION_TOLERANCE):
        _, h1, d1 = _replay(identity, costs, serial, 1.0)
        return 1.0, how, min(h1, d1 - 1e-12), d1
    return s, how, h, d


RULES = {  # rule: (scale function, dispatch host taken when lower)
    "a: dispatch host when lower (264ff35)": (ORIGINAL_SCALE, True),
    "b: factor 1": (_factor_one, False),
    "b': calibrated factor kept": (ORIGINAL_SCALE, False),
    "c: min(dispatch, factor 1)": (_factor_one, True),
    "d1: factor grows only while host-bound": (_edge, False),
    "d2: b', factor 1 on a device miss": (_device_miss_one, False),
}


def main() -> None:
    chosen = os.environ.get("RULES")
    for run in sys.argv[1:]:
        for name, (scale, dispatch) in RULES.items():
            if chosen and not name.startswith(tuple(chosen.split(","))):
                continue
            P._calibrated_scale = scale
            P._dispatch_host_total = ORIGINAL_DISPATCH if dispatch else (lambda *a: math.inf)
            res = ete_offline.repredict(Path(run), ["calibrated"])
            ws = [x["calibrated"] for x in res["rows"] if x["calibrated"]]
            ps = {x["name"]: x["calibrated"] for x in res["pairs"] if x["calibrated"]}
            print(f"{Path(run).name} | {name} | workloads {sum(WITHIN[0] <= x <= WITHIN[1] for x in ws)}/{len(ws)} | "
                  f"what-ifs {sum(WHATIF_WITHIN[0] <= x <= WHATIF_WITHIN[1] for x in ps.values())}/{len(ps)} | "
                  + ", ".join(f"{k} {v:.2f}" for k, v in ps.items()), flush=True)


if __name__ == "__main__":
    main()
