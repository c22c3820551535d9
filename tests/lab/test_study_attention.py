import json

import pytest
import torch

from roofline.cli import main
from roofline.lab import runner
from roofline.lab.model import naive_attention
from roofline.lab.studies import attention


def test_naive_attention_is_causal_sdpa():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 9, 8, generator=gen) for _ in range(3))
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(naive_attention(q, k, v), expected, atol=1e-6)


def test_attention_cost_is_roofline_causal_count():
    flops, moved = attention.attention_cost(1, 2, 4, 8, torch.float16)
    # 4*b*h*s*s*d for the full matrix, times the kept triangle 10/16.
    assert flops == pytest.approx(4 * 2 * 16 * 8 * 10 / 16)
    # Q, K, V and O (2 bytes each) plus the fp32 logsumexp.
    assert moved == 4 * 2 * 4 * 8 * 2 + 2 * 4 * 4


def test_attention_study_cpu_quick(tmp_path, monkeypatch, cpu_ceilings):
    monkeypatch.setattr(runner, "measured_ceilings", lambda device, ceilings_file, progress: cpu_ceilings)
    monkeypatch.setattr(attention, "CPU_SEQS", (32, 64))
    out = tmp_path / "att"
    assert main(["lab", "--study", "attention", "--device", "cpu", "-o", str(out)]) == 0
    data = json.loads((out / "attention.json").read_text())
    cells = {(c["backend"], c["seq"]): c for c in data["cells"]}
    assert {b for b, _ in cells} == set(attention.BACKENDS)
    assert cells[("math", 64)]["status"] == "ok" and cells[("naive", 64)]["status"] == "ok"
    # CUDA kernels refuse CPU tensors: rows that say so, not missing rows.
    assert cells[("cudnn", 64)]["status"] == "unavailable" and cells[("cudnn", 64)]["reason"]
    assert cells[("math", 64)]["speedup_vs_math"] == pytest.approx(1.0)
    assert cells[("math", 64)]["tflops"] > 0
    assert data["shape"] == {"batch": 1, "heads": 8, "kv_heads": 8, "head_dim": 64, "causal": True}
    assert (out / "attention.png").read_bytes()[:4] == b"\x89PNG"
    assert "| float32 | 64 |" in (out / "attention.md").read_text()


def test_a_cpu_s_rates_are_not_rounded_to_zero_in_the_table():
    """On a CPU a backend reaches a few hundredths of a TFLOP/s: the table's one decimal printed 0.0."""
    cell = attention.Cell("flash", "float32", 256, "ok", median_ms=1.0, iqr_ms=0.1, tflops=0.0123, intensity=40.0,
                          roof_tflops=0.137, share_of_roof=0.0898)
    row = attention.detail_table([cell]).splitlines()[-1]
    assert "| 0.0123 | 40 | 0.137 | 9% |" in row


def test_a_budget_cuts_the_lengths_that_would_not_fit_and_says_so(tmp_path, monkeypatch, cpu_ceilings, capsys):
    """--budget bounds the sweep (it was accepted and ignored): a length predicted to overrun is not started."""
    monkeypatch.setattr(runner, "measured_ceilings", lambda device, ceilings_file, progress: cpu_ceilings)
    monkeypatch.setattr(attention, "CPU_SEQS", (32, 64))
    out = tmp_path / "att"
    assert main(["lab", "--study", "attention", "--device", "cpu", "--budget", "1e-9", "-o", str(out)]) == 0
    data = json.loads((out / "attention.json").read_text())
    assert data["cells"] == [] and data["budget_s"] == 1e-9 and data["cut_by_budget"] == ["float32 at 32", "float32 at 64"]
    note = "--budget 1e-09 s: not measured: float32 at 32, float32 at 64"
    assert any(n.startswith(note) for n in data["notes"]) and note in (out / "attention.md").read_text()
    assert note in capsys.readouterr().out


def test_the_budget_predicts_a_length_from_the_last_by_the_square_of_the_length():
    clock = iter([0.0, 0.0, 0.0, 2.0, 2.0, 2.0])  # begin, fits, timing (2 s), fits, fits
    budget = attention.SweepBudget(9.0, clock=lambda: next(clock))
    assert budget.fits(128)  # nothing measured yet: the first length starts
    with budget.timing(128):
        pass
    assert budget.predicted_s(256) == pytest.approx(8.0) and not budget.fits(256)  # 8 s > 7 s left
    assert budget.fits(128)  # 2 s predicted
    with pytest.raises(attention.RooflineError, match="--budget must be a positive number"):
        attention.SweepBudget(0)
    assert attention.SweepBudget(None).fits(1 << 20)
