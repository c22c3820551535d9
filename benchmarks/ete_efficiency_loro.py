"""Leave-one-run-out check of the efficiency table's refresh (issue 21): for each saved `benchmarks/ete.py` run on the
H200, the table learned from every other source (the committed H200 reports and the other runs' reports; CPU entries
the shipped ones) re-predicts that run offline (`ete_offline.repredict`), against the shipped table before the
refresh (and its keys, before the 16-bit roof-sharing class), and against the other lookup order tried (the op's
kind in any dtype before its family in its dtype, as before the refresh).

    PYTHONPATH=src python3 benchmarks/ete_efficiency_loro.py [--models calibrated] [--out FILE.md]

No GPU. The run left out is never learned from, so its what-ifs and workloads are predicted from other sittings'
kernels only, as a user's new run would be.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from ete_common import WHATIF_WITHIN, WITHIN, within  # noqa: E402
from ete_offline import repredict  # noqa: E402
from learn_efficiency import ETE_RUNS, gpu_reports, with_shipped_cpu  # noqa: E402

import roofline.analyze.predict as predict  # noqa: E402
import msgspec  # noqa: E402

from roofline.analyze.efficiency import EfficiencyTable, device_class, keys, learn_table  # noqa: E402

# The table shipped before the refresh (main at ed0c974), kept beside the results.
BEFORE = REPO / "benchmarks/results/h200/ete/offline_fp32_efficiency/efficiency_before.json"


def keys_before(op, rt: float) -> list[str]:
    """The lookup keys before the refresh: no roof-sharing class (``SHARED_ROOF``)."""
    return [k for k in keys_kind_first(op, rt) if not k.endswith("|16-bit")]


def keys_kind_first(op, rt: float) -> list[str]:
    """The order tried and not kept: the op's kind in any dtype before its family in its dtype (the order before
    the refresh, with the 16-bit class)."""
    ordered = keys(op, rt)
    kind = ordered[0].split("|")[0]
    mine = [k for k in ordered if k.split("|")[0] == kind and k.count("|") > 0]
    return mine + [k for k in ordered if k not in mine]


def lookup_with(order):
    def lookup(table: EfficiencyTable, ceilings, op, rt: float):
        for dev in (ceilings.device_name, device_class(ceilings)):
            by_key = table.entries.get(dev)
            for key in order(op, rt) if by_key else ():
                if key in by_key:
                    return by_key[key]
        return None
    return lookup


def score(res: dict, model: str) -> dict:
    rows = [r[model] for r in res["rows"] if r.get(model)]
    pairs = {p["name"]: p[model] for p in res["pairs"] if p.get(model)}
    return {"workloads": sum(within(x, WITHIN) for x in rows), "n_workloads": len(rows),
            "whatifs": sum(within(x, WHATIF_WITHIN) for x in pairs.values()), "n_whatifs": len(pairs),
            "pairs": pairs, "rows": {r["name"]: r[model] for r in res["rows"] if r.get(model)}}


def evaluate(runs=ETE_RUNS, model: str = "calibrated") -> list[dict]:
    shipped = msgspec.json.decode(BEFORE.read_bytes(), type=EfficiencyTable)
    out = []
    for run in runs:
        learned = with_shipped_cpu(learn_table(gpu_reports(leave_out=run)))  # CPU entries: never used on the H200
        with mock.patch.object(predict, "lookup", lookup_with(keys_before)):
            before = score(repredict(REPO / run, [model], shipped), model)
        with mock.patch.object(predict, "lookup", lookup_with(keys_kind_first)):
            kind_first = score(repredict(REPO / run, [model], learned), model)
        after = score(repredict(REPO / run, [model], learned), model)
        out.append({"run": run, "before": before, "after": after, "kind_first": kind_first})
    return out


def render(results: list[dict]) -> str:
    def f(s: dict) -> str:
        error = sum(abs(x - 1) for x in s["pairs"].values()) / max(len(s["pairs"]), 1)
        return (f"{s['workloads']}/{s['n_workloads']}, {s['whatifs']}/{s['n_whatifs']} "
                f"(what-ifs' mean error {error:.1%})")

    lines = ["| run left out | before: shipped table | after: table learned without the run | "
             "not kept: the same table, the kind in any dtype before the family in the op's dtype |",
             "|---|---|---|---|"]
    lines += [f"| {Path(r['run']).name} | {f(r['before'])} | {f(r['after'])} | {f(r['kind_first'])} |"
              for r in results]
    lines += ["", "(workloads within 0.85-1.15, what-ifs within 0.8-1.25; calibrated host model, predicted/true)", "",
              "| run | what-if / workload | before | after | not kept: kind first |", "|---|---|---|---|---|"]
    for r in results:
        for kind in ("pairs", "rows"):
            for name, x in r["before"][kind].items():
                lines.append(f"| {Path(r['run']).name} | {name} | {x:.2f} | {r['after'][kind].get(name, 0):.2f} "
                             f"| {r['kind_first'][kind].get(name, 0):.2f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="calibrated")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    text = render(evaluate(model=args.model))
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
