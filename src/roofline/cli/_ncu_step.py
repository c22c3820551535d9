"""The process ncu profiles for `roofline analyze --ncu`: the same workload, warmed up, one step between
cudaProfilerStart and cudaProfilerStop. Not a subcommand: capture/ncu_run.py starts it as
``python -m roofline.cli._ncu_step SPEC.json``. The model's own prints may share ncu's stdout: the CSV reader keeps
only the table's rows."""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    from roofline.errors import RooflineError

    try:
        spec = json.loads(open(argv[0]).read())
        run_step(spec)
    except RooflineError as exc:
        print(f"roofline: error: {exc}", file=sys.stderr)
        return 2
    return 0


def run_step(spec: dict) -> None:
    import torch

    from roofline.analyze.live import make_step
    from roofline.cli.targets import load_target, user_code

    workload = load_target(spec.get("target"), spec.get("model"), batch=spec.get("batch"), seq=spec.get("seq"),
                           dtype=spec.get("dtype"), device=spec.get("device"),
                           backward=spec.get("backward", False))
    step = make_step(workload.model, workload.inputs, backward=spec.get("backward", False), loss_fn=workload.loss_fn)
    with user_code(f"{workload.name}'s step"):
        for _ in range(max(1, int(spec.get("warmup", 2)))):
            step()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        step()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
