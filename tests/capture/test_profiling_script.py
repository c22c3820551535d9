"""`roofline profile script.py` on unmodified scripts, and how steps are found without code changes."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from roofline.capture.kineto import CALL_SITE_PREFIX, load_trace
from roofline.capture.script_runner import StepFinder, run_script, script_error_line

REPO = Path(__file__).resolve().parents[2]

TRAIN = textwrap.dedent(
    """\
    import sys
    import torch


    def main():
        torch.set_num_threads(1)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
        for i in range(int(sys.argv[1])):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print("loss", loss.item())


    main()
    if __name__ == "__main__" and sys.argv[2:] == ["fail"]:
        raise ValueError("the script's own bug")
    """
)
# The loop is inside main(), already running when the profiler starts (at an optimizer step): its ops are placed at
# the lines they were called from (torch's CallFrom, or roofline's call-site ranges around each top-level forward),
# never at the opt.step() line main was on then.
LINE_FORWARD, LINE_ITEM, LINE_RAISE = 11, 15, 20


def _ceilings(tmp_path: Path) -> Path:
    path = tmp_path / "ceilings.json"
    path.write_text(json.dumps({"device": "cpu", "device_name": "test cpu", "memory_bandwidth_bytes_per_s": 2e10,
                                "peak_flops_per_s": {"float32": 1e11}, "launch_overhead_s": 5e-6}))
    return path


def _profile(tmp_path: Path, *script_and_args: str, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    return subprocess.run(
        [sys.executable, "-m", "roofline", "profile", "--device", "cpu", "--ceilings", str(_ceilings(tmp_path)),
         "--wait", "1", "--timed", "1", "--warmup", "0", "--active", "2", *extra, "-o", str(tmp_path / "out"),
         *script_and_args],
        capture_output=True, text=True, env=env, timeout=300,
    )


@pytest.mark.slow
def test_profile_runs_an_unmodified_training_script(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    done = _profile(tmp_path, str(script), "50")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert (tmp_path / "out" / "trace.json.gz").stat().st_size > 0
    assert report["kind"] == "profile" and report["steps"] == 2
    assert report["profile"]["step_source"] == "optimizer"
    assert report["step_time"]["n"] == 1 and report["profiled_step_time"]["n"] == 2
    (site,) = report["syncs"]
    assert site["kind"] == "item" and site["location"].endswith(f"train.py:{LINE_ITEM}") and site["per_step"] == 1
    assert {op["source"].rsplit("/", 1)[-1] for op in report["ops"] if op["name"] == "aten::addmm"} == {
        f"train.py:{LINE_FORWARD}"}
    assert not any(op["name"].startswith(CALL_SITE_PREFIX) for op in report["ops"])
    # As a torch that records no call site (CallFrom) would have written it: roofline's call-site ranges place the
    # forward (and the backward that borrows its line) all the same.
    with gzip.open(tmp_path / "out" / "trace.json.gz", "rt") as f:
        data = json.load(f)
    for event in data["traceEvents"]:
        (event.get("args") or {}).pop("CallFrom", None)
    (tmp_path / "old.json").write_text(json.dumps(data))
    old = load_trace(tmp_path / "old.json")
    assert {(op.source or "").rsplit("/", 1)[-1] for op in old.ops if op.name in ("aten::addmm", "AddmmBackward0")} == {
        f"train.py:{LINE_FORWARD}"}
    assert done.stdout.count("loss") < 50, "the script stops once the profiled steps are done"


@pytest.mark.slow
def test_a_script_that_raises_gives_one_line_keeps_outputs_and_fails(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    done = _profile(tmp_path, str(script), "3", "fail", extra=("--run-to-end",))
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("roofline: error:")]
    assert errors == [f"roofline: error: train.py raised ValueError: the script's own bug (at train.py:{LINE_RAISE})"]
    assert "Traceback" not in done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert "the script's own bug" in report["profile"]["error"]


@pytest.mark.slow
def test_missing_script_is_one_clear_error(tmp_path: Path) -> None:
    from roofline.cli import main

    assert main(["profile", "--device", "cpu", "--ceilings", str(_ceilings(tmp_path)), str(tmp_path / "nope.py")]) == 2


def test_script_gets_its_argv_and_main_name_and_both_are_restored(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text("import sys\nRESULT = (sys.argv[:], __name__)\nsys.modules['__roofline_test__'] = RESULT\n")
    argv = sys.argv[:]
    run_script(script, ["a", "--b"])
    assert sys.modules.pop("__roofline_test__") == ([str(script), "a", "--b"], "__main__")
    assert sys.argv == argv


def test_steps_follow_the_largest_modules_top_level_forward() -> None:
    small, big = torch.nn.Linear(2, 2), torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8))
    steps: list[int] = []
    with StepFinder(lambda: steps.append(1)) as finder:
        for _ in range(3):
            big(torch.randn(1, 8))
            small(torch.randn(1, 2))
    assert finder.source == "forward" and len(steps) == 3
    with StepFinder(lambda: None):
        pass
    assert not torch.nn.modules.module._global_forward_hooks


def test_a_wrapper_around_a_model_first_called_bare_takes_over_its_steps() -> None:
    """A model warmed up (or captured in a CUDA graph) bare, then called through a weightless wrapper: the
    wrapper ties on size, and its forwards were no step at all (gpu_sweep's cuda_graph_replay case on CPU)."""
    inner = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    wrapper = torch.nn.Sequential(inner)
    other = torch.nn.Linear(8, 8)  # as large as inner (72 weights), holds nothing of it: never the steps
    steps: list[int] = []
    with StepFinder(lambda: steps.append(1)) as finder:
        inner(torch.randn(1, 8))
        for _ in range(3):
            wrapper(torch.randn(1, 8))
            other(torch.randn(1, 8))
    assert finder.source == "forward" and len(steps) == 1 + 3


def test_forwards_on_worker_threads_mark_no_steps_and_are_counted_apart() -> None:
    import threading

    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps: list[int] = []

    def work() -> None:
        for _ in range(3):
            model(torch.randn(2, 4)).sum().backward()
            opt.step()

    with StepFinder(lambda: steps.append(1)) as finder:
        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
        model(torch.randn(2, 4))
    assert steps == [1] and finder.source == "forward", "only the script's own thread's forward is a step"
    assert finder.off_thread == 6


def test_a_compiled_model_is_compiled_once_whole_and_its_calls_are_steps() -> None:
    """Traced by Dynamo, the step hooks' side effects split the graph and recompiled it each call."""
    from torch._dynamo.testing import CompileCounter

    torch._dynamo.reset()
    backend = CompileCounter()
    model = torch.compile(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)),
                          backend=backend)
    steps: list[int] = []
    try:
        with StepFinder(lambda: steps.append(1)) as finder:
            for _ in range(4):
                model(torch.randn(2, 4))
    finally:
        torch._dynamo.reset()
    assert backend.frame_count == 1 and len(steps) == 4 and finder.off_thread == 0


def test_optimizer_step_outranks_forward_once_seen() -> None:
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps: list[str] = []
    with StepFinder(lambda: steps.append("s")) as finder:
        for _ in range(4):
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
    assert finder.source == "optimizer"
    assert len(steps) == 1 + 4, "the first forward counts before the optimizer is seen, then one per step"


def test_two_optimizers_in_one_iteration_end_one_step() -> None:
    """A GAN steps its discriminator's and its generator's optimizer once per iteration: each ended a step, so a
    profiled "step" was half an iteration, alternating between two different pieces of work."""
    gen, disc = torch.nn.Linear(4, 8), torch.nn.Linear(8, 1)
    opt_g, opt_d = torch.optim.SGD(gen.parameters(), lr=0.1), torch.optim.SGD(disc.parameters(), lr=0.1)
    steps: list[str] = []
    with StepFinder(lambda: steps.append("s")) as finder:
        for _ in range(4):
            disc(gen(torch.randn(2, 4)).detach()).sum().backward()
            opt_d.step()
            disc(gen(torch.randn(2, 4))).sum().backward()
            opt_g.step()
    assert finder.source == "optimizer"
    # the first forward, then the discriminator's first step (the only optimizer seen yet), then each generator step
    assert len(steps) == 1 + 1 + 4


def test_switching_boundaries_tells_the_harness_before_the_partial_step_ends() -> None:
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    events: list[str] = []
    with StepFinder(lambda: events.append("step"), on_switch=lambda: events.append("switch")):
        for _ in range(3):
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
    assert events == ["step", "switch", "step", "step", "step"]


def test_extend_wait_turns_the_partial_step_into_a_waiting_one() -> None:
    from roofline.api import ProfilingContext

    ctx = ProfilingContext(wait=1, warmup=1, active=2, device="cpu")
    assert (ctx.first_timed, ctx.total_steps) == (1, 1 + 2 + 1 + 2)
    ctx.steps_done = 1
    ctx.extend_wait()
    assert ctx.wait == 2 and ctx.first_timed == 2
    ctx.steps_done = 3
    ctx.extend_wait()
    assert ctx.wait == 2, "once steps are being timed, the schedule no longer moves"


@pytest.mark.parametrize("warmup", [0, 1])
def test_a_switch_of_step_boundaries_keeps_one_profiler_session(monkeypatch, tmp_path, warmup) -> None:
    """With no timed steps the profiler starts as the waiting steps end; when the step finder then switches from
    forwards to optimizer steps, that step is already under the profiler. The session is kept: started again on
    top of it (two sessions at once), or after stopping it inside the step, torch crashed the process (a segfault
    then, or when the first session's records were freed in a later garbage collection). With warmup steps the
    step becomes one more warmup step of the session."""
    import roofline.capture.profiling as profiling
    from roofline.api import ProfilingContext
    from roofline.capture.script_runner import profile_script

    running: list[int] = []
    sessions: list[int] = []
    real = profiling.torch_profile

    class Counted(real):
        def __enter__(self):
            running.append(1)
            sessions.append(len(running))
            return super().__enter__()

        def __exit__(self, *exc):
            running.pop()
            return super().__exit__(*exc)

    monkeypatch.setattr(profiling, "torch_profile", Counted)
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch
        model = torch.nn.Linear(4, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(8):
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
        """))
    context = ProfilingContext(wait=1, timed=0, warmup=warmup, active=2, device="cpu", whole_block=False,
                               detect_syncs=False)
    run = profile_script(context, script, [])
    assert run.step_source == "optimizer" and sessions == [1] and running == []
    assert context.wait == (2 if warmup else 1), "a warmup step absorbs the switch; without one, one of its own"
    assert context.partial_step_warmup == (0 if warmup else 1)
    assert context.trace_path is not None and len(load_trace(context.trace_path).steps) == 2


@pytest.mark.parametrize("source", ["train", "infer"])
def test_with_no_warmup_and_no_timed_steps_every_profiled_step_is_whole(tmp_path, cpu_ceilings, source) -> None:
    """--timed 0 --warmup 0 on a training script: the profiler started as the first forward ended, the optimizer's
    step then became the boundary, and the first profiled step held that iteration's backward and optimizer step
    but 3 of its 10 forward ops. The profiler now takes one warmup step while forwards are the steps; a forward-only
    script keeps forwards as its steps, one of them thrown away."""
    from roofline.analyze.profiled import PARTIAL_STEP_WARMUP_NOTE, report_from_profile
    from roofline.api import ProfilingContext
    from roofline.capture.script_runner import profile_script

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(10):
            loss = model(torch.randn(2, 8)).square().mean()
            if TRAIN:
                loss.backward()
                opt.step()
                opt.zero_grad()
        """).replace("TRAIN", str(source == "train")))
    context = ProfilingContext(wait=1, timed=0, warmup=0, active=2, device="cpu", whole_block=False,
                               detect_syncs=False)
    run = profile_script(context, script, [])
    assert run.step_source == ("optimizer" if source == "train" else "forward")
    report = report_from_profile(context.record(), cpu_ceilings)
    per_step = {}
    for op in report.ops:
        per_step.setdefault(op.step, []).append(op.name)
    assert len(per_step) == 2 and all("aten::linear" in names for names in per_step.values())
    first, second = (sorted(names) for _, names in sorted(per_step.items()))
    assert first == second, "the first profiled step is a whole one, as the next"
    assert PARTIAL_STEP_WARMUP_NOTE in report.summary.notes


def test_the_scripts_own_profiler_is_a_stand_in_whose_steps_count() -> None:
    real = torch.profiler.profile
    steps: list[int] = []
    with StepFinder(lambda: steps.append(1)) as finder:
        with torch.profiler.profile() as prof:
            for _ in range(3):
                torch.ones(2) + 1
                prof.step()
        assert prof.key_averages().table() .startswith("(profiled by roofline")
    assert torch.profiler.profile is real
    assert finder.source == "profiler" and len(steps) == 3


def test_the_scripts_own_profiling_context_is_a_stand_in_whose_steps_count() -> None:
    """A roofline.ProfilingContext in a profiled script raised "Profiler is already enabled on this thread" once
    roofline's profiler ran. It stands in like torch.profiler.profile: its steps (step() or decorated calls)
    count, and asking it for its report ends the script, whose report is roofline's."""
    import roofline
    from roofline.capture.script_runner import StopScript

    steps: list[int] = []
    with StepFinder(lambda: steps.append(1)) as finder:
        with roofline.ProfilingContext(wait=1, warmup=1, active=2) as ctx:
            for _ in range(2):
                torch.ones(2) + 1
                ctx.step()
        step = roofline.ProfilingContext(active=1)(lambda x: x + 1)
        assert step(torch.ones(2)).tolist() == [2.0, 2.0]
        with pytest.raises(StopScript):
            ctx.report()
    assert finder.source == "profiler" and len(steps) == 3
    assert isinstance(roofline.ProfilingContext(active=1), roofline.ProfilingContext)


def test_script_error_line_names_the_scripts_line(tmp_path: Path) -> None:
    script = tmp_path / "bad.py"
    script.write_text("x = 1\ny = x / 0\n")
    with pytest.raises(ZeroDivisionError) as info:
        run_script(script, [])
    assert script_error_line(info.value, script) == "bad.py raised ZeroDivisionError: division by zero (at bad.py:2)"


def _cpu_ceilings():
    from roofline.report import Ceilings

    return Ceilings(device="cpu", device_name="test cpu", memory_bandwidth_bytes_per_s=2e10,
                    peak_flops_per_s={"float32": 1e11}, launch_overhead_s=5e-6)


def test_steps_ending_at_optimizer_step_are_each_counted_once(tmp_path: Path, one_thread) -> None:
    """The optimizer's own profiler span is still open when its post-hook ends the step: step k of N used to hold
    every later step (each op, FLOP and second counted about N-k times)."""
    from torch.utils.flop_counter import FlopCounterMode

    from roofline.api import ProfilingContext
    from roofline.capture.script_runner import profile_script

    script = tmp_path / "train.py"
    script.write_text(TRAIN.replace('print("loss", loss.item())', "pass"))
    active = 3
    context = ProfilingContext(wait=1, timed=1, warmup=0, active=active, device="cpu", ceilings=_cpu_ceilings(),
                               whole_block=False, detect_syncs=False)
    run = profile_script(context, script, ["20"])
    assert run.error is None and run.step_source == "optimizer"
    report = context.report()
    per_step = {step: [op for op in report.ops if op.step == step] for step in range(active)}
    assert [sorted(o.name for o in ops) for ops in per_step.values()].count(sorted(o.name for o in per_step[0])) == active
    assert all(o.phase == "optimizer" for o in report.ops if o.name == "aten::add_" and "Linear" not in o.module)

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    with FlopCounterMode(display=False) as counter:
        torch.nn.functional.cross_entropy(model(x), y).backward()
    matmul = sum(o.flops for o in report.ops if o.name in ("aten::addmm", "aten::mm"))
    assert matmul == active * counter.get_total_flops()


def test_doctor_runs_a_script_in_process_with_its_step_source(tmp_path: Path, capsys) -> None:
    from roofline.cli import main

    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    out = tmp_path / "doc"
    assert main(["doctor", "--device", "cpu", "--ceilings", str(_ceilings(tmp_path)), "-o", str(out),
                 str(script), "30"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["profile"]["step_source"] == "optimizer"
    assert "roofline: error" not in capsys.readouterr().err


def test_a_script_calling_sys_exit_is_one_line_with_its_line_and_exit_2(tmp_path: Path, capsys) -> None:
    from roofline.cli import main

    script = tmp_path / "quits.py"
    script.write_text("import sys\n\nsys.exit(5)\n")
    for command in ("doctor", "profile"):
        code = main([command, "--device", "cpu", "--ceilings", str(_ceilings(tmp_path)), "-o", str(tmp_path / command),
                     str(script)])
        err = capsys.readouterr().err
        assert code == 2, err
        assert [line for line in err.splitlines() if line.startswith("roofline: error:")] == [
            "roofline: error: quits.py called sys.exit(5) (at quits.py:3)"]


def test_a_dynamic_int8_model_is_the_largest_module_though_it_has_no_parameters() -> None:
    """quantize_dynamic's weights are prepacked, not parameters: the model counted as 0 elements, so the steps
    followed whatever parameterless module ran first (an observer during quantisation) and the profiled window
    missed the inference loop."""
    from torch.ao.quantization import quantize_dynamic

    model = quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Linear(32, 4)).eval(),
                             {torch.nn.Linear})
    observer = torch.nn.Identity()
    steps: list[int] = []
    with StepFinder(lambda: steps.append(1)) as finder:
        observer(torch.ones(1))
        for _ in range(3):
            model(torch.randn(2, 16))
    assert finder.source == "forward" and len(steps) == 1 + 3


def test_a_profiler_stopped_by_another_session_is_not_blamed_on_the_script_alone(tmp_path):
    """On the H200, FlexAttention compiled with an empty Inductor cache inside `roofline profile` ended with
    "flex_attention_document.py raised RuntimeError: Can't disable Kineto profiler when it's not running": roofline's
    own step boundary raised it, after another profiler session had stopped roofline's. The line now says so."""
    from roofline.capture.script_runner import PROFILER_STOPPED_HINT

    script = tmp_path / "flex.py"
    script.write_text("raise RuntimeError(\"Can't disable Kineto profiler when it's not running\")\n")
    try:
        exec(compile(script.read_text(), str(script), "exec"), {})
    except RuntimeError as exc:
        line = script_error_line(exc, script)
    assert line.startswith("flex.py raised RuntimeError: Can't disable Kineto profiler when it's not running (at "
                           "flex.py:1); another torch.profiler session") and line.endswith(PROFILER_STOPPED_HINT)
    try:
        exec(compile("raise RuntimeError('boom')", str(script), "exec"), {})
    except RuntimeError as exc:
        assert script_error_line(exc, script) == "flex.py raised RuntimeError: boom (at flex.py:1)"


def test_a_legacy_profiler_in_the_script_is_named_as_the_cause(tmp_path, capsys):
    """torch.autograd.profiler.profile cannot stand in (torch.profiler runs on it): the script's line said only
    "Profiler is already enabled on this thread"; it now says which profiler and what to do."""
    script = tmp_path / "legacy.py"
    script.write_text(textwrap.dedent("""\
        import torch
        model = torch.nn.Linear(8, 8)
        for _ in range(12):
            with torch.autograd.profiler.profile():
                model(torch.randn(2, 8))
    """))
    from roofline.cli import main

    assert main(["profile", "--wait", "1", "--timed", "1", "--warmup", "0", "--active", "1", "-o",
                 str(tmp_path / "out"), str(script)]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("roofline: error: legacy.py raised RuntimeError: Profiler is already enabled on this "
                           "thread. (at legacy.py:"), line
    assert "); the script runs a profiler of its own" in line
    assert "torch.autograd.profiler.profile" in line


def test_a_weight_normed_model_s_weight_reads_while_it_is_built_are_no_steps() -> None:
    """sweep 5: EnCodec's weight-normed convolutions read their weights (the parametrization's forward, at top
    level) while the model was built and initialised; the largest of them became the steps, and the whole
    profile was the model's construction (2.8 kFLOPs a step against FlopCounterMode's 4.6 M)."""
    from torch.nn.utils.parametrizations import weight_norm

    steps: list[int] = []
    with StepFinder(lambda: steps.append(1)) as finder:
        convs = [weight_norm(torch.nn.Conv1d(4, 4, 3)) for _ in range(3)]
        for c in convs:
            c.weight.data.normal_()  # a weight read outside any forward, as an initialiser does
        model = torch.nn.Sequential(*convs, torch.nn.Conv1d(4, 2, 1))
        for _ in range(2):
            model(torch.randn(1, 4, 16))
    assert finder.source == "forward" and len(steps) == 2, "the model's two forwards, not the weight reads"
