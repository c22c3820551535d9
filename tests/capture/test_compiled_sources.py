"""Ops that torch.compile's generated code runs are placed at the user line that called the compiled module, never
at a line of Inductor's output (/tmp/torchinductor_<user>/xx/cxx....py), which no user can act on."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

from roofline.capture.source_paths import is_generated_file, is_user_file

HASH = "cx4lq3uv7jhvjime6cw447aihgip5r464aoepwnddrlwzijtwpg2"


@pytest.mark.parametrize("path", [
    f"/tmp/torchinductor_root/x4/{HASH}.py",
    f"../torchinductor_alice/x4/{HASH}.py",  # a trace's path spelled from the working directory
    f"/scratch/inductor-cache/x4/{HASH}.py",  # TORCHINDUCTOR_CACHE_DIR elsewhere: the file name says it
    "/home/alice/.triton/cache/Q2ZJ/triton_poi_fused_relu_0.py",
    "runs/torch_compile_debug/run_2026/torchinductor/model__0_forward_1.0/output_code.py",
    "<eval_with_key>.3",
    "<frozen runpy>",
])
def test_generated_code_is_never_the_users(path):
    assert not is_user_file(path)


@pytest.mark.parametrize("path", ["train.py", "/home/alice/proj/x4/cx4_model.py", "/home/alice/proj/ab/cab.py"])
def test_user_files_that_look_a_little_generated_stay_user_files(path):
    assert is_user_file(path) and not is_generated_file(path)


def test_a_moved_inductor_cache_is_generated_code(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    assert is_generated_file(str(tmp_path / "cache" / "kernel_defs.py"))


APP = '''\
def run(model, x):
    for _ in range(2):
        model(x)
'''
LINE_CALL = 3


@pytest.mark.slow  # about 8 s: importing and running Dynamo and Inductor once, on a single Linear
def test_ops_of_a_compiled_model_are_placed_at_its_call_site(tmp_path):
    from roofline.analyze.trace_file import analyze_trace_file
    from roofline.capture.kineto import load_trace

    torch.manual_seed(0)
    model = torch.compile(torch.nn.Linear(16, 4))  # extern addmm only: no C++ kernel to build
    x = torch.randn(8, 16)
    app = tmp_path / "app.py"
    app.write_text(APP)
    namespace: dict = {}
    exec(compile(APP, str(app), "exec"), namespace)
    path = tmp_path / "compiled.json"
    try:
        with torch.no_grad():
            model(x)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                            with_stack=True) as prof:
                    namespace["run"](model, x)
        prof.export_chrome_trace(str(path))
    finally:
        torch._dynamo.reset()
    trace = load_trace(path)
    events = json.loads(path.read_text())["traceEvents"]
    assert any(e.get("cat") == "python_function" and is_generated_file(e["name"].split("(")[0]) for e in events), \
        "the trace has frames of Inductor's output code"
    addmm = [op for op in trace.ops if op.name == "aten::addmm"]
    assert len(addmm) == 2
    assert {op.source.rsplit("/", 1)[-1] for op in addmm} == {f"app.py:{LINE_CALL}"}
    assert not any(op.source and is_generated_file(op.source.rsplit(":", 1)[0]) for op in trace.ops)
    assert any("torch.compile's generated code" in w for w in trace.warnings)
    report = analyze_trace_file(path)
    sources = {op.source for op in report.ops if op.source}
    assert sources and all(source.endswith(f"app.py:{LINE_CALL}") for source in sources)
    assert any("torch.compile's generated code" in note for note in report.summary.notes)


SCRIPT = '''\
import torch


def main():
    torch.manual_seed(0)
    model = torch.compile(torch.nn.Linear(16, 4))
    x = torch.randn(8, 16)
    with torch.no_grad():
        for _ in range(8):
            model(x)


main()
'''
LINE_SCRIPT_CALL = 10


@pytest.mark.slow  # about 3 s, and 8 s more where no other test compiled before it
def test_profile_of_a_compiled_script_places_ops_at_the_script_line(tmp_path):
    from roofline.cli import main

    script = tmp_path / "infer.py"
    script.write_text(SCRIPT)
    ceilings = tmp_path / "ceilings.json"
    ceilings.write_text(json.dumps({"device": "cpu", "device_name": "test cpu", "memory_bandwidth_bytes_per_s": 2e10,
                                    "peak_flops_per_s": {"float32": 1e11}, "launch_overhead_s": 5e-6}))
    out = tmp_path / "out"
    try:
        assert main(["profile", "--device", "cpu", "--ceilings", str(ceilings), "--wait", "1", "--timed", "1",
                     "--warmup", "1", "--active", "2", "-o", str(out), str(script)]) == 0
    finally:
        torch._dynamo.reset()
    report = json.loads((out / "report.json").read_text())
    addmm = [op for op in report["ops"] if op["name"] == "aten::addmm"]
    assert len(addmm) == 2 and {op["source"].rsplit("/", 1)[-1] for op in addmm} == {f"infer.py:{LINE_SCRIPT_CALL}"}
    assert not any(op["source"] and is_generated_file(op["source"].rsplit(":", 1)[0]) for op in report["ops"])
    assert any("torch.compile's generated code" in note for note in report["summary"]["notes"])
