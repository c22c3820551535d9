"""The doctor's view of the case study: profile a generation run with the harness, then diagnose the Report.

The doctor gets the Report of an ordinary profiled run and nothing else: which fixes a variant has is never
passed on, so every finding comes from the evidence (ops, shapes, strides, dtypes, syncs, source lines).
"""

from __future__ import annotations

from typing import Callable

import torch

from roofline.lab.generate import generate_ids
from roofline.lab.model import Fixes, configure
from roofline.models.llama import Transformer
from roofline.report import Ceilings, Report

WORKLOAD = "greedy generation of WikiText-2 prompts"


def profile_generation(
    model: Transformer,
    prompts: list[list[int]],
    max_new_tokens: int,
    eos_id: int,
    fixes: Fixes,
    ceilings: Ceilings | None,
    trace_dir: str | None = None,
) -> Report:
    """One generation run profiled by the harness (one untimed run first, to warm up), as a Report.

    The tokens stay on the device, as a server streaming them would leave them to another thread: the one copy
    to the host that any generation needs is not part of the loop under study."""
    from roofline.analyze.profiled import report_from_profile
    from roofline.capture.profiling import profile_schedule

    configure(model, fixes)
    device = model.output.weight.device

    def run() -> None:
        generate_ids(model, prompts, max_new_tokens, eos_id, fixes)

    context = profile_schedule(run, wait=1, warmup=0, active=1, timed=0, device=device, ceilings=ceilings,
                            workload=WORKLOAD)
    return report_from_profile(context.record())


def diagnose(report: Report) -> Report:
    """Fill ``report.findings`` with the doctor's ranked findings."""
    from roofline.doctor import diagnose as doctor_diagnose

    report.findings = doctor_diagnose(report)
    return report


def doctor_dtype(device: torch.device, model_dtype: torch.dtype) -> torch.dtype:
    """A half dtype for the doctor's run (a precision island only exists in a half model): the model's own on
    a GPU, bfloat16 on a CPU, whose float16 kernels are slow."""
    if model_dtype in (torch.float16, torch.bfloat16):
        return model_dtype
    return torch.bfloat16 if device.type == "cpu" else torch.float16


Progress = Callable[[str], None]
