"""Weight-only FP8 for the lab's LLaMA: e4m3 weights with one fp32 scale per output channel.

``quantize_e4m3(w)``: scale = max|row| / 448 (e4m3's largest finite value), w8 = round(w / scale) to e4m3, so every
row uses the format's whole range. ``fp8_weights(model)`` gives every Linear (the output head included; the
embedding table stays in the model's dtype: decode reads one row of it per token) its e4m3 copy and scales for as
long as the block runs; its forward is then ``kernels.gemv.fp8_linear``: the e4m3 values upcast exactly, summed in
fp32, each output row scaled. ``Fp8FastDecode`` is FastDecode (lab/decode_fast.py) reading those e4m3 matrices
in its Triton GEMV (one byte per weight, about half of fp16's bytes per token).
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch
import torch.nn as nn

from roofline.lab.decode_fast import BACKEND_TRITON, FastDecode
from roofline.lab.kernels.gemv import fp8_linear, gemv, gemv_torch
from roofline.models.llama import Transformer

E4M3 = torch.float8_e4m3fn
E4M3_MAX = 448.0


def quantize_e4m3(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(e4m3 weights, fp32 scale per row) of ``w`` [rows, K]; an all-zero row gets scale 1."""
    amax = w.detach().float().abs().amax(dim=1)
    scale = torch.where(amax > 0, amax / E4M3_MAX, torch.ones_like(amax))
    w8 = (w.detach().float() / scale[:, None]).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3)
    return w8.contiguous(), scale.contiguous()


def dequantize(w8: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return w8.float() * scale[:, None]


class Fp8Linear(nn.Linear):
    """nn.Linear whose product reads ``weight_fp8`` and ``weight_scale`` (set by fp8_weights), not ``weight``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = fp8_linear(x, self.weight_fp8, self.weight_scale)
        return y if self.bias is None else y + self.bias


@contextlib.contextmanager
def fp8_weights(model: Transformer) -> Iterator[Transformer]:
    """Every Linear of ``model`` computes with its e4m3 weights while the block runs; restored on exit (also when
    the block raises). The fp16 weights stay in place (the reference runs on them)."""
    switched: list[nn.Linear] = []
    try:
        with torch.no_grad():
            for module in model.modules():
                if type(module) is nn.Linear:
                    w8, scale = quantize_e4m3(module.weight)
                    module.register_buffer("weight_fp8", w8, persistent=False)
                    module.register_buffer("weight_scale", scale, persistent=False)
                    module.__class__ = Fp8Linear
                    switched.append(module)
        yield model
    finally:
        for module in switched:
            module.__class__ = nn.Linear
            for name in ("weight_fp8", "weight_scale"):
                module._buffers.pop(name, None)


def fp8_weight_bytes(model: Transformer) -> int:
    """Bytes one token's products read with FP8 weights: one per weight plus a 4-byte scale per output row
    (every Linear; the embedding table is not counted, decode reads one row of it)."""
    total = 0
    for module in model.modules():
        if isinstance(module, nn.Linear):
            rows, k = module.weight.shape
            total += rows * k + 4 * rows
    return total


class Fp8FastDecode(FastDecode):
    """FastDecode whose five products per layer and output head read e4m3 weights and fp32 row scales.

    Build it inside ``fp8_weights(model)``: it takes the e4m3 matrices and scales from the model's Linears
    (q/k/v and gate/up stacked, as FastDecode stacks the fp16 ones)."""

    def __init__(self, model: Transformer, **kwargs) -> None:
        if not all(isinstance(m, Fp8Linear) for m in model.modules() if isinstance(m, nn.Linear)):
            raise ValueError("Fp8FastDecode: build it inside fp8_weights(model)")
        super().__init__(model, **kwargs)
        self.scales: dict[int, torch.Tensor] = {}
        with torch.no_grad():
            for layer, block in zip(self.layers, model.layers):
                attn, ffn = block.attention, block.feed_forward
                for role, parts in (("qkv", (attn.wq, attn.wk, attn.wv)), ("w13", (ffn.w1, ffn.w3)),
                                    ("wo", (attn.wo,)), ("w2", (ffn.w2,))):
                    w8 = torch.cat([p.weight_fp8 for p in parts]) if len(parts) > 1 else parts[0].weight_fp8
                    scale = torch.cat([p.weight_scale for p in parts]) if len(parts) > 1 else parts[0].weight_scale
                    layer[role] = w8
                    self.scales[w8.data_ptr()] = scale
            self.head_weight = model.output.weight_fp8
            self.scales[self.head_weight.data_ptr()] = model.output.weight_scale

    def weight_bytes(self) -> int:
        per_layer = sum(self.layers[0][r].numel() + 4 * self.layers[0][r].shape[0] for r in ("qkv", "wo", "w13", "w2"))
        return len(self.layers) * per_layer + self.head_weight.numel() + 4 * self.head_weight.shape[0]

    def product(self, role: str, w, x, out, *, norm=None, residual=None, config=None):
        halves = 2 if role == "w13" else 1
        scale = self.scales[w.data_ptr()]
        if self.backend != BACKEND_TRITON:
            return gemv_torch(w, x, out, halves=halves, norm_weight=norm, eps=self.eps, residual=residual,
                              scale=scale)
        return gemv(w, x, out, config=config or self.tuning.configs[role], scratch=self.scratch, halves=halves,
                    norm_weight=norm, eps=self.eps, residual=residual, pdl=self.pdl, scale=scale)
