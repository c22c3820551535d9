"""Re-predict a saved `benchmarks/ete.py` run without a GPU: every round's report from OUT's report archives through
today's predictor, with the run's own host costs, against the run's measured true times.

    PYTHONPATH=src python3 benchmarks/ete_offline.py OUT [--models dispatch,profiled,...]

OUT is a directory `ete.py` wrote (ete.json, and reports.tgz or reports.partNN.tar.xz). Prints, per host model,
each workload's and what-if's predicted/true ratio (the prediction the median over the rounds, as ete.py takes it)
and the counts within 0.85-1.15 and 0.8-1.25, and, per workload, the report's own unprofiled step time
(`analyze_model` times the step without the profiler just before profiling it) over the run's true time: how far a
measurement of the same configuration in the same sitting lands from the truth, a floor under any model's error.

Host costs: ete.json's `host_costs_full` when the run saved it (runs after 2026-12-01 15:30 UTC); before that only the
median dispatch cost was kept, so every op kind gets that median but views and transposes, which get the views
reference loop's plain time per call (the dispatch model then differs from the run's own figures; the profiled
models use dispatch only as a floor and for syncs). Offline agreement on a run one
studied is not validation: a new run is.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

import msgspec  # noqa: E402

from roofline.analyze.efficiency import load_table  # noqa: E402
from roofline.analyze.predict import HOST_MODELS, UNCHECKED_HOST_MODEL  # noqa: E402
from roofline.analyze.whatif import predict_report  # noqa: E402
from roofline.report import HostCosts, Report, Timing  # noqa: E402

from ete_common import (WHATIF_WITHIN, WITHIN, change_of, extract_reports, paired, predicted_change,  # noqa: E402
                        ratio, report_archives, slug, within)

# The op kinds analyze/host_costs.py measures a dispatch cost for (``_kind_probes``).
KINDS = ("add", "mul", "mm", "addmm", "linear", "bmm", "softmax", "layer_norm", "sum", "mean", "view", "transpose",
         "cat", "copy", "embedding", "index", "convolution", "relu", "gelu", "scaled_dot_product_attention", "empty",
         "to")


def host_costs_of(result: dict) -> HostCosts:
    """The run's host costs: saved whole, or rebuilt from the figures ete.json kept."""
    if result.get("host_costs_full"):
        return msgspec.convert(result["host_costs_full"], HostCosts)
    hc = result["host_costs"]
    median = hc["dispatch_median_s"]
    dispatch = {k: median for k in KINDS}
    views = hc.get("profiler_references", {}).get("views")
    if views:  # six view-like calls, no launch: their plain loop is the run's own figure for the kinds that launch none
        dispatch.update({k: views[0] / 6 for k in ("view", "transpose")})
    return HostCosts(
        device="cuda" if "cuda" in result.get("command", "") or "NVIDIA" in result.get("device", "") else "cpu",
        device_name=result.get("device", ""), dispatch_s=dispatch,
        module_call_s=hc["module_call_s"], python_per_op_s=hc["python_per_op_s"],
        backward_per_op_s=hc["backward_per_op_s"], spread=hc["spread"],
        profiler_per_top_level_s=hc.get("profiler_per_top_level_s", 0.0),
        profiler_per_nested_event_s=hc.get("profiler_per_nested_event_s", 0.0),
        profiler_per_runtime_call_s=hc.get("profiler_per_runtime_call_s", 0.0),
        profiler_per_step_s=hc.get("profiler_per_step_s") or 0.0,
        profiler_fit_residual=hc.get("profiler_fit_residual", 0.0),
        profiler_fit_condition=hc.get("profiler_fit_condition", 0.0),
        profiler_references=hc.get("profiler_references", {}), profiler_left_out=hc.get("profiler_left_out", {}),
        profiler_model="offline",
        method="rebuilt from ete.json (the median dispatch cost for every kind but views and transposes: the views "
               "reference's plain time per call)")


def _reports(out: Path, tmp: Path) -> Path:
    folder = out / "reports"
    return folder if folder.is_dir() else extract_reports(out, tmp)


def has_reports(out: Path) -> bool:
    return (out / "ete.json").exists() and ((out / "reports").is_dir() or bool(report_archives(out)))


def _rounds(folder: Path, key: str) -> list[Report]:
    return [Report.load(p) for p in sorted(folder.glob(f"{slug(key)}.round*.report.json"))]


# Runs before 2026-12-02 did not profile the what-ifs' targets nor keep the sources' timings; one pair is two
# workloads' configurations (llama-tiny forward, batch 8, sequence 512, float32 and bfloat16), timed back to back in
# every repeat, whose reports and timings then stand in for the target's and the source's.
TARGET_TWINS = {"llama-tiny fp32 -> bf16": "llama-tiny forward bf16"}
SOURCE_TWINS = {"llama-tiny fp32 -> bf16": "llama-tiny forward"}


def timed_source(reports: list[Report], source_repeats: list[float], target_repeats: list[float], change: dict,
                 **kw) -> float | None:
    """A third comparison of a what-if, for the host's level: each repeat's target timing against the projection of
    that round's source report recalibrated to the source's timing of the same repeat (its unprofiled step set to it:
    the calibrated host model's anchor). Still a prediction from the source alone (its report and its own timing a
    second away), never the target's measurement; the median over the repeats of predicted/measured."""
    if not reports or not source_repeats or len(source_repeats) != len(target_repeats):
        return None
    per_round = max(len(source_repeats) // len(reports), 1)
    out = []
    for i, (src, dst) in enumerate(zip(source_repeats, target_repeats)):
        report = reports[min(i // per_round, len(reports) - 1)]
        timed = msgspec.structs.replace(report, step_time=Timing.from_samples([src], "the source timed in this repeat"))
        out.append(predict_report(timed, **change, **kw).step_time_s / dst)
    return statistics.median(out)


def _target_reports(folder: Path, pair: str) -> list[Report]:
    """The what-if target's own reports: profiled for the diagnosis (``whatif:PAIR``), else its twin workload's."""
    own = _rounds(folder, f"whatif:{pair}")
    return own or (_rounds(folder, TARGET_TWINS[pair]) if pair in TARGET_TWINS else [])


def repredict(out: Path, models: list[str], table=None) -> dict:
    """``table``: the efficiency table to predict with (default: the shipped one, with the user's over it)."""
    result = json.loads((out / "ete.json").read_text())
    costs = host_costs_of(result)
    table = table if table is not None else load_table()
    rows, pairs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = _reports(out, Path(tmp))
        for w in result["workloads"]:
            reports = _rounds(folder, w["workload"])
            if not reports or not w.get("true_s"):
                continue
            row = {"name": w["workload"], "true_s": w["true_s"], "run": w.get("ratio")}
            measured = [r.step_time.median_s for r in reports if r.step_time]
            row["measured_ratio"] = ratio(statistics.median(measured), w["true_s"]) if measured else None
            for m in models:
                ps = [predict_report(r, table=table, host_costs=costs, host_model=m) for r in reports]
                row[m] = ratio(statistics.median(p.step_time_s for p in ps), w["true_s"])
                row[m + "_bound"] = ps[len(ps) // 2].bound
            rows.append(row)
        for p in result["whatif"]:
            reports = _rounds(folder, f"source:{p['pair']}")
            if not reports or not p.get("true_s"):
                continue
            change = change_of(p)
            row = {"name": p["pair"], "true_s": p["true_s"], "run": p.get("ratio"),
                   **paired(p.get("source_true_repeats_s") or [], p.get("true_repeats_s") or [])}
            twins = {w["workload"]: w for w in result["workloads"]}
            if not row.get("measured_change") and p["pair"] in SOURCE_TWINS:
                src_twin, dst_twin = twins.get(SOURCE_TWINS[p["pair"]], {}), twins.get(TARGET_TWINS[p["pair"]], {})
                row.update(paired(src_twin.get("true_repeats_s") or [], dst_twin.get("true_repeats_s") or []))
                row["twins"] = bool(row.get("measured_change"))
            if not row.get("measured_change") and p.get("source_true_s"):
                # a run without source repeats: the change between the two medians, timed in the same repeats but
                # not back to back (marked "unpaired")
                row.update(measured_change=p["true_s"] / p["source_true_s"], measured_change_spread=None)
            target = _target_reports(folder, p["pair"])
            for m in models:
                ps = [predict_report(r, table=table, host_costs=costs, host_model=m, **change) for r in reports]
                row[m] = ratio(statistics.median(x.step_time_s for x in ps), p["true_s"])
                same = [predict_report(r, table=table, host_costs=costs, host_model=m) for r in reports]
                row[m + "_source"] = ratio(statistics.median(x.step_time_s for x in same), p.get("source_true_s"))
                row[m + "_change"] = ratio(predicted_change([x.step_time_s for x in ps], [x.step_time_s for x in same]),
                                           row.get("measured_change"))
                if m == models[-1]:
                    if p.get("source_true_repeats_s"):
                        reps = (p["source_true_repeats_s"], p["true_repeats_s"])
                    elif row.get("twins"):
                        reps = (twins[SOURCE_TWINS[p["pair"]]]["true_repeats_s"],
                                twins[TARGET_TWINS[p["pair"]]]["true_repeats_s"])
                    else:
                        reps = ([], [])
                    row["timed_source"] = timed_source(reports, *reps, change, table=table, host_costs=costs,
                                                       host_model=m)
                if target and m == models[-1]:
                    # the device and host sides of the projection against the target's own report (its measured
                    # op times; its host by the same host model): which side a miss is on
                    own = [predict_report(r, table=table, host_costs=costs, host_model=m) for r in target]
                    row["device_vs_target"] = ratio(statistics.median(x.device_time_s for x in ps),
                                                    statistics.median(x.device_time_s for x in own))
                    row["host_vs_target"] = ratio(statistics.median(x.host_time_s for x in ps),
                                                  statistics.median(x.host_time_s for x in own))
                    row["target_report"] = target[0].extra.get("ete_key", "")
            pairs.append(row)
    return {"rows": rows, "pairs": pairs, "models": models, "costs": costs}


def render(res: dict) -> str:
    models = res["models"]
    f = lambda x: f"{x:.2f}" if x else "—"  # noqa: E731
    lines = ["| workload | run's predicted/true | measured/true | " + " | ".join(models) + " |",
             "|---|---|---|" + "---|" * len(models)]
    for r in res["rows"]:
        lines.append(f"| {r['name']} | {f(r['run'])} | {f(r['measured_ratio'])} | "
                     + " | ".join(f"{f(r[m])} ({r[m + '_bound']})" for m in models) + " |")
    lines += ["", "| what-if | run's predicted/measured | " + " | ".join(models)
              + " | " + " | ".join(f"{m}: source predicted/measured" for m in models)
              + " | measured change | " + " | ".join(f"{m}: change predicted/measured" for m in models)
              + f" | {models[-1]}: projected device / target's | {models[-1]}: projected host / target's"
              + f" | {models[-1]}, source timed in the repeat: predicted/measured |",
              "|---|---|" + "---|" * (3 * len(models) + 4)]
    for p in res["pairs"]:
        lines.append(f"| {p['name']} | {f(p['run'])} | " + " | ".join(f(p[m]) for m in models) + " | "
                     + " | ".join(f(p[m + "_source"]) for m in models) + " | "
                     + (f"{p['measured_change']:.2f} (±{p['measured_change_spread']:.2f})"
                        + (" (workload twins)" if p.get("twins") else "")
                        if p.get("measured_change_spread") is not None
                        else f"{p['measured_change']:.2f} (unpaired)" if p.get("measured_change") else "—") + " | "
                     + " | ".join(f(p.get(m + "_change")) for m in models) + " | "
                     + f"{f(p.get('device_vs_target'))} | {f(p.get('host_vs_target'))} | {f(p.get('timed_source'))} |")
    lines.append("")
    measured = [r["measured_ratio"] for r in res["rows"] if r["measured_ratio"]]
    lines.append(f"measured (the reports' own unprofiled step time, median over rounds): "
                 f"{sum(WITHIN[0] <= x <= WITHIN[1] for x in measured)} of {len(measured)} within 0.85-1.15")
    for m in models:
        rs = [r[m] for r in res["rows"] if r[m]]
        ws = [p[m] for p in res["pairs"] if p[m]]
        cs = [p[m + "_change"] for p in res["pairs"] if p.get(m + "_change")]
        lines.append(f"{m}: {sum(WITHIN[0] <= x <= WITHIN[1] for x in rs)} of {len(rs)} workloads within 0.85-1.15, "
                     f"mean |error| {statistics.mean(abs(x - 1) for x in rs):.1%}; what-ifs "
                     f"{sum(WHATIF_WITHIN[0] <= x <= WHATIF_WITHIN[1] for x in ws)} of {len(ws)} within 0.8-1.25"
                     + (f", mean |error| {statistics.mean(abs(x - 1) for x in ws):.1%}" if ws else "")
                     + (f"; changes {sum(within(x, WHATIF_WITHIN) for x in cs)} of {len(cs)} within 0.8-1.25"
                        if cs else ""))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="a directory benchmarks/ete.py wrote (ete.json, its report archives)")
    parser.add_argument("--models", default=",".join(HOST_MODELS + (UNCHECKED_HOST_MODEL,)))
    args = parser.parse_args()
    out = Path(args.out)
    if not has_reports(out):
        print(f"error: {out} has no ete.json with its reports (reports.tgz or reports.part*.tar.xz: a directory "
              "benchmarks/ete.py wrote)", file=sys.stderr)
        return 2
    print(render(repredict(out, [m.strip() for m in args.models.split(",") if m.strip()])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
