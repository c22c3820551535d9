import dataclasses

import pytest
import torch

from roofline.capture.syncs import SyncDetector
from roofline.lab.generate import generate, generate_ids
from roofline.lab.model import Fixes, LlamaAttention, LlamaRMSNorm, configure, stages
from roofline.models.llama import Attention, RMSNorm

EOS = 0
FIX_NAMES = [f.name for f in dataclasses.fields(Fixes) if f.name != "compiled"]


def _run(model, prompts, fixes, max_new=10):
    configure(model, fixes)
    return generate(model, prompts, max_new, EOS, fixes)


@pytest.mark.parametrize("fix", FIX_NAMES)
def test_each_fix_alone_gives_the_naive_greedy_tokens_exactly(tiny_model, prompts, fix):
    naive = _run(tiny_model, prompts, Fixes())
    assert _run(tiny_model, prompts, Fixes(**{fix: True})) == naive


def test_every_cumulative_stage_gives_the_naive_greedy_tokens(tiny_model, prompts):
    naive = _run(tiny_model, prompts, Fixes())
    assert all(len(row) == 10 for row in naive)
    for _, fixes in stages(include_compile=False)[1:]:
        assert _run(tiny_model, prompts, fixes) == naive


def test_generation_stops_after_end_of_text(tiny_model, prompts):
    configure(tiny_model, Fixes())
    first = generate(tiny_model, prompts[:1], 6, EOS, Fixes())[0]
    eos = first[2]
    for fixes in (Fixes(), Fixes.all()):
        configure(tiny_model, fixes)
        out = generate(tiny_model, prompts[:1], 6, eos, fixes)[0]
        assert out == first[: first.index(eos) + 1]


def test_configure_switches_modules_but_keeps_the_weights(tiny_model):
    weight = tiny_model.layers[0].attention.wq.weight
    configure(tiny_model, Fixes())
    assert type(tiny_model.layers[0].attention) is LlamaAttention
    assert type(tiny_model.norm) is LlamaRMSNorm
    configure(tiny_model, Fixes.all())
    assert type(tiny_model.layers[0].attention) is Attention and type(tiny_model.norm) is RMSNorm
    assert tiny_model.layers[0].attention.wq.weight is weight


def _syncs(model, prompts, fixes, max_new=8):
    configure(model, fixes)
    with SyncDetector(mode="silent") as detector:
        generate_ids(model, prompts, max_new, EOS, fixes)
    return detector.sites()


def test_fixed_generation_loop_has_no_syncs(tiny_model, prompts):
    assert _syncs(tiny_model, prompts, Fixes.all()) == []


def test_naive_generation_syncs_on_every_token(tiny_model, prompts):
    sites = _syncs(tiny_model, prompts, Fixes())
    per_token = [s for s in sites if s.kind == "item"]
    assert per_token and per_token[0].count == len(prompts) * 8
    assert per_token[0].location.endswith(tuple(f"generate.py:{n}" for n in range(1, 200)))
