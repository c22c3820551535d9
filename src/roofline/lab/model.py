"""The case-study model: the project's LLaMA, with two of its modules written the way much real code writes them.

``LlamaAttention`` (as many ports of the reference code write it) makes q, k and v contiguous in
(batch, heads, seq, head_dim) order before attention, so the attention output comes back in that order and has
to be copied again on its way into ``wo``. ``LlamaRMSNorm`` (as Hugging Face writes it) computes the norm in
float32 and casts back, whatever the model's dtype.
``configure(model, fixes)`` switches each layer between these and the plain modules of ``models/llama.py``;
the parameters stay the same objects, so every variant runs the same weights.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, fields, replace
from typing import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F

from roofline.models.llama import Attention, FeedForward, RMSNorm, Transformer, apply_rope, attention


@dataclass(frozen=True)
class Fixes:
    """Which fixes are applied; all False is the naive model, all True the fixed one."""

    kv_cache: bool = False
    contiguous_layout: bool = False
    sync_free: bool = False
    norms_in_model_dtype: bool = False
    batched: bool = False
    compiled: bool = False

    @classmethod
    def all(cls, compiled: bool = False) -> "Fixes":
        return cls(True, True, True, True, True, compiled)

    def with_(self, **changes: bool) -> "Fixes":
        return replace(self, **changes)

    def names(self) -> list[str]:
        return [f.name for f in fields(self) if getattr(self, f.name)]


FIX_TITLES = {
    "sync_free": "sync-free generation loop",
    "contiguous_layout": "contiguous attention layout",
    "norms_in_model_dtype": "norms in the model's dtype",
    "kv_cache": "static KV cache",
    "batched": "batched generation",
    "compiled": "torch.compile decode step",
}

# The order the staged (cumulative) benchmark applies them. Batching first: it is the fix that gives the GPU enough
# work per launch for the others to show at all (an eager batch-1 step is launch-bound), and it keeps the slow
# one-prompt-at-a-time configurations of the ablation (lab/ablation.py) to six. The layout copies and the norms'
# casts cost most while the whole prefix is recomputed, so they come before the KV cache.
STAGE_ORDER = ("batched", "sync_free", "contiguous_layout", "norms_in_model_dtype", "kv_cache", "compiled")


def stages(include_compile: bool = True) -> list[tuple[str, Fixes]]:
    """(title, fixes) for the naive model, then each fix added on top of the previous ones."""
    result = [("naive", Fixes())]
    current = Fixes()
    for name in STAGE_ORDER:
        if name == "compiled" and not include_compile:
            continue
        current = current.with_(**{name: True})
        result.append((f"+ {FIX_TITLES[name]}", current))
    return result


class LlamaAttention(Attention):
    def forward(self, x, cos, sin, mask=None, input_pos=None) -> torch.Tensor:
        batch, seq, _ = x.shape
        q, k, v = self.project_qkv(x)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        q = q.transpose(1, 2).contiguous()
        k = k.transpose(1, 2).contiguous()
        v = v.transpose(1, 2).contiguous()

        if self.kv_cache is not None and input_pos is not None:
            k, v = self.kv_cache.update(input_pos, k, v)
        y = attention(q, k, v, mask)
        y = y.transpose(1, 2)
        return self.wo(y.reshape(batch, seq, -1))


class LlamaRMSNorm(RMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        input_dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.weight.to(torch.float32) * x).to(input_dtype)


def _switch(module: nn.Module, cls: type[nn.Module]) -> None:
    """Give ``module`` the forward of ``cls``, a sibling class with the same state (so weights stay shared)."""
    if type(module) is not cls:
        module.__class__ = cls


def configure(model: Transformer, fixes: Fixes) -> Transformer:
    """Switch the model's attention and norm modules to the variant ``fixes`` asks for, in place."""
    attention_cls = Attention if fixes.contiguous_layout else LlamaAttention
    norm_cls = RMSNorm if fixes.norms_in_model_dtype else LlamaRMSNorm
    for layer in model.layers:
        _switch(layer.attention, attention_cls)
        _switch(layer.attention_norm, norm_cls)
        _switch(layer.ffn_norm, norm_cls)
    _switch(model.norm, norm_cls)
    return model


class FusedAttention(Attention):
    """Attention whose q, k and v come from one matmul over ``wqkv`` (their weights stacked)."""

    def project_qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        batch, seq, _ = x.shape
        kv_width = self.n_kv_heads * self.head_dim
        q, k, v = F.linear(x, self.wqkv).split([self.n_heads * self.head_dim, kv_width, kv_width], dim=-1)
        return (q.view(batch, seq, self.n_heads, self.head_dim), k.view(batch, seq, self.n_kv_heads, self.head_dim),
                v.view(batch, seq, self.n_kv_heads, self.head_dim))


class FusedFeedForward(FeedForward):
    """SwiGLU whose gate and up projections are one matmul over ``w13``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = F.linear(x, self.w13).chunk(2, dim=-1)
        return self.w2(F.silu(gate) * up)


@contextlib.contextmanager
def fused_projections(model: Transformer) -> Iterator[Transformer]:
    """Stack q/k/v and gate/up weights into one matrix each (gpt-fast's layout), for as long as the block runs.

    A batch-1 decode step is a chain of matrix-vector products, each a kernel; one product over the stacked
    matrix reads the same bytes in one kernel instead of three (two). The stacked copies are parameters, not
    buffers, so that CUDA graphs treat them as static inputs; count bytes before entering (they would be seen
    twice). On exit, also when the block raises, they are dropped and the plain modules restored.
    """
    saved: list[tuple[nn.Module, type[nn.Module]]] = []
    try:
        with torch.no_grad():
            for layer in model.layers:
                attn, ffn = layer.attention, layer.feed_forward
                stacked_qkv = torch.cat([attn.wq.weight, attn.wk.weight, attn.wv.weight])
                stacked_13 = torch.cat([ffn.w1.weight, ffn.w3.weight])
                attn.wqkv = nn.Parameter(stacked_qkv, requires_grad=False)
                ffn.w13 = nn.Parameter(stacked_13, requires_grad=False)
                saved += [(attn, type(attn)), (ffn, type(ffn))]
                attn.__class__, ffn.__class__ = FusedAttention, FusedFeedForward
        yield model
    finally:
        for module, cls in saved:
            module.__class__ = cls
            for name in ("wqkv", "w13"):
                module._parameters.pop(name, None)


def naive_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal attention as the textbook (and much hand-written code) writes it: the whole score matrix
    materialised, masked and softmaxed in the model's dtype, then multiplied by v. The case study's baseline
    for the SDPA backends (`roofline lab --study attention`); q, k, v (batch, heads, seq, head_dim), same heads."""
    seq = q.shape[-2]
    scores = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
    future = torch.ones(seq, k.shape[-2], dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
