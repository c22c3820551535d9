"""Phase "gradient": the work on the gradients between the backward and the optimizer's step (clip_grad_norm_,
GradScaler's unscale and inf check, its scale update, zero_grad), from real CPU profiler traces of a training loop
with gradient accumulation, with and without Python stacks."""

from __future__ import annotations

import warnings
from collections import Counter, defaultdict

import pytest
import torch

from roofline.analyze.join import op_phase
from roofline.capture.kineto import load_trace

# The loop's lines, as the trace with stacks places them (relative to _loop's first line).
SOURCE = '''\
def _loop(model, opt, scaler, x, prof):
    for _ in range(3):
        for _ in range(2):
            loss = model(x).square().mean()
            scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=False)
        prof.step()
'''
LINE_CLIP, LINE_UPDATE = 7, 9


def _record(path, with_stack: bool) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    x = torch.randn(8, 16)
    namespace: dict = {"torch": torch}
    exec(compile(SOURCE, str(path.with_suffix(".py")), "exec"), namespace)
    path.with_suffix(".py").write_text(SOURCE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profiler = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True, with_stack=with_stack,
            schedule=torch.profiler.schedule(wait=0, warmup=1, active=2, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(str(path)))
        with profiler as prof:
            namespace["_loop"](model, opt, scaler, x, prof)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """The same loop recorded with Python stacks and without: {with_stack: path}."""
    paths = {}
    previous = torch.get_num_threads()
    try:
        for with_stack in (True, False):
            paths[with_stack] = tmp_path_factory.mktemp("gradient") / "accum.json"
            _record(paths[with_stack], with_stack)
    finally:
        torch.set_num_threads(previous)  # _record's one thread, not the rest of the process's tests
    return paths


def _phases(trace) -> dict[str, Counter]:
    """Phase -> op name -> calls, for ops outside the autograd engine's frames and the optimizer's span (the
    first aten call of each), per profiled step."""
    found: dict[str, Counter] = defaultdict(Counter)
    for op in trace.ops:
        parent = trace.ops[op.parent] if op.parent >= 0 else None
        if op.name.startswith("aten::") and (parent is None or not parent.name.startswith("aten::")):
            found[op_phase(op)][op.name] += 1
    return found


@pytest.mark.parametrize("with_stack", [True, False], ids=["stacks", "no-stacks"])
def test_clip_unscale_and_zero_grad_are_phase_gradient_and_both_micro_batches_forward(traces, with_stack):
    trace = load_trace(traces[with_stack])
    phases = _phases(trace)
    steps = len(trace.steps)
    assert steps == 2
    # two micro-batches a step, two linears each: all forward, the second micro-batch's loss included
    assert phases["forward"]["aten::linear"] == 4 * steps
    assert phases["forward"]["aten::square"] == phases["forward"]["aten::mean"] == 2 * steps
    assert not {"aten::linear", "aten::square", "aten::mean"} & set(phases["gradient"])
    gradient = phases["gradient"]
    for name in ("aten::_amp_foreach_non_finite_check_and_unscale_", "aten::_foreach_norm", "aten::_foreach_mul_",
                 "aten::item"):
        assert gradient[name] == steps, name
    assert gradient["aten::zero_"] == 4 * steps  # zero_grad(set_to_none=False): one per parameter
    assert not {"aten::_foreach_norm", "aten::_foreach_mul_", "aten::item"} & set(phases["forward"])
    assert set(phases["optimizer"]) == {"aten::add_"}
    assert phases["backward"]["aten::mm"] > 0 and "aten::mm" not in phases["gradient"]
    # the scale update runs after the step: AMP's own op says what it is, with or without stacks
    assert [op_phase(op) for op in trace.ops if op.name == "aten::_amp_update_scale_"] == ["gradient"] * steps
    if with_stack:
        lines = {op.source.rsplit(":", 1)[1] for op in trace.ops if op.name == "aten::_foreach_norm"}
        assert lines == {str(LINE_CLIP)}
        lines = {op.source.rsplit(":", 1)[1] for op in trace.ops if op.name == "aten::_amp_update_scale_"}
        assert lines == {str(LINE_UPDATE)}


def test_report_and_html_show_the_gradient_phase(traces):
    from roofline.analyze.trace_file import analyze_trace_file
    from roofline.render.html import ops_parts

    report = analyze_trace_file(traces[False])
    by_phase = defaultdict(set)
    for op in report.ops:
        by_phase[op.phase].add(op.name)
    assert set(by_phase) == {"forward", "backward", "gradient", "optimizer"}
    assert {"aten::_foreach_norm", "aten::_amp_foreach_non_finite_check_and_unscale_"} <= by_phase["gradient"]
    assert "aten::addmm" in by_phase["forward"] and "aten::addmm" not in by_phase["gradient"]
    assert "gradient" in ops_parts(report.ops)["strings"]  # the op table's phase filter offers it
    (note,) = [n for n in report.summary.notes if "phase 'gradient'" in n]
    gradient = [op for op in report.ops if op.phase == "gradient"]
    share = sum(op.time_s for op in gradient) / report.summary.total_time_s
    assert note.startswith(f"{len(gradient)} op(s) work on the gradients") and note.endswith(f"{share:.1%} of the op time")
    # GradScaler's scalar casts (to > reciprocal > to) are no chain for torch.compile to fuse in the user's module
    from roofline.doctor.rules.unfused_chain import find_chains

    assert not any(op.phase == "gradient" for chain in find_chains(report) for op in chain)



def test_profile_of_a_script_and_a_trace_of_its_output_agree_on_phases(tmp_path, capsys):
    """benchmarks/gradient_phase.py's CPU path (AMP, clipping, accumulation, foreach AdamW through `roofline
    profile`): every watched op gets its phase. Steps end at optimizer.step(), inside the optimizer's span (the
    step marker partly overlaps it, and roofline's trace.json.gz moves it to an extra lane): `roofline trace` of
    that output reads the same phases."""
    import gzip
    import json

    from benchmark_scripts import load_benchmark

    bench = load_benchmark("gradient_phase")
    result = bench.profile_phases("cpu", 1, True, tmp_path)
    table = bench.table({"stack": result}).splitlines()
    assert [line.split()[-1] for line in table[1:]] == ["ok"] * len(bench.EXPECTED), "\n".join(table)
    assert all(result["ops"][name]["modelled"] for name in bench.EXPECTED)
    assert result["notes"] and "phase 'gradient'" in result["notes"][0]
    with gzip.open(tmp_path / "stack" / "trace.json.gz", "rt") as f:
        assert any(" overlap " in str(e.get("tid")) for e in json.load(f)["traceEvents"])
    again = load_trace(tmp_path / "stack" / "trace.json.gz")
    phases = defaultdict(Counter)
    for op in again.ops:
        if op.name in bench.EXPECTED:
            phases[op.name][op_phase(op)] += 1
    assert {name: set(found) for name, found in phases.items()} == {
        name: set(want) for name, want in bench.EXPECTED.items()}
