"""One torch.profiler session a process: a roofline session started inside a running one is refused with an error
(a second session cancels the first, whose trace export then crashed the process with a segmentation fault)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from roofline.capture import one_session
from tests.conftest import REPO

_NESTED = """
import torch
from roofline import ProfilingContext, RooflineAnalyzer
from roofline.errors import RooflineError
torch.set_num_threads(1)
outer_model, inner_model = torch.nn.Linear(16, 16), torch.nn.Linear(8, 8)
refused = []
with ProfilingContext(wait=1, warmup=1, active=2, detect_syncs=False) as outer:
    for i in range(6):
        outer_model(torch.randn(4, 16))
        try:
            if {inner!r} == "context":
                with ProfilingContext(wait=0, warmup=0, active=1, detect_syncs=False) as inner:
                    inner_model(torch.randn(4, 8))
            else:
                RooflineAnalyzer(device="cpu", iters=1, warmup=1).analyze(inner_model, torch.randn(4, 8))
        except RooflineError as error:
            refused.append((i, str(error)))
        outer.step()
report = outer.report()
print("outer ops:", sorted({{op.name for op in report.ops}}))
print("refused at:", [i for i, _ in refused])
print("error:", refused[0][1] if refused else "")
"""


@pytest.mark.parametrize("inner", ["context", "analyze"])
def test_a_session_inside_a_running_one_is_refused_and_the_outer_one_reports(inner):
    run = subprocess.run([sys.executable, "-c", _NESTED.format(inner=inner)], capture_output=True, text=True,
                         cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "src")}, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "aten::addmm" in run.stdout.split("outer ops:")[1].splitlines()[0]
    # refused while the outer one's profiler ran: its whole-block session up to its first step() (step 0), its
    # warmup (3) and active steps (4, 5); it ran while the outer one waited (1: timed, no profiler; 2: timed)
    refused = run.stdout.split("refused at:")[1].splitlines()[0]
    assert refused.strip() == "[0, 3, 4, 5]", run.stdout
    assert "inside a running ProfilingContext" in run.stdout


def test_a_session_inside_a_running_torch_profiler_is_refused(cpu_ceilings):
    from roofline.analyze.live import analyze_model
    from roofline.errors import RooflineError

    with torch.profiler.profile():
        with pytest.raises(RooflineError, match="inside a running torch.profiler session"):
            analyze_model(torch.nn.Linear(4, 4), (torch.randn(2, 4),), device="cpu", ceilings=cpu_ceilings)
    assert not one_session._running


def test_sessions_one_after_the_other_each_report(one_thread):
    from roofline import ProfilingContext

    models = torch.nn.Linear(16, 16), torch.nn.Conv2d(3, 4, 3)
    inputs = torch.randn(4, 16), torch.randn(1, 3, 8, 8)
    names = []
    for model, x in zip(models, inputs):
        with ProfilingContext(wait=1, warmup=1, active=2, detect_syncs=False) as prof:
            for _ in range(5):
                model(x)
                prof.step()
        names.append({op.name for op in prof.report().ops})
    assert "aten::addmm" in names[0] and "aten::convolution" in names[1]
    assert "aten::addmm" not in names[1]
    assert not one_session._running
