"""Every aten op that real models run (forward, backward, optimizer step) has a formula: zero unmodeled ops."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from count_recording import OpCollector, unmodeled


pytestmark = pytest.mark.usefixtures("one_thread")


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(variance + self.eps)).type_as(x) * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class TinyLlama(nn.Module):
    """A throwaway LLaMA: embedding, RMSNorm, RoPE, grouped-query attention via SDPA, SwiGLU, LM head."""

    def __init__(self, vocab: int = 64, dim: int = 32, heads: int = 4, kv_heads: int = 2, ffn: int = 48,
                 layers: int = 2) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            block = nn.ModuleDict({
                "attn_norm": RMSNorm(dim), "q": nn.Linear(dim, dim, bias=False),
                "k": nn.Linear(dim, kv_heads * self.head_dim, bias=False),
                "v": nn.Linear(dim, kv_heads * self.head_dim, bias=False), "o": nn.Linear(dim, dim, bias=False),
                "ffn_norm": RMSNorm(dim), "gate": nn.Linear(dim, ffn, bias=False),
                "up": nn.Linear(dim, ffn, bias=False), "down": nn.Linear(ffn, dim, bias=False),
            })
            self.blocks.append(block)
        self.norm = RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def rope(self, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        freqs = torch.outer(torch.arange(seq).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos()[None, None], emb.sin()[None, None]

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        batch, seq = tokens.shape
        cos, sin = self.rope(seq)
        x = self.embed(tokens)
        for block in self.blocks:
            h = block["attn_norm"](x)
            q = block["q"](h).view(batch, seq, self.heads, self.head_dim).transpose(1, 2)
            k = block["k"](h).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
            v = block["v"](h).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            repeat = self.heads // self.kv_heads
            k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
            attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + block["o"](attn.transpose(1, 2).reshape(batch, seq, -1))
            h = block["ffn_norm"](x)
            x = x + block["down"](F.silu(block["gate"](h)) * block["up"](h))
        return self.head(self.norm(x))


def _llama_step(model: nn.Module, tokens: torch.Tensor) -> OpCollector:
    with OpCollector() as collector:
        logits = model(tokens)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
        loss.backward()
    return collector


def test_tiny_llama_forward_and_backward_fully_modeled():
    torch.manual_seed(0)
    model = TinyLlama()
    collector = _llama_step(model, torch.randint(0, 64, (2, 12)))
    names = {op.name for op in collector.ops}
    assert {"aten::embedding_dense_backward", "aten::_log_softmax_backward_data", "aten::mm"} <= names
    assert any("attention" in n for n in names), names
    assert unmodeled(collector.ops) == {}


def test_tiny_llama_with_native_gqa_and_adamw_foreach():
    torch.manual_seed(0)
    model = TinyLlama()
    tokens = torch.randint(0, 64, (1, 8))
    with OpCollector() as collector:
        q, k = torch.randn(1, 4, 8, 8, requires_grad=True), torch.randn(1, 2, 8, 8, requires_grad=True)
        F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True).sum().backward()
    assert unmodeled(collector.ops) == {}
    _llama_step(model, tokens)
    optimizer = torch.optim.AdamW(model.parameters(), foreach=True)
    with OpCollector() as collector:
        optimizer.step()
        optimizer.step()
    names = {op.name for op in collector.ops}
    assert {"aten::_foreach_lerp_", "aten::_foreach_addcdiv_"} & names
    assert unmodeled(collector.ops) == {}


def test_every_op_a_model_runs_reports_positive_work_where_it_must():
    torch.manual_seed(0)
    collector = _llama_step(TinyLlama(layers=1), torch.randint(0, 64, (1, 8)))
    for op in collector.ops:
        cost = op.cost()
        if op.name in ("aten::mm", "aten::bmm", "aten::addmm"):
            assert cost.flops > 0 and cost.bytes > 0
        if cost.is_view:
            assert cost.bytes == 0 and cost.flops == 0
        assert math.isfinite(cost.flops) and math.isfinite(cost.bytes)


@pytest.mark.slow
def test_builtin_llama_tiny_workload_fully_modeled():
    models = pytest.importorskip("roofline.models")
    for backward in (False, True):
        workload = models.get_workload("llama-tiny", batch=1, seq=16, backward=backward)
        with OpCollector() as collector:
            out = workload.model(*workload.inputs)
            if backward:
                workload.loss_fn(out).backward()
        assert unmodeled(collector.ops) == {}


@pytest.mark.slow
def test_resnet50_forward_and_backward_fully_modeled():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.resnet50()
    with OpCollector() as collector:
        out = model(torch.randn(2, 3, 64, 64))
        F.cross_entropy(out, torch.tensor([1, 2])).backward()
    names = {op.name for op in collector.ops}
    assert {"aten::convolution", "aten::convolution_backward", "aten::threshold_backward"} <= names
    assert unmodeled(collector.ops) == {}
    with OpCollector() as collector:
        model.eval()
        with torch.no_grad():
            model(torch.randn(1, 3, 32, 32))
    assert unmodeled(collector.ops) == {}


@pytest.mark.slow
def test_bert_forward_fully_modeled():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=64)
    model = transformers.BertModel(config).eval()
    ids = torch.randint(0, 100, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 10:] = 0
    with OpCollector() as collector:
        model(ids, attention_mask=mask)
    assert len(collector.ops) > 20
    assert unmodeled(collector.ops) == {}


def test_layer_norm_and_gelu_mlp_backward_fully_modeled():
    torch.manual_seed(0)
    model = nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 32), nn.GELU(), nn.Dropout(0.1), nn.Linear(32, 4),
                          nn.Softmax(dim=-1))
    with OpCollector() as collector:
        model(torch.randn(3, 16)).sum().backward()
    names = {op.name for op in collector.ops}
    assert {"aten::native_layer_norm_backward", "aten::_softmax_backward_data", "aten::gelu_backward"} <= names
    assert unmodeled(collector.ops) == {}
