"""Learn the shipped efficiency table (src/roofline/analyze/data/efficiency.json) from measured reports.

GPU entries: every committed H200 report (benchmarks/results/h200, benchmarks/results/ddp_h200x2, docs/lab/h200)
and every round's report of the saved benchmarks/ete.py runs (their report archives: the H200's only fp32
matmuls and attention, from llama-tiny, the MLP, GPT-2, BERT and HF Llama in float32; `--leave-out RUN` keeps one
run out, for benchmarks/ete_efficiency_loro.py).
CPU entries: reports measured here, now, on the built-in workloads at CPU sizes (forward and training steps), with
this machine's cached ceilings. benchmarks/ete.py validates on other models (torchvision, Hugging Face) too.

    PYTHONPATH=src python3 benchmarks/learn_efficiency.py [--no-cpu] [--keep DIR] [--leave-out RUN] [--out FILE]
"""

from __future__ import annotations

import argparse
import glob
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from roofline.analyze.efficiency import EfficiencyTable, learn_table, save_table, shipped_table  # noqa: E402
from roofline.report import Report  # noqa: E402

from ete_common import extract_reports, report_archives  # noqa: E402

GPU_GLOBS = ("benchmarks/results/h200/**/report.json*", "benchmarks/results/ddp_h200x2/**/report.json*",
             "docs/lab/h200/**/report.json*")
# The saved benchmarks/ete.py runs on the H200 whose report archives are committed.
ETE_RUNS = ("benchmarks/results/h200/ete/rounds", "benchmarks/results/h200/ete/calibrated",
            "benchmarks/results/h200/ete/calibrated_one_round", "benchmarks/results/h200/ete/fp32_efficiency")
# (workload, batch, seq, training, dtype)
CPU_RUNS = (("matmul", 1, 256, False, "float32"), ("matmul", 1, 512, False, "float32"),
            ("matmul", 1, 1024, False, "float32"), ("layernorm", 1, 512, False, "float32"),
            ("layernorm", 1, 2048, False, "float32"), ("llama-tiny", 2, 64, False, "float32"),
            ("llama-tiny", 2, 64, True, "float32"), ("llama-tiny", 4, 128, False, "float32"),
            ("resnet50", 1, None, False, "float32"), ("bert-base", 2, 64, False, "float32"),
            ("matmul", 1, 512, False, "bfloat16"), ("layernorm", 1, 1024, False, "bfloat16"),
            ("llama-tiny", 2, 64, False, "bfloat16"))


def committed_reports():
    for pattern in GPU_GLOBS:
        for path in sorted(glob.glob(str(REPO / pattern), recursive=True)):
            yield str(Path(path).relative_to(REPO)), Report.load(path)


def ete_reports(runs=ETE_RUNS):
    """Every round's report of each saved ete run (what-if targets too), labelled RUN/FILE."""
    for run in runs:
        with tempfile.TemporaryDirectory() as tmp:
            if not report_archives(REPO / run):
                continue
            for path in sorted(extract_reports(REPO / run, Path(tmp)).glob("*.report.json")):
                yield f"{run}/{path.name}", Report.load(path)


def gpu_reports(leave_out: str | None = None):
    """The committed H200 reports and the saved ete runs' but ``leave_out`` (a run's folder, or its last part)."""
    yield from committed_reports()
    yield from ete_reports([r for r in ETE_RUNS if not leave_out or leave_out.rstrip("/") not in (r, Path(r).name)])


def cpu_reports(keep: str | None):
    """Measured now; with ``keep`` a folder, each saved there and read back on the next run instead."""
    import torch

    from roofline.analyze.live import analyze_model
    from roofline.device import get_ceilings
    from roofline.models.workloads import get_workload

    ceilings = get_ceilings("cpu", quick=True)
    for name, batch, seq, backward, dtype in CPU_RUNS:
        label = f"cpu:{name} batch {batch} seq {seq} {dtype}{' training' if backward else ''}"
        path = Path(keep) / f"{name}-b{batch}-s{seq}-{dtype}{'-train' if backward else ''}.json" if keep else None
        if path is not None and path.exists():
            yield label, Report.load(path)
            continue
        print(label, file=sys.stderr)
        torch.manual_seed(0)
        w = get_workload(name, device="cpu", batch=batch, seq=seq, dtype=dtype, backward=backward)
        report = analyze_model(w.model, w.inputs, device="cpu", ceilings=ceilings, backward=backward,
                               loss_fn=w.loss_fn, warmup=1, iters=3, workload=name)
        if path is not None:
            report.save(path)
        yield label, report


def with_shipped_cpu(table: EfficiencyTable) -> EfficiencyTable:
    """``table``'s GPU entries and the shipped table's CPU ones (and their sources)."""
    shipped = shipped_table()
    cpu = {dev for dev in shipped.entries if dev != "cuda" and not dev.startswith("NVIDIA")}
    entries = {**{dev: keys for dev, keys in table.entries.items() if dev not in cpu},
               **{dev: shipped.entries[dev] for dev in cpu}}
    return EfficiencyTable(entries, table.sources + [s for s in shipped.sources if s.startswith("cpu:")], table.method)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-cpu", action="store_true")
    parser.add_argument("--keep", default=None, help="folder to save the CPU reports in (and reuse them from)")
    parser.add_argument("--shipped-cpu", action="store_true",
                        help="keep the shipped table's CPU entries (measured on another machine) instead of measuring")
    parser.add_argument("--leave-out", default=None, help="a saved ete run whose reports are not learned from")
    parser.add_argument("--out", default=str(REPO / "src/roofline/analyze/data/efficiency.json"))
    args = parser.parse_args()
    reports = list(gpu_reports(args.leave_out))
    if not args.no_cpu and not args.shipped_cpu:
        reports += list(cpu_reports(args.keep))
    table = learn_table(reports)
    if args.shipped_cpu:
        table = with_shipped_cpu(table)
    save_table(table, args.out)
    print(f"wrote {args.out}: {sum(len(v) for v in table.entries.values())} entries from {len(table.sources)} reports")


if __name__ == "__main__":
    main()
