import json

import pytest
import torch

from roofline.cli import main
from roofline.lab import runner
from roofline.lab.decode_fast import FastDecode
from roofline.lab.fp8 import Fp8FastDecode, dequantize, fp8_weights, quantize_e4m3
from roofline.lab.model import Fixes, configure
from roofline.models.llama import build_llama


def test_e4m3_rows_use_the_whole_range_and_round_closely():
    w = torch.randn(16, 64) * torch.logspace(-3, 1, 16)[:, None]
    w8, scale = quantize_e4m3(w)
    assert w8.dtype == torch.float8_e4m3fn and scale.shape == (16,)
    assert torch.allclose(w8.float().abs().amax(1), torch.full((16,), 448.0))
    # e4m3 keeps 3 mantissa bits: each weight within half a step (2^-4 relative) of its value.
    err = (dequantize(w8, scale) - w).abs() / w.abs().clamp_min(1e-12)
    assert float(err[w.abs() > scale[:, None] * 2**-6].max()) <= 2**-4 + 1e-6


@torch.no_grad()
def test_fp8_weights_switch_every_linear_and_restore_them(tiny_config):
    model = configure(build_llama(tiny_config, dtype=torch.float32), Fixes.all())
    x = torch.tensor([[1, 5, 9, 3]])
    before = model(x)
    with fp8_weights(model):
        fp8 = model(x)
        assert all(hasattr(m, "weight_fp8") for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert torch.equal(model(x), before)
    assert not any(hasattr(m, "weight_fp8") for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert 0 < float((fp8 - before).abs().max()) < 0.1 * float(before.abs().max())


def test_fp8_decode_step_matches_the_eager_fp8_model(tiny_config):
    model = configure(build_llama(tiny_config, dtype=torch.float32), Fixes.all())
    model.setup_caches(1, 32)
    fast16 = FastDecode(model)
    with fp8_weights(model):
        fast8 = Fp8FastDecode(model)
        token, pos, pad = torch.tensor([[7]]), torch.tensor([0]), torch.zeros(1, dtype=torch.long)
        expected = model(token, pos).argmax(-1).view(1)
        got = fast8.step(model, token, pos, pad)
    assert torch.equal(got, expected)
    # One byte a weight plus a 4-byte scale per row, against 4 bytes a weight here (float32).
    assert fast8.weight_bytes() < fast16.weight_bytes() / 3


def test_fp8_study_cpu_quick(tmp_path, monkeypatch, wikitext_dir, cpu_ceilings):
    monkeypatch.setattr(runner, "measured_ceilings", lambda device, ceilings_file, progress: cpu_ceilings)
    out = tmp_path / "fp8"
    assert main(["lab", "--study", "fp8", "--device", "cpu", "--data", str(wikitext_dir), "-o", str(out)]) == 0
    data = json.loads((out / "fp8.json").read_text())
    fp16, fp8 = data["decode"]
    assert fp16["note"] == fp8["note"] == "CUDA only"
    assert fp8["bytes_per_token"] < 0.6 * fp16["bytes_per_token"]
    q = data["quality"]
    assert q["compared_tokens"] == q["prompts"] * q["new_tokens"] > 0
    assert q["perplexity_tokens"] == 2 * 64
    assert 0.9 < q["perplexity_ratio"] < 1.1 and 0 < q["kl_nats"] < 0.05
    assert 0 < q["weight_rel_error"] < 0.05
    md = (out / "fp8.md").read_text()
    assert "random" in md and "| fp8 e4m3 weights |" in md
    # the chart plots the speed rows, CUDA only: on a CPU the markdown must not name a file that is not there
    assert not (out / "fp8.png").exists() and "Chart: fp8.png" not in md and "No chart" in md


def test_a_big_model_on_cpu_is_one_clear_error(tmp_path, capsys):
    assert main(["lab", "--study", "fp8", "--model", "llama-8b", "--device", "cpu", "-o", str(tmp_path / "o")]) == 2
    assert "too big for the CPU fp8 study" in capsys.readouterr().err


def test_rowwise_scaled_matmul_is_the_product_within_fp8_rounding():
    from roofline.lab.studies.fp8 import fp8_matmul, quantize_rows

    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(32, 64, generator=gen), torch.randn(48, 64, generator=gen) * torch.logspace(-2, 1, 48)[:, None]
    x8, sx = quantize_rows(x)
    w8, sw = quantize_e4m3(w)
    try:
        y = fp8_matmul(x8, sx, w8, sw).float()
    except (RuntimeError, NotImplementedError) as exc:
        pytest.skip(f"torch._scaled_mm has no row-wise CPU kernel here: {exc}")
    expected = x @ w.t()
    # Each output row keeps its own scale: rows of w 1000x apart in size are both right to e4m3's few %.
    rel = (y - expected).norm(dim=0) / expected.norm(dim=0)
    assert float(rel.max()) < 0.08
    assert y.shape == (32, 48)


def test_a_budget_with_the_fp8_study_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    """--budget was accepted and ignored by --study fp8 (a fixed set of measurements, no sweep to cut)."""
    from roofline.cli import main
    from roofline.lab import runner

    monkeypatch.setattr(runner, "measured_ceilings", lambda *a, **k: pytest.fail("measured before refusing"))
    assert main(["lab", "--study", "fp8", "--device", "cpu", "--budget", "60", "-o", str(tmp_path / "fp8")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("roofline: error: --budget does not apply to --study fp8") and len(err.splitlines()) == 1
    assert not (tmp_path / "fp8" / "fp8.json").exists()
