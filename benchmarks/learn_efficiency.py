"""Learn the shipped efficiency table (src/roofline/analyze/data/efficiency.json) from measured reports.

GPU entries: every committed H200 report (benchmarks/results/h200, benchmarks/results/ddp_h200x2, docs/lab/h200).
CPU entries: reports measured here, now, on the built-in workloads at CPU sizes (forward and training steps), with
this machine's cached ceilings. benchmarks/ete.py validates on other models (torchvision, Hugging Face) too.

    PYTHONPATH=src python3 benchmarks/learn_efficiency.py [--no-cpu] [--out FILE]
"""

from __future__ import annotations

import argparse
import glob
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from roofline.analyze.efficiency import learn_table, save_table  # noqa: E402
from roofline.report import Report  # noqa: E402

GPU_GLOBS = ("benchmarks/results/h200/**/report.json*", "benchmarks/results/ddp_h200x2/**/report.json*",
             "docs/lab/h200/**/report.json*")
CPU_RUNS = (("matmul", 1, 256, False), ("matmul", 1, 512, False), ("matmul", 1, 1024, False),
            ("layernorm", 1, 512, False), ("layernorm", 1, 2048, False), ("llama-tiny", 2, 64, False),
            ("llama-tiny", 2, 64, True), ("llama-tiny", 4, 128, False), ("resnet50", 1, None, False),
            ("bert-base", 2, 64, False))


def committed_reports():
    for pattern in GPU_GLOBS:
        for path in sorted(glob.glob(str(REPO / pattern), recursive=True)):
            yield str(Path(path).relative_to(REPO)), Report.load(path)


def cpu_reports(keep: str | None):
    """Measured now; with ``keep`` a folder, saved there and read back on the next run instead."""
    if keep and Path(keep).is_dir() and any(Path(keep).glob("*.json")):
        for path in sorted(Path(keep).glob("*.json")):
            yield f"cpu:{path.stem}", Report.load(path)
        return
    import torch

    from roofline.analyze.live import analyze_model
    from roofline.device import get_ceilings
    from roofline.models.workloads import get_workload

    ceilings = get_ceilings("cpu", quick=True)
    for name, batch, seq, backward in CPU_RUNS:
        torch.manual_seed(0)
        w = get_workload(name, device="cpu", batch=batch, seq=seq, backward=backward)
        label = f"cpu:{name} batch {batch} seq {seq}{' training' if backward else ''}"
        print(label, file=sys.stderr)
        report = analyze_model(w.model, w.inputs, device="cpu", ceilings=ceilings, backward=backward,
                               loss_fn=w.loss_fn, warmup=1, iters=3, workload=name)
        if keep:
            report.save(Path(keep) / f"{name}-b{batch}-s{seq}{'-train' if backward else ''}.json")
        yield label, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-cpu", action="store_true")
    parser.add_argument("--keep", default=None, help="folder to save the CPU reports in (and reuse them from)")
    parser.add_argument("--out", default=str(REPO / "src/roofline/analyze/data/efficiency.json"))
    args = parser.parse_args()
    reports = list(committed_reports())
    if not args.no_cpu:
        reports += list(cpu_reports(args.keep))
    table = learn_table(reports)
    save_table(table, args.out)
    print(f"wrote {args.out}: {sum(len(v) for v in table.entries.values())} entries from {len(table.sources)} reports")


if __name__ == "__main__":
    main()
