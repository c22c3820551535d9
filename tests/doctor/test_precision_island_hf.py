"""The precision-island rule on real Hugging Face models in bf16 (tiny configs, CPU): the fp32 their code computes on
purpose (RMSNorm's variance, eager attention's softmax, the MoE router's softmax and topk, rotary angles) is no
island; an fp32 Linear left in the model is one."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

SIZES = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64)


def _report(model, cpu_ceilings):
    from roofline.api import RooflineAnalyzer

    model.config._attn_implementation = "eager"  # the softmax upcast with dtype=torch.float32
    ids = torch.randint(0, SIZES["vocab_size"], (2, 16), generator=torch.Generator().manual_seed(0))
    analyzer = RooflineAnalyzer("cpu", ceilings=cpu_ceilings, iters=1, warmup=1)
    return analyzer.analyze(model.eval(), {"input_ids": ids})


def _islands(report):
    return [f for f in report.findings if f.rule == "precision-island" and f.title.startswith("fp32 island")]


@pytest.fixture(scope="module")
def qwen2_moe(cpu_ceilings):
    torch.manual_seed(0)
    config = transformers.Qwen2MoeConfig(**SIZES, moe_intermediate_size=32, shared_expert_intermediate_size=64,
                                         num_experts=4, num_experts_per_tok=2)
    return _report(transformers.Qwen2MoeForCausalLM(config).to(torch.bfloat16), cpu_ceilings)


@pytest.fixture(scope="module")
def llama_with_an_fp32_mlp(cpu_ceilings):
    """A bf16 Llama whose first MLP was left in fp32 (its input upcast, its output cast back)."""
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**SIZES)).to(torch.bfloat16)
    mlp = model.model.layers[0].mlp.float()
    forward = mlp.forward
    mlp.forward = lambda x: forward(x.float()).to(torch.bfloat16)
    return _report(model, cpu_ceilings)


def test_qwen2_moe_routers_softmax_and_topk_in_fp32_are_no_island(qwen2_moe):
    assert _islands(qwen2_moe) == [], [f.title for f in _islands(qwen2_moe)]
    (note,) = [f for f in qwen2_moe.findings if f.rule == "precision-island"]
    assert note.title.startswith("fp32 by design in a bfloat16 model, not an island to remove")
    assert {"_softmax", "topk", "mean", "cos"} <= set(note.evidence["fp32_by_design_kinds"])
    assert "model.layers.*.mlp.gate" in note.evidence["places"]
    assert note.estimated_savings_s == 0.0 and note.severity == "info"
    rank = qwen2_moe.findings.index(note)
    assert all(f.estimated_savings_s == 0.0 for f in qwen2_moe.findings[rank:])  # ranked below every saving


def test_an_fp32_linear_in_a_bf16_llama_is_an_island_with_savings(llama_with_an_fp32_mlp):
    (island,) = _islands(llama_with_an_fp32_mlp)
    assert "mm" in island.evidence["fp32_op_kinds"] and "model.layers.*.mlp" in island.title
    assert island.evidence["fp32_ops"] >= 3  # gate, up and down projections
    assert island.estimated_savings_s > 0


def test_a_bf16_llamas_norms_attention_softmax_and_rotary_angles_are_kept_by_design(llama_with_an_fp32_mlp):
    """Only the fp32 MLP is an island: the other layer's norms, every softmax and the rotary cos/sin are not."""
    from roofline.doctor.rules.precision_island import by_design, find_islands

    islands = find_islands(llama_with_an_fp32_mlp, "bfloat16")
    kept = {island[0][0].module for island in islands if all(by_design(island))}
    assert {"model.layers.1.input_layernorm", "model.layers.1.self_attn", "model.rotary_emb", "model.norm"} <= kept
    flagged = {op.module for island in islands if not all(by_design(island)) for op, role in island if role == "fp32"}
    assert flagged and all(m.startswith("model.layers.0.mlp") for m in flagged), flagged
