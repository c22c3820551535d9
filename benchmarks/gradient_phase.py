"""Which phase `roofline profile` gives the work between the backward and optimizer.step(), on a real device.

A training script with gradient accumulation (two forwards and backwards a step), AMP (autocast, GradScaler),
clip_grad_norm_, a foreach AdamW and zero_grad(set_to_none=False) is profiled through `roofline profile`, with
Python stacks and without (--no-stack: the trace's position alone decides). For each op name the report's rows
give the phases it got and whether it is modelled; the expected phase of each watched op is beside it. On a GPU
the backward runs on the autograd engine's thread and torch 2.11 records no tensor-list shapes: the two things a
CPU test cannot show.

    python benchmarks/gradient_phase.py OUT_DIR [--device cuda] [--steps 2] [--modes stack,no-stack]
        [--ceilings benchmarks/results/ceilings_h200.json]

Writes OUT_DIR/gradient_phase.json (date, device, torch version, command, per mode: op -> phases, calls,
modelled, time) and prints a table last. No timing is compared: the figures are the report's own.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import tempfile
import textwrap
from collections import defaultdict
from pathlib import Path

import torch

from roofline.cli import main as roofline_main
from roofline.io import atomic_write_text

SCRIPT = textwrap.dedent(
    """\
    import sys
    import torch


    def main():
        torch.manual_seed(0)
        device = sys.argv[1]
        half = torch.float16 if device.startswith("cuda") else torch.bfloat16
        model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256)).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
        scaler = torch.amp.GradScaler(device.split(":")[0])
        x = torch.randn(32, 256, device=device)
        for _ in range(40):
            for _ in range(2):
                with torch.autocast(device.split(":")[0], dtype=half):
                    loss = model(x).float().square().mean()
                scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=False)


    main()
    """
)

# op -> the phases its rows should have (clip_grad_norm_ and AdamW both call _foreach_mul_)
EXPECTED = {
    "aten::addmm": ["forward"],
    "aten::mm": ["backward"],
    "aten::_amp_foreach_non_finite_check_and_unscale_": ["gradient"],
    "aten::_foreach_norm": ["gradient"],
    "aten::_foreach_mul_": ["gradient", "optimizer"],
    "aten::_amp_update_scale_": ["gradient"],
    "aten::_foreach_zero_": ["gradient"],
    "aten::_foreach_lerp_": ["optimizer"],
}


def profile_phases(device: str, steps: int, with_stack: bool, folder: Path, ceilings: str | None = None) -> dict:
    """{"ops": op name -> {phases: {phase: calls}, modelled, time_s}, "notes": the gradient note} from one
    `roofline profile` of SCRIPT (``ceilings``: a ceilings file, else this machine's cached or measured roofs)."""
    script = folder / "train_amp_clip.py"
    script.write_text(SCRIPT)
    out = folder / ("stack" if with_stack else "no-stack")
    args = ["profile", "--device", device, *(["--ceilings", ceilings] if ceilings else []), "--wait", "1",
            "--timed", "1", "--warmup", "1", "--active", str(steps), "-o", str(out),
            *([] if with_stack else ["--no-stack"]), str(script), device]
    if roofline_main(args) != 0:
        raise SystemExit(f"roofline {' '.join(args)} failed")
    report = json.loads((out / "report.json").read_text())
    ops: dict[str, dict] = defaultdict(lambda: {"phases": defaultdict(int), "modelled": True, "time_s": 0.0})
    for op in report["ops"]:
        row = ops[op["name"]]
        row["phases"][op["phase"]] += 1
        row["modelled"] = row["modelled"] and op["modeled"]
        row["time_s"] += op["time_s"]
    notes = [n for n in report["summary"]["notes"] if "phase 'gradient'" in n]
    return {"ops": {name: {**row, "phases": dict(row["phases"])} for name, row in ops.items()}, "notes": notes}


def table(results: dict[str, dict]) -> str:
    lines = [f"{'mode':<9} {'op':<50} {'expected':<18} {'got':<28} {'modelled':<8} verdict"]
    for mode, result in results.items():
        for name, phases in EXPECTED.items():
            want = "+".join(phases)
            row = result["ops"].get(name)
            if row is None:
                lines.append(f"{mode:<9} {name:<50} {want:<18} {'(no row)':<28} {'-':<8} -")
                continue
            got = ", ".join(f"{phase} x{n}" for phase, n in sorted(row["phases"].items()))
            verdict = "ok" if set(row["phases"]) == set(phases) else "MISMATCH"
            lines.append(f"{mode:<9} {name:<50} {want:<18} {got:<28} {str(row['modelled']):<8} {verdict}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--modes", default="stack,no-stack")
    parser.add_argument("--ceilings", help="a ceilings file (saves measuring this device's roofs)")
    args = parser.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in args.modes.split(","):
            results[mode] = profile_phases(args.device, args.steps, mode == "stack", Path(tmp), args.ceilings)
    record = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
        "torch": torch.__version__, "command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])]),
        "expected": EXPECTED, "results": results,
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out_dir / "gradient_phase.json", json.dumps(record, indent=1) + "\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
