"""The doctor, given only the profiled Report of a generation run, names the five problems of the naive loop."""

import pytest
import torch

from roofline.lab.diagnosis import diagnose, profile_generation
from roofline.lab.model import Fixes
from roofline.models.llama import build_llama

FIVE = {"host-device-sync", "recomputation", "layout-copy", "precision-island", "unbatched-loop"}
EOS = 0


PROMPTS = [[5, 17, 33, 2, 9, 41, 7], [8, 3, 99, 4]]


@pytest.fixture(scope="module")
def half_model(tiny_config):
    return build_llama(tiny_config, dtype=torch.bfloat16)


@pytest.fixture(scope="module")
def naive_findings(half_model, cpu_ceilings):
    return diagnose(profile_generation(half_model, PROMPTS, 6, EOS, Fixes(), cpu_ceilings)).findings


@pytest.mark.slow
def test_doctor_names_all_five_problems_of_the_naive_loop(naive_findings):
    assert FIVE <= {f.rule for f in naive_findings}


@pytest.mark.slow
def test_findings_point_at_the_lab_source_lines(naive_findings):
    sync = next(f for f in naive_findings if f.rule == "host-device-sync" and "item" in f.title)
    assert any("lab/generate.py:" in loc for loc in sync.locations)
    savings = [f.estimated_savings_s for f in naive_findings]
    assert savings == sorted(savings, reverse=True)


@pytest.mark.slow
def test_doctor_finds_none_of_the_five_in_the_fixed_loop(half_model, cpu_ceilings):
    report = diagnose(profile_generation(half_model, PROMPTS, 6, EOS, Fixes.all(), cpu_ceilings))
    assert not FIVE & {f.rule for f in report.findings}
    assert sum(s.count for s in report.syncs) == 0


@pytest.mark.slow
def test_op_findings_point_at_the_model_code(naive_findings):
    layout = next(f for f in naive_findings if f.rule == "layout-copy")
    assert any("lab/model.py:" in loc for loc in layout.locations), layout.locations
    island = next(f for f in naive_findings if f.rule == "precision-island")
    assert any("lab/model.py:" in loc for loc in island.locations), island.locations
