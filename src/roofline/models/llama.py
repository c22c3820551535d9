"""A readable LLaMA, in the manner of gpt-fast and nanoGPT: RMSNorm, RoPE, grouped-query attention, SwiGLU.

Random weights, no downloads. ``Transformer(tokens)`` runs a plain causal forward over the whole sequence
(what `roofline analyze` profiles). After ``setup_caches(max_batch, max_seq)`` a call with ``input_pos``
uses a static, preallocated KV cache, so a decode step has the same shapes at every position: that is what
lets ``torch.compile(mode="reduce-overhead")`` capture it as one CUDA graph.

Module paths read like the reference implementation: ``layers.3.attention.wq``, ``layers.3.feed_forward.w1``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class LlamaConfig:
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    ffn_dim: int
    vocab_size: int
    max_seq_len: int = 2048
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads


CONFIGS: dict[str, LlamaConfig] = {
    "llama-tiny": LlamaConfig(dim=512, n_layers=8, n_heads=8, n_kv_heads=8, ffn_dim=1376, vocab_size=32000),
    # TinyLlama-1.1B's shape.
    "llama-1b": LlamaConfig(dim=2048, n_layers=22, n_heads=32, n_kv_heads=4, ffn_dim=5632, vocab_size=32000),
    # Llama-3-8B's shape.
    "llama-8b": LlamaConfig(
        dim=4096, n_layers=32, n_heads=32, n_kv_heads=8, ffn_dim=14336, vocab_size=128256, rope_theta=500000.0
    ),
}

# scaled_dot_product_attention learned enable_gqa in torch 2.5; before that, K and V heads are repeated.
_SDPA_HAS_GQA = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 5)


class KVCache(nn.Module):
    """Keys and values of every position so far, preallocated as (batch, kv_heads, max_seq, head_dim)."""

    def __init__(self, max_batch: int, max_seq: int, n_kv_heads: int, head_dim: int, dtype: torch.dtype):
        super().__init__()
        shape = (max_batch, n_kv_heads, max_seq, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=dtype), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape, dtype=dtype), persistent=False)

    def update(self, input_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        batch = k.shape[0]
        self.k_cache[:batch, :, input_pos] = k
        self.v_cache[:batch, :, input_pos] = v
        return self.k_cache[:batch], self.v_cache[:batch]


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(config: LlamaConfig, max_seq: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of every (position, frequency) pair, (max_seq, head_dim // 2), computed in float32."""
    half = config.head_dim // 2
    freqs = 1.0 / (config.rope_theta ** (torch.arange(0, half, dtype=torch.float32) / half))
    angles = torch.outer(torch.arange(max_seq, dtype=torch.float32), freqs)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (first half, second half) of each head's features; x is (batch, seq, heads, head_dim),
    cos and sin are (seq, head_dim // 2) or, for rows at different positions, (batch, seq, head_dim // 2)."""
    x1, x2 = x.chunk(2, dim=-1)
    cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Attention(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.head_dim
        self.wq = nn.Linear(config.dim, config.n_heads * config.head_dim, bias=False)
        self.wk = nn.Linear(config.dim, config.n_kv_heads * config.head_dim, bias=False)
        self.wv = nn.Linear(config.dim, config.n_kv_heads * config.head_dim, bias=False)
        self.wo = nn.Linear(config.n_heads * config.head_dim, config.dim, bias=False)
        self.kv_cache: KVCache | None = None

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: torch.Tensor | None = None,
        input_pos: torch.Tensor | None = None,
    ) -> torch.Tensor:
        batch, seq, _ = x.shape
        q, k, v = self.project_qkv(x)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))

        if self.kv_cache is not None and input_pos is not None:
            k, v = self.kv_cache.update(input_pos, k, v)
        y = attention(q, k, v, mask)
        y = y.transpose(1, 2).contiguous().view(batch, seq, self.n_heads * self.head_dim)
        return self.wo(y)

    def project_qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q (batch, seq, heads, head_dim), k and v (batch, seq, kv_heads, head_dim)."""
        batch, seq, _ = x.shape
        q = self.wq(x).view(batch, seq, self.n_heads, self.head_dim)
        k = self.wk(x).view(batch, seq, self.n_kv_heads, self.head_dim)
        v = self.wv(x).view(batch, seq, self.n_kv_heads, self.head_dim)
        return q, k, v


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Causal attention when ``mask`` is None, else attention under the given boolean mask (True = attend)."""
    n_rep = q.shape[1] // k.shape[1]
    if n_rep > 1 and not _SDPA_HAS_GQA:
        k, v = k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)
    gqa = {"enable_gqa": True} if n_rep > 1 and _SDPA_HAS_GQA else {}
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **gqa)


class FeedForward(nn.Module):
    """SwiGLU: w2(silu(w1 x) * w3 x)."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.w1 = nn.Linear(config.dim, config.ffn_dim, bias=False)
        self.w3 = nn.Linear(config.dim, config.ffn_dim, bias=False)
        self.w2 = nn.Linear(config.ffn_dim, config.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.attention_norm = RMSNorm(config.dim, config.norm_eps)
        self.attention = Attention(config)
        self.ffn_norm = RMSNorm(config.dim, config.norm_eps)
        self.feed_forward = FeedForward(config)

    def forward(self, x, cos, sin, mask=None, input_pos=None) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x), cos, sin, mask, input_pos)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.config = config
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.layers = nn.ModuleList(TransformerBlock(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.dim, config.norm_eps)
        self.output = nn.Linear(config.dim, config.vocab_size, bias=False)
        cos, sin = rope_tables(config, config.max_seq_len)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.register_buffer("causal_mask", torch.zeros(0, 0, dtype=torch.bool), persistent=False)
        self.max_batch = self.max_seq = 0

    def setup_caches(self, max_batch: int, max_seq: int) -> None:
        """Allocate a KV cache per layer (model dtype, model device) and the causal mask over its slots."""
        dtype, device = self.output.weight.dtype, self.output.weight.device
        self.max_batch, self.max_seq = max_batch, max_seq
        shape = (max_batch, max_seq, self.config.n_kv_heads, self.config.head_dim)
        with torch.device(device):
            for layer in self.layers:
                layer.attention.kv_cache = KVCache(*shape, dtype)
        self.causal_mask = torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool, device=device))

    def forward(
        self,
        tokens: torch.Tensor,
        input_pos: torch.Tensor | None = None,
        *,
        positions: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits (batch, seq, vocab) for token ids (batch, seq).

        ``input_pos`` (seq,): the cache slots these tokens fill, which selects the cached path. For a left-padded
        batch, ``positions`` (batch, seq) gives each token's RoPE position and ``mask`` (batch, 1, seq, keys) what
        each may attend to; by default positions are the slots and attention is causal.
        """
        if positions is None:
            positions = input_pos if input_pos is not None else torch.arange(tokens.shape[1], device=tokens.device)
        if mask is None and input_pos is not None:
            mask = self.causal_mask[None, None, input_pos]
        cos, sin = self.rope_cos[positions], self.rope_sin[positions]
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x, cos, sin, mask, input_pos)
        return self.output(self.norm(x))


@contextlib.contextmanager
def _default_dtype(dtype: torch.dtype) -> Iterator[None]:
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def build_llama(
    config: LlamaConfig, *, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu", seed: int = 0
) -> Transformer:
    """A Transformer with random weights made directly on ``device`` in ``dtype`` (8B in fp16 is never fp32 first).

    Weights are drawn with std 0.02 (GPT-2 / LLaMA practice) so activations stay in fp16 range through the stack.
    """
    torch.manual_seed(seed)
    with torch.device(device), _default_dtype(dtype), torch.no_grad():
        model = Transformer(config)
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                continue
            param.normal_(0.0, 0.02)
    model.rope_cos = model.rope_cos.to(dtype)
    model.rope_sin = model.rope_sin.to(dtype)
    return model.eval()
