"""The live path on CPU: count pass + profiled pass joined, with this machine's measured CPU ceilings."""

import inspect
import json

import pytest
import torch

from roofline.analyze.live import analyze_model
from roofline.cli import main


class MatmulModel(torch.nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.b = torch.nn.Parameter(torch.randn(n, n))

    def forward(self, a):
        return a @ self.b


@pytest.fixture(scope="module")
def matmul_report(cpu_ceilings):
    torch.manual_seed(0)
    return analyze_model(MatmulModel(768), (torch.randn(768, 768),), device="cpu", ceilings=cpu_ceilings, iters=3)


def test_large_matmul_is_compute_bound_on_cpu(matmul_report):
    mms = [op for op in matmul_report.ops if op.name == "aten::mm"]
    assert len(mms) == 1
    mm = mms[0]
    assert mm.flops == 2 * 768**3
    assert mm.bytes == 3 * 768 * 768 * 4
    assert mm.time_s > 0 and mm.bound == "compute"
    assert 0 < mm.efficiency
    lines, first = inspect.getsourcelines(MatmulModel.forward)
    matmul_line = first + next(i for i, text in enumerate(lines) if "a @ self.b" in text)
    assert mm.source.endswith(f"test_analyze_model.py:{matmul_line}")


def test_layernorm_is_memory_bound_on_cpu():
    """Against fixed, typical CPU roofs (20 GB/s, 200 GFLOP/s fp32: ridge 10 FLOP/B), not a measurement taken on a
    loaded test machine, whose ridge can fall to the layer norm's own ~1 FLOP/B and flip the verdict."""
    from roofline.report import Ceilings

    roofs = Ceilings(device="cpu", memory_bandwidth_bytes_per_s=2e10, peak_flops_per_s={"float32": 2e11},
                     launch_overhead_s=5e-6, source="fixed for the test")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.LayerNorm(2048))
    report = analyze_model(model, (torch.randn(2048, 2048),), device="cpu", ceilings=roofs, iters=3)
    norms = [op for op in report.ops if "layer_norm" in op.name]
    assert norms and norms[0].bound == "memory"
    assert norms[0].module == "0"


def test_step_times_and_method_are_stated(matmul_report):
    assert matmul_report.step_time.n == 3 and matmul_report.step_time.median_s > 0
    assert matmul_report.profiled_step_time.n == 3
    assert "median over 3 profiled step" in matmul_report.summary.timing_method
    assert matmul_report.summary.unmodeled_time_share == 0


def test_backward_ops_are_recorded_with_their_phase(cpu_ceilings):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    report = analyze_model(model, (torch.randn(32, 64),), device="cpu", ceilings=cpu_ceilings, iters=2, backward=True)
    phases = {op.phase for op in report.ops}
    assert phases == {"forward", "backward"}
    assert any(op.name == "aten::threshold_backward" for op in report.ops)
    assert all(op.modeled for op in report.ops), [op.name for op in report.ops if not op.modeled]


@pytest.mark.parametrize("grad_mode", [torch.no_grad, torch.inference_mode])
def test_a_backward_asked_for_under_no_grad_still_runs(cpu_ceilings, grad_mode):
    # the Python API called from evaluation code: the step ran in the caller's grad mode and refused to make a loss
    # ("it holds no floating-point tensor that requires grad") from a model whose weights all require grad
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    inputs = (torch.randn(8, 16),)
    with grad_mode():
        report = analyze_model(model, inputs, device="cpu", ceilings=cpu_ceilings, iters=1, warmup=0, backward=True)
    assert sum(op.flops for op in report.ops if op.name == "aten::mm" and op.phase == "backward") == \
        2 * 8 * 16 * 4 * 2 + 2 * 8 * 16 * 16


def test_a_backward_on_inputs_made_under_inference_mode_runs(cpu_ceilings):
    # autograd refuses to save inference tensors for the backward: the step copies them, not a traceback
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    with torch.inference_mode():
        inputs = (torch.randn(8, 16),)
        report = analyze_model(model, inputs, device="cpu", ceilings=cpu_ceilings, iters=1, warmup=0, backward=True)
    assert inputs[0].is_inference()
    assert sum(op.flops for op in report.ops if op.name == "aten::mm" and op.phase == "backward") == \
        2 * 8 * 16 * 4 * 2 + 2 * 8 * 16 * 16


def test_cli_analyze_writes_report_png_and_trace(tmp_path, capsys, cpu_ceilings):
    out = tmp_path / "out"
    rc = main(["analyze", "--model", "llama-tiny", "--batch", "1", "--seq", "16", "--iters", "2", "--warmup", "1",
               "--device", "cpu", "-o", str(out), "--no-html"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "Top" in text and "mm" in text
    data = json.loads((out / "report.json").read_text())
    assert data["ops"] and data["summary"]["unmodeled_time_share"] == 0
    from png_checks import assert_roofline_png

    assert_roofline_png((out / "roofline.png").read_bytes(), bounds={"compute", "memory"} & {
        op["bound"] for op in data["ops"]})
    assert (out / "trace.json.gz").stat().st_size > 0


def test_cli_analyze_user_factory(tmp_path, capsys, cpu_ceilings):
    src = tmp_path / "mymodel.py"
    src.write_text(
        "import torch\n"
        "def make():\n"
        "    return torch.nn.Linear(32, 32), (torch.randn(4, 32),)\n"
    )
    rc = main(["analyze", f"{src}:make", "--device", "cpu", "--iters", "1", "--warmup", "1", "-o",
               str(tmp_path / "o"), "--no-html"])
    assert rc == 0
    assert any(op["name"] == "aten::addmm" for op in json.loads((tmp_path / "o" / "report.json").read_text())["ops"])


@pytest.mark.parametrize("target, message", [("nofile.py:make", "no such file"), ("x", "expected path"),])
def test_cli_analyze_bad_targets(target, message, capsys, tmp_path):
    assert main(["analyze", target, "--device", "cpu", "-o", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


class ScaledModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 4)

    def forward(self, x, scale, mask=None):
        return self.lin(x) * scale


def test_a_backward_on_inputs_holding_numbers_and_none_runs(cpu_ceilings):
    # keyword inputs a model takes beside its tensors (a scale, an absent mask): only tensors are copied for autograd
    inputs = {"x": torch.randn(8, 16), "scale": 2, "mask": None}
    report = analyze_model(ScaledModel(), inputs, device="cpu", ceilings=cpu_ceilings, iters=1, warmup=0,
                           backward=True)
    assert {op.phase for op in report.ops} == {"forward", "backward"}
    assert sum(op.flops for op in report.ops if op.name == "aten::mm" and op.phase == "backward") == 2 * 8 * 16 * 4


def test_a_cpu_profile_far_slower_than_the_true_step_is_noted(cpu_ceilings, monkeypatch):
    """A busy machine during the profiled pass (here: the true step made 1000x shorter than it was) gives ops that
    add up to far more than the step: analyze on a CPU says so, as profile does."""
    import msgspec

    from roofline.analyze import live
    from roofline.analyze.inflated_profile import INFLATED_NOTE

    real = live._count_and_profile

    def busy(*args, **kwargs):
        recording, trace, profiled, true = real(*args, **kwargs)
        return recording, trace, profiled, msgspec.structs.replace(true, median_s=true.median_s / 1000)

    monkeypatch.setattr(live, "_count_and_profile", busy)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    report = analyze_model(model, (torch.randn(8, 16),), device="cpu", ceilings=cpu_ceilings, iters=2, warmup=1)
    assert any(n.startswith(INFLATED_NOTE) for n in report.summary.notes), report.summary.notes
