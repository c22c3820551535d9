"""Real models through analyze and the doctor: a static-quantization model's QuantStub reads its scale and zero point
(two .item()s on one line, once each per step) and is no loop; .item() in a Python loop over tokens is one."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from roofline.analyze.live import analyze_model
from roofline.doctor import diagnose


class _QLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = torch.ao.quantization.QuantStub(), torch.ao.quantization.DeQuantStub()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        return self.dequant(self.fc(self.quant(x)))


class _Greedy(nn.Module):
    """Five decode steps, each reading the chosen token on the host."""

    def __init__(self):
        super().__init__()
        self.emb, self.out = nn.Embedding(32, 16), nn.Linear(16, 32)

    def forward(self, x):
        tokens = []
        for _ in range(5):
            x = self.out(self.emb(x)).argmax(-1)
            tokens.append(x[0].item())
        return x


def _quantized():
    q = torch.ao.quantization
    torch.manual_seed(0)
    engines = torch.backends.quantized.supported_engines
    if "x86" not in engines and "fbgemm" not in engines:
        pytest.skip("no x86/fbgemm quantized engine")
    torch.backends.quantized.engine = "x86" if "x86" in engines else "fbgemm"
    m = _QLinear().eval()
    m.qconfig = q.get_default_qconfig(torch.backends.quantized.engine)
    m = q.prepare(m)
    with torch.no_grad():
        m(torch.randn(4, 16))
    return q.convert(m)


def _sync_findings(model, inputs, cpu_ceilings):
    report = analyze_model(model, inputs, device="cpu", ceilings=cpu_ceilings, warmup=1, iters=2)
    return report, diagnose(report, rules=["host-device-sync"])


@pytest.fixture
def _engine_kept():
    before = torch.backends.quantized.engine
    yield
    torch.backends.quantized.engine = before


def test_quant_stubs_two_reads_on_one_line_are_no_loop(cpu_ceilings, _engine_kept):
    report, findings = _sync_findings(_quantized(), (torch.randn(4, 16),), cpu_ceilings)
    reads = [op for op in report.ops if op.name == "aten::_local_scalar_dense"]
    assert len({op.source for op in reads}) == 1 and len(reads) == 2  # the case: two reads, one line, one step
    assert not any(f.evidence["in_loop"] or "loop" in f.title for f in findings)


def test_item_in_a_python_loop_over_tokens_is_still_a_loop(cpu_ceilings):
    _, findings = _sync_findings(_Greedy().eval(), (torch.tensor([3]),), cpu_ceilings)
    (f,) = [f for f in findings if f.evidence["in_loop"]]
    assert f.evidence["per_step"] == 5 and f.evidence["same_read_per_step"] == 5 and "inside a loop" in f.title
