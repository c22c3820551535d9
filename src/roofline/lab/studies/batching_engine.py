"""The serving engine under both schedulers: the lab's LLaMA over a slot KV cache, one forward pass per step.

The cache holds ``slots`` rows of ``max_len`` positions per layer, allocated once: the memory budget both
schedulers share. A step names the rows it runs as a contiguous range ``[first_row, first_row + batch)``, so the
keys attention reads are a view of the cache (no gather), and gives each row its own write positions, RoPE
positions and visible keys. That one primitive serves a left-padded batch that starts together (static batching)
and rows at different lengths that joined at different steps (continuous batching).

Nothing in ``models/llama.py`` changes: the cached path of ``Transformer.forward`` hands ``input_pos`` through to
``kv_cache.update`` untouched, so a ``Placement`` goes there in its place, and ``SlotKVCache`` (the same buffers as
``KVCache``) reads it. The engine runs the fixed model (``configure(model, Fixes.all())``); the model's own caches
and module classes are put back when the engine closes, also when a step raises.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from roofline.lab.generate import padded_causal_mask, padded_positions
from roofline.lab.model import Fixes, configure
from roofline.models.llama import KVCache, Transformer


@dataclass(frozen=True)
class Placement:
    """Where a step's tokens go: rows ``first_row..first_row+batch-1``, write slots (batch, seq); keys read:
    slots ``0..kv_len-1``."""

    first_row: int
    write: torch.Tensor
    kv_len: int


class SlotKVCache(KVCache):
    """A KVCache whose rows are written at per-row positions (``Placement``) and read as a contiguous row range."""

    def update(self, input_pos: Placement, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        place = input_pos
        batch = k.shape[0]
        rows = torch.arange(place.first_row, place.first_row + batch, device=k.device)[:, None]
        # Index (rows, :, write) puts the (batch, seq) index dims first: (batch, seq, kv_heads, head_dim).
        self.k_cache[rows, :, place.write] = k.transpose(1, 2)
        self.v_cache[rows, :, place.write] = v.transpose(1, 2)
        span = slice(place.first_row, place.first_row + batch)
        return self.k_cache[span, :, : place.kv_len], self.v_cache[span, :, : place.kv_len]


class SlotEngine:
    """``prefill`` and ``decode`` forward passes of ``model`` over a slot KV cache of ``slots`` x ``max_len``.

    Use as a context manager (or call ``close``): the model's own KV caches are restored on exit."""

    def __init__(self, model: Transformer, slots: int, max_len: int) -> None:
        if slots < 1 or max_len < 2:
            raise ValueError(f"a slot cache needs slots >= 1 and max_len >= 2, got {slots} x {max_len}")
        if max_len > model.rope_cos.shape[0]:
            raise ValueError(f"max_len {max_len} exceeds the model's RoPE table ({model.rope_cos.shape[0]})")
        self.model, self.slots, self.max_len = model, slots, max_len
        weight = model.output.weight
        self.device, self.dtype = weight.device, weight.dtype
        cfg = model.config
        self._classes = [(module, type(module)) for module in model.modules()]
        configure(model, Fixes.all())
        self._saved = [layer.attention.kv_cache for layer in model.layers]
        with torch.device(self.device):
            for layer in model.layers:
                layer.attention.kv_cache = SlotKVCache(slots, max_len, cfg.n_kv_heads, cfg.head_dim, self.dtype)

    def cache_bytes(self) -> int:
        """Bytes of keys and values held for every slot, all layers: the memory budget."""
        return sum(2 * layer.attention.kv_cache.k_cache.numel() * layer.attention.kv_cache.k_cache.element_size()
                   for layer in self.model.layers)

    def close(self) -> None:
        for layer, cache in zip(self.model.layers, self._saved):
            layer.attention.kv_cache = cache
        for module, cls in self._classes:
            module.__class__ = cls

    def __enter__(self) -> "SlotEngine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _tensor(self, values) -> torch.Tensor:
        return torch.as_tensor(values, dtype=torch.long).to(self.device)

    @torch.no_grad()
    def prefill(self, first_row: int, prompts: list[list[int]], pad_id: int) -> torch.Tensor:
        """Prompts left-padded to the longest, written to rows ``first_row..``, slots 0..longest-1: the next token
        of each (batch,), on the device. Padding queries only see padding, real ones never see it."""
        longest = max(len(p) for p in prompts)
        self._check_rows(first_row, len(prompts), longest)
        tokens = self._tensor([[pad_id] * (longest - len(p)) + list(p) for p in prompts])
        pad = self._tensor([longest - len(p) for p in prompts])
        slots = torch.arange(longest, device=self.device)
        mask = padded_causal_mask(slots, pad, longest)
        place = Placement(first_row, slots.expand(len(prompts), longest), longest)
        logits = self.model(tokens, place, positions=padded_positions(slots, pad), mask=mask)
        return logits[:, -1].argmax(dim=-1)

    @torch.no_grad()
    def decode(self, tokens: list[int], write: list[int], first_key: list[int]) -> torch.Tensor:
        """One token for rows 0..len(tokens)-1: row i's token goes to slot ``write[i]`` at RoPE position
        ``write[i] - first_key[i]`` and attends to slots ``first_key[i]..write[i]``. The next token of each row."""
        batch = len(tokens)
        kv_len = max(write) + 1
        self._check_rows(0, batch, kv_len)
        write_t, first_t = self._tensor(write), self._tensor(first_key)
        keys = torch.arange(kv_len, device=self.device)
        visible = (keys[None, :] >= first_t[:, None]) & (keys[None, :] <= write_t[:, None])
        place = Placement(0, write_t[:, None], kv_len)
        logits = self.model(self._tensor(tokens)[:, None], place, positions=(write_t - first_t)[:, None],
                            mask=visible[:, None, None, :])
        return logits[:, -1].argmax(dim=-1)

    def _check_rows(self, first_row: int, batch: int, length: int) -> None:
        if first_row < 0 or first_row + batch > self.slots or length > self.max_len:
            raise ValueError(f"rows {first_row}..{first_row + batch - 1} x {length} positions do not fit the slot "
                             f"cache ({self.slots} x {self.max_len})")
