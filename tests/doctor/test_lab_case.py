"""End to end on CPU: the doctor names the case study's five seeded bugs by itself, and none on the fixed model.

Only the evidence a CPU run gives (shapes, dtypes, strides, op order, syncs) reaches the doctor; nothing tells it
what was seeded. The model runs in float16 because the fp32-norm bug has no evidence in an fp32 model.
"""

import tempfile
from pathlib import Path

import pytest
import torch

from roofline.doctor import diagnose

pytestmark = pytest.mark.slow

FIVE = {"recomputation", "layout-copy", "host-device-sync", "precision-island", "unbatched-loop"}


def _lab_report(fixed: bool):
    from roofline.analyze.pipeline import profile_steps, report_from_trace
    from roofline.capture.kineto import load_trace
    from roofline.capture.op_recorder import record_ops
    from roofline.lab.generate import generate
    from roofline.lab.model import Fixes, configure
    from roofline.models.llama import LlamaConfig, build_llama
    from doctor_cases import ceilings

    torch.manual_seed(0)
    config = LlamaConfig(dim=64, n_layers=2, n_heads=4, n_kv_heads=4, ffn_dim=128, vocab_size=256, max_seq_len=64)
    model = build_llama(config, dtype=torch.float16)
    fixes = Fixes.all() if fixed else Fixes()
    configure(model, fixes)
    prompts = [[3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14], [15, 16, 17, 18, 19, 20]]

    def step():
        return generate(model, prompts, 5, eos_id=0, fixes=fixes)

    step()
    recording = record_ops(step, root=model)
    with tempfile.TemporaryDirectory() as tmp:
        profile_steps(step, torch.device("cpu"), 1, Path(tmp) / "trace.json")
        trace = load_trace(Path(tmp) / "trace.json")
    roofs = ceilings(bandwidth=2e10, peaks={"float32": 5e10, "float16": 5e9}, launch=5e-6)
    return report_from_trace(trace, roofs, recording)


def test_the_doctor_names_all_five_seeded_bugs_with_file_and_line():
    findings = diagnose(_lab_report(fixed=False))
    named = {f.rule for f in findings}
    assert FIVE <= named, f"missing: {FIVE - named}"
    for f in findings:
        if f.rule in FIVE:
            assert any(".py:" in loc for loc in f.locations), f.rule
    sync = next(f for f in findings if f.rule == "host-device-sync" and f.evidence["in_loop"])
    assert any("generate.py" in loc for loc in sync.locations)
    savings = [f.estimated_savings_s for f in findings]
    assert savings == sorted(savings, reverse=True)


def test_none_of_the_five_is_left_on_the_fixed_model():
    named = {f.rule for f in diagnose(_lab_report(fixed=True))}
    assert not (FIVE & named), FIVE & named
