"""A batch-1 decode step of the lab's fixed model written as five hand-written kernels per layer.

Per layer: RMSNorm + stacked q/k/v product (gemv), RoPE + KV-cache write + attention (decode_attention), wo
product + residual add, RMSNorm + stacked gate/up product + SiLU*mul, w2 product + residual add; then the
final norm + output head and an argmax (a kernel of its own: torch's took 12 us for 32k logits). Every buffer is allocated once and the position is read on the device,
so ``GraphedDecoder`` captures the whole step (lab/graphed.py) and no host work or eager op runs between
kernels. Each product's tile (rows per program, K per iteration, split-K, warps) is chosen once per weight shape
by ``tune`` on the device, outside any timed region: every candidate is timed over all layers' weights of that
shape (more bytes than the L2 holds, so no candidate is timed from cache), replayed as a CUDA graph.

Where Triton cannot run (no CUDA and no TRITON_INTERPRET=1) the same step runs the kernels' torch twins, and
``backend`` says so: the figures of such a run are not the kernels'.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import torch

from roofline.lab.kernels import interpreting, triton_available
from roofline.lab.kernels.argmax import argmax
from roofline.lab.kernels.attention import (attention_torch, decode_attention, live_split_block, scratch_floats,
                                            splits_for)
from roofline.lab.kernels.gemv import GemvConfig, Scratch, candidate_configs, gemv, gemv_torch, prefetch_configs
from roofline.lab.kernels.l2_prefetch import CHUNK_BYTES, CHUNK_CANDIDATES, next_weights_ranges
from roofline.lab.kernels.persistent_mlp import PersistentConfig, PersistentState, persistent_mlp
from roofline.lab.kernels.persistent_mlp import candidate_configs as persistent_candidates
from roofline.models.llama import Transformer

ROLES = ("qkv", "wo", "w13", "w2", "head")
BACKEND_TRITON = "triton"
BACKEND_TORCH = "torch twins (Triton unavailable here: not the kernels' figures)"
T_PER_SPLITS = (16, 32, 64)  # cache slots per attention program: the tuning's candidates
# Version 2's (triton_attention_v2): wider slices too, so that one program holds a short context's every slot
T_PER_SPLITS_V2 = (32, 64, 128, 256, 512)
V2_SIXTEEN_WARPS = (256, 512)  # slices also tried at 16 warps (a 256-slot block: 74 registers there, 146-160 at 8)


@dataclass
class Tuning:
    """The tile chosen for each product, and every candidate's time (us per product) that chose it."""

    configs: dict[str, GemvConfig]
    candidates_us: dict[str, list[tuple[dict, float]]] = field(default_factory=dict)
    seconds: float = 0.0
    t_per_split: int = 32
    attention_position: int | None = None  # the cache slot the attention candidates were timed at
    attention_warps: int | None = None  # attention version 2's warps (None: attention.v2_warps' default)
    attention_split_block: int | None = None  # version 2's merge block (None: launch_constants' default)
    attention_early_launch: bool = False  # version 2 under PDL: the next kernel let start when attention starts
    # version 2: bytes of the layer's wo then w13 (l2_prefetch.next_weights_ranges) its extra programs ask the L2 for
    attention_l2_prefetch: int = 0
    attention_l2_chunk: int = CHUNK_BYTES  # bytes a request of that prefetch
    # wo, the norm, w13 and w2 as one persistent kernel a layer (kernels/persistent_mlp.py); None: three gemv kernels
    persistent: PersistentConfig | None = None

    def as_dict(self) -> dict:
        return {"configs": {r: c.as_dict() for r, c in self.configs.items()}, "attention_t_per_split": self.t_per_split,
                "attention_position": self.attention_position, "attention_warps": self.attention_warps,
                "attention_split_block": self.attention_split_block,
                "attention_early_launch": self.attention_early_launch,
                "attention_l2_prefetch": self.attention_l2_prefetch, "attention_l2_chunk": self.attention_l2_chunk,
                "persistent": self.persistent.as_dict() if self.persistent is not None else None,
                "candidates_us": {r: [{**c, "us": us} for c, us in rows] for r, rows in self.candidates_us.items()},
                "seconds": self.seconds}


def default_config(rows: int, k: int, sm_count: int = 132) -> GemvConfig:
    """A tile without tuning: 8 rows per program, split-K until about two programs per multiprocessor."""
    blocks = -(-rows // 8)
    split = 1
    while blocks * split < 2 * sm_count and k // (2 * split) >= 512:
        split *= 2
    return GemvConfig(8, 512 if k >= 512 else 256, split, 4)


class FastDecode:
    """``step(model, token, input_pos, pad)`` -> next token (1,), a DecodeStep for batch 1 without padding.

    The stacked q/k/v and gate/up weights are taken from the model when ``fused_projections`` is active (shared
    with the tuned Inductor step) and concatenated once here otherwise. ``pdl``: every Triton kernel launched
    with programmatic dependent launch (Hopper and later), so each starts reading its weights while the kernel
    before it finishes; it waits for that kernel before reading anything the step writes.
    ``triton_attention=False``: attention as the torch twin's eager ops (a fallback, many more kernels).
    ``attention_version=2``: triton_attention_v2's kernel (a lone live slice skips the merge phase), tuned over
    T_PER_SPLITS_V2.
    """

    def __init__(self, model: Transformer, tuning: Tuning | None = None, backend: str | None = None,
                 pdl: bool = False, triton_attention: bool = True, attention_version: int = 1) -> None:
        if model.max_batch < 1 or model.layers[0].attention.kv_cache is None:
            raise ValueError("FastDecode needs the model's KV cache (model.setup_caches)")
        self.model = model
        weight = model.output.weight
        self.device, self.dtype = weight.device, weight.dtype
        if backend is None:
            usable = triton_available() and (self.device.type == "cuda" or interpreting())
            backend = BACKEND_TRITON if usable else BACKEND_TORCH
        self.backend = backend
        self.pdl = pdl and backend == BACKEND_TRITON
        self.triton_attention = triton_attention and backend == BACKEND_TRITON
        self.attention_version = attention_version
        cfg = model.config
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        self.eps = cfg.norm_eps
        with torch.no_grad():
            self.layers = [self._weights(layer) for layer in model.layers]
        self.head_weight = model.output.weight.detach()
        sm_count = torch.cuda.get_device_properties(self.device).multi_processor_count if self.device.type == "cuda" else 132
        self.tuning = tuning or Tuning({role: default_config(*self.shape(role), sm_count) for role in ROLES})
        self.h = torch.zeros(cfg.dim, dtype=self.dtype, device=self.device)
        self.qkv = torch.zeros((cfg.n_heads + 2 * cfg.n_kv_heads) * cfg.head_dim, dtype=self.dtype, device=self.device)
        self.o = torch.zeros(cfg.n_heads * cfg.head_dim, dtype=self.dtype, device=self.device)
        self.m = torch.zeros(cfg.ffn_dim, dtype=self.dtype, device=self.device)
        self.logits = torch.zeros(cfg.vocab_size, dtype=self.dtype, device=self.device)
        self.token = torch.zeros(1, dtype=torch.long, device=self.device)
        max_rows = max(self.shape(r)[0] for r in ROLES)
        splits = splits_for(model.max_seq, min(T_PER_SPLITS + T_PER_SPLITS_V2))
        floats = max(8 * max_rows, scratch_floats(cfg.n_kv_heads, cfg.n_heads, cfg.head_dim, splits))
        self.scratch = Scratch(self.device, floats, max(1 << 14, max_rows))
        self.persistent_state = PersistentState(self.device, len(self.layers))

    def _weights(self, layer) -> dict[str, torch.Tensor]:
        attn, ffn = layer.attention, layer.feed_forward
        wqkv = getattr(attn, "wqkv", None)
        w13 = getattr(ffn, "w13", None)
        return {
            "qkv": (wqkv if wqkv is not None else torch.cat([attn.wq.weight, attn.wk.weight, attn.wv.weight])).detach(),
            "w13": (w13 if w13 is not None else torch.cat([ffn.w1.weight, ffn.w3.weight])).detach(),
            "wo": attn.wo.weight.detach(), "w2": ffn.w2.weight.detach(),
            "attention_norm": layer.attention_norm.weight.detach(), "ffn_norm": layer.ffn_norm.weight.detach(),
            "cache": attn.kv_cache,
        }

    def shape(self, role: str) -> tuple[int, int]:
        """(output rows, K) of a role's product (w13: the SiLU*mul output's rows)."""
        if role == "head":
            return tuple(self.head_weight.shape)
        rows, k = self.layers[0][role].shape
        return (rows // 2 if role == "w13" else rows), k

    def weight_bytes(self) -> int:
        """Bytes of every matrix the products read per token."""
        per_layer = sum(self.layers[0][r].numel() for r in ("qkv", "wo", "w13", "w2"))
        return self.model.output.weight.element_size() * (len(self.layers) * per_layer + self.model.output.weight.numel())

    def product(self, role: str, w, x, out, *, norm=None, residual=None, config: GemvConfig | None = None):
        halves = 2 if role == "w13" else 1
        if self.backend != BACKEND_TRITON:
            return gemv_torch(w, x, out, halves=halves, norm_weight=norm, eps=self.eps, residual=residual)
        return gemv(w, x, out, config=config or self.tuning.configs[role], scratch=self.scratch, halves=halves,
                    norm_weight=norm, eps=self.eps, residual=residual, pdl=self.pdl)

    def attend(self, layer: dict, pos: torch.Tensor, t_per_split: int | None = None,
               num_warps: int | None = None, split_block: int | None = None) -> None:
        """``t_per_split``, ``num_warps`` and ``split_block`` (the last two version 2 only): a tuning candidate's,
        else the tuning's."""
        cache = layer["cache"]
        args = (self.qkv, cache.k_cache, cache.v_cache, self.model.rope_cos, self.model.rope_sin, pos, self.o)
        if not self.triton_attention:
            attention_torch(*args, n_heads=self.n_heads, n_kv_heads=self.n_kv_heads)
        else:
            decode_attention(*args, n_heads=self.n_heads, n_kv_heads=self.n_kv_heads, scratch=self.scratch,
                             t_per_split=t_per_split or self.tuning.t_per_split, pdl=self.pdl,
                             version=self.attention_version,
                             num_warps=None if self.attention_version == 1 else
                             (num_warps if t_per_split else self.tuning.attention_warps),
                             split_block=None if self.attention_version == 1 else
                             (split_block if t_per_split else self.tuning.attention_split_block),
                             early_launch=(self.pdl and self.attention_version == 2 and not t_per_split
                                           and self.tuning.attention_early_launch),
                             l2_prefetch=(next_weights_ranges(layer["wo"], layer["w13"],
                                                              self.tuning.attention_l2_prefetch)
                                          if self.attention_version == 2 and not t_per_split else ()),
                             l2_chunk=self.tuning.attention_l2_chunk)

    def mlp(self, index: int, layer: dict) -> None:
        """wo + residual, RMSNorm + w13 + SiLU*mul, w2 + residual: the persistent kernel where the tuning chose one
        and Triton runs, else the three products. Layer ``index`` has its own barrier counter. Off a GPU (Triton's
        interpreter) the kernel runs its phases as three launches, no barrier."""
        config = self.tuning.persistent
        if config is None or self.backend != BACKEND_TRITON or layer["wo"].dtype != self.dtype:  # e4m3: gemv's
            self.product("wo", layer["wo"], self.o, self.h, residual=self.h)
            self.product("w13", layer["w13"], self.h, self.m, norm=layer["ffn_norm"])
            self.product("w2", layer["w2"], self.m, self.h, residual=self.h)
            return
        persistent_mlp(layer["wo"], layer["w13"], layer["w2"], self.o, self.h, self.m, layer["ffn_norm"],
                       eps=self.eps, config=config, state=self.persistent_state, slot=index, pdl=self.pdl,
                       phased=self.device.type != "cuda")

    @torch.no_grad()
    def step(self, model: Transformer, token: torch.Tensor, input_pos: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        torch.index_select(model.tok_embeddings.weight, 0, token.view(-1), out=self.h.view(1, -1))
        for index, layer in enumerate(self.layers):
            self.product("qkv", layer["qkv"], self.h, self.qkv, norm=layer["attention_norm"])
            self.attend(layer, input_pos)
            self.mlp(index, layer)
        self.product("head", self.head_weight, self.h, self.logits, norm=model.norm.weight)
        if self.backend != BACKEND_TRITON:
            return self.logits.argmax().view(1)
        return argmax(self.logits, self.token, pdl=self.pdl)

    __call__ = step


def tune(decode: FastDecode, configs: Callable[[int, int, int], list[GemvConfig]] | None = None, *,
         replays: int = 5, progress: Callable[[str], None] = lambda _: None, position: int | None = None) -> Tuning:
    """Time every candidate tile of each role's product over all its weights, keep the fastest (CUDA only).

    ``position``: the cache slot the attention's candidates are timed at, best the middle of the caller's decode
    (the kernel's cost follows the live context); default the cache's last slot. Each layer's cache is written
    there, so it must be a slot the caller prefills or decodes again before reading it (any slot from the first
    one it decodes). A candidate that fails to compile or launch is skipped (recorded with time inf)."""
    import time

    began = time.perf_counter()
    if decode.device.type != "cuda" or decode.backend != BACKEND_TRITON:
        return decode.tuning
    sm_count = torch.cuda.get_device_properties(decode.device).multi_processor_count
    configs = configs or (lambda rows, k, halves: candidate_configs(rows, k, sm_count, halves))
    chosen, timings = _tune_products(decode, configs, replays, progress)
    device = decode.model.output.weight.device
    last = decode.model.max_seq - 1
    position = last if position is None else max(0, min(position, last))
    per_split, timings["attention"] = (_tune_attention(decode, device, replays, progress, position)
                                       if decode.triton_attention else (decode.tuning.t_per_split, []))
    decode.tuning = Tuning(chosen, timings, time.perf_counter() - began, per_split,
                           position if decode.triton_attention else None)
    return decode.tuning


STEP_SHORTLIST = 3  # each role's fastest deep-prefetch tiles (timed alone) that are timed again in the whole step
STEP_REPLAYS = 20  # whole-step replays a candidate (~16 ms for llama-1b)


def tune_prefetch(decode: FastDecode, *, replays: int = 5, progress: Callable[[str], None] = lambda _: None,
                  position: int | None = None) -> Tuning:
    """The products' tiles chosen again for the PDL step among the deep-prefetch candidates (gemv.prefetch_configs)
    and the tile the step has now. Every candidate is first checked against the torch twin, then timed as tune
    times products (all the role's weights back to back in a CUDA graph), launched as the step launches it
    (``decode.pdl``: each product's prefetch overlaps the previous one's drain there too).

    With ``position`` (a cache slot the caller decodes again before reading it, as for ``tune``) the choice is
    then made in the whole step, where the kernel before each product is another one (the previous product's
    drain and how many of this one's programs fit beside it decide what the prefetch hides): role by role, the
    STEP_SHORTLIST fastest tiles alone and the current one, each in a CUDA graph of the whole step, the others
    at their choice so far; then each choice against itself with ``early_launch`` (the next kernel let start when
    this one starts). Without ``position`` the early-launch choice is made on the products alone. The attention's
    choice is kept; the timings are recorded as "<role> prefetch", "<role> in the step" and "<role> early launch"
    (CUDA only)."""
    import time

    if decode.device.type != "cuda" or decode.backend != BACKEND_TRITON:
        return decode.tuning
    began = time.perf_counter()
    sm_count = torch.cuda.get_device_properties(decode.device).multi_processor_count
    current = dict(decode.tuning.configs)
    chosen, deep = _tune_products(decode, lambda rows, k, halves: prefetch_configs(rows, k, sm_count, halves),
                                  replays, progress, extra={r: [c] for r, c in current.items()},
                                  label=" prefetch", check=True)
    timings = {f"{role} prefetch": rows for role, rows in deep.items()}
    if position is None:
        chosen, early = _tune_products(decode, lambda rows, k, halves: [], replays, progress,
                                       extra={r: [c, replace(c, early_launch=True)] for r, c in chosen.items()},
                                       label=" early launch", check=True)
        timings.update({f"{role} early launch": rows for role, rows in early.items()})
    else:
        chosen = dict(current)
        for role in ROLES:
            fastest = sorted((us, i) for i, (_, us) in enumerate(deep[role]) if us < float("inf"))[:STEP_SHORTLIST]
            shortlist = list(dict.fromkeys([GemvConfig(**deep[role][i][0]) for _, i in fastest] + [current[role]]))
            chosen[role], timings[f"{role} in the step"] = _choose_in_step(decode, chosen, role, shortlist, position,
                                                                           progress)
        for role in ROLES:
            early = replace(chosen[role], early_launch=True)
            chosen[role], timings[f"{role} early launch"] = _choose_in_step(decode, chosen, role,
                                                                            [chosen[role], early], position, progress)
        if decode.attention_version == 2 and decode.triton_attention:
            rows = []
            for early in (False, True):
                decode.tuning = replace(decode.tuning, configs=chosen, attention_early_launch=early)
                try:
                    rows.append(({"early_launch": early}, _time_step(decode, position, STEP_REPLAYS)))
                except Exception as exc:  # noqa: BLE001
                    progress(f"tune attention early launch={early} in the step failed: {type(exc).__name__}")
                    rows.append(({"early_launch": early}, float("inf")))
            attention_early = rows[1][1] < rows[0][1]
            timings["attention early launch"] = rows
            progress(f"tune attention in the step: early launch {attention_early} "
                     f"({rows[0][1]:.1f} us a step without, {rows[1][1]:.1f} with)")
            decode.tuning = replace(decode.tuning, attention_early_launch=attention_early)
    decode.tuning = replace(decode.tuning, configs=chosen,
                            candidates_us={**decode.tuning.candidates_us, **timings},
                            seconds=decode.tuning.seconds + time.perf_counter() - began)
    return decode.tuning


MB = 1 << 20
L2_PREFETCH_BEYOND_WO = (0, 4 * MB, 8 * MB, 16 * MB, 24 * MB, 32 * MB)  # w13 bytes after the whole wo: candidates


def l2_prefetch_candidates(decode: FastDecode) -> list[int]:
    """Bytes the attention's extra programs prefetch (wo's, then a first slice of w13's): 0 (so the choice never
    loses to the step without), half of wo, wo, and wo plus L2_PREFETCH_BEYOND_WO of w13, within the L2 where its
    size is known (the products read more than the L2 holds: a bigger prefetch would evict its own start)."""
    wo = decode.layers[0]["wo"]
    wo_bytes = wo.numel() * wo.element_size()
    w13 = decode.layers[0]["w13"]
    w13_bytes = w13.numel() * w13.element_size()
    l2 = (getattr(torch.cuda.get_device_properties(decode.device), "L2_cache_size", None)
          if decode.device.type == "cuda" else None) or 50 * MB
    sizes = [0, wo_bytes // 2 // 16 * 16] + [wo_bytes + min(b, w13_bytes) for b in L2_PREFETCH_BEYOND_WO]
    return [b for b in dict.fromkeys(sizes) if b <= l2]


def tune_l2_prefetch(decode: FastDecode, *, position: int, candidates: list[int] | None = None,
                     progress: Callable[[str], None] = lambda _: None) -> Tuning:
    """The attention's L2 prefetch (attention_l2_prefetch bytes) chosen in the whole step's CUDA graph, timed at
    cache slot ``position`` as _choose_in_step times the products' tiles; 0 is a candidate, so the step with the
    choice is never slower than without in that timing. Each amount but 0 is tried with every chunk of
    CHUNK_CANDIDATES (bytes a request). Then, with that prefetch, each product's weight loads with and without the
    L2 evict-first policy (GemvConfig.evict_first: the streamed weights leave the L2 before the prefetched lines),
    in the whole step too ("<role> evict first"). Attention version 2 on CUDA only (recorded as "attention l2
    prefetch")."""
    if decode.device.type != "cuda" or decode.backend != BACKEND_TRITON or decode.attention_version != 2 \
            or not decode.triton_attention:
        return decode.tuning
    import time

    began = time.perf_counter()
    rows = []
    amounts = candidates if candidates is not None else l2_prefetch_candidates(decode)
    for nbytes, chunk in [(n, c) for n in amounts for c in (CHUNK_CANDIDATES if n else CHUNK_CANDIDATES[-1:])]:
        decode.tuning = replace(decode.tuning, attention_l2_prefetch=nbytes, attention_l2_chunk=chunk)
        try:
            us = _time_step(decode, position, STEP_REPLAYS)
        except Exception as exc:  # noqa: BLE001 - e.g. the instruction refused: the candidate is left out
            progress(f"tune attention l2 prefetch {nbytes} B failed: {type(exc).__name__}: {str(exc)[:120]}")
            us = float("inf")
        rows.append(({"l2_prefetch_bytes": nbytes, "chunk": chunk}, us))
    best = min(rows, key=lambda r: r[1])
    chosen, chunk = ((best[0]["l2_prefetch_bytes"], best[0]["chunk"]) if best[1] < float("inf")
                     else (0, CHUNK_BYTES))
    progress("tune attention l2 prefetch in the step: " + ", ".join(
        f"{c['l2_prefetch_bytes'] / MB:.1f} MB/{c['chunk'] >> 10} KB {us:.1f} us" for c, us in rows)
        + f"; chosen {chosen / MB:.1f} MB in {chunk >> 10} KB requests")
    decode.tuning = replace(decode.tuning, attention_l2_prefetch=chosen, attention_l2_chunk=chunk)
    configs, timings = dict(decode.tuning.configs), {"attention l2 prefetch": rows}
    for role in ROLES:
        configs[role], timings[f"{role} evict first"] = _choose_in_step(
            decode, configs, role, [configs[role], replace(configs[role], evict_first=True)], position, progress)
    decode.tuning = replace(decode.tuning, configs=configs, candidates_us={**decode.tuning.candidates_us, **timings},
                            seconds=decode.tuning.seconds + time.perf_counter() - began)
    return decode.tuning


def tune_persistent(decode: FastDecode, *, position: int, candidates: list[PersistentConfig] | None = None,
                    progress: Callable[[str], None] = lambda _: None) -> Tuning:
    """The products after attention as one persistent kernel a layer, or not: the three-kernel step as it is (always a
    candidate, so the choice is never slower in this timing) and each candidate (persistent_mlp.candidate_configs),
    first checked against the step's three kernels on the first and last layers' weights (CHECK_TOLERANCE; a
    barrier that gave up fails it too), then timed in the whole step's CUDA graph at cache slot ``position`` as
    _choose_in_step times tiles; a candidate whose barrier gives up in the timing is left out (CUDA only; recorded
    as "persistent in the step")."""
    if decode.device.type != "cuda" or decode.backend != BACKEND_TRITON:
        return decode.tuning
    import time

    began = time.perf_counter()
    base = replace(decode.tuning, persistent=None)
    dim, k_attn = decode.layers[0]["wo"].shape
    configs = candidates if candidates is not None else persistent_candidates(dim, decode.shape("w13")[0], k_attn)
    rows = []
    for config in [None, *configs]:
        decode.tuning = replace(base, persistent=config)
        try:
            if config is not None:
                _check_persistent(decode, config)
            us = _time_step(decode, position, STEP_REPLAYS)
            if decode.persistent_state.failed():
                raise RuntimeError("a grid barrier gave up in the step (the grid was not co-resident)")
        except Exception as exc:  # noqa: BLE001 - a wrong, failing or stuck candidate is left out
            progress(f"tune persistent: {config} failed: {type(exc).__name__}: {str(exc)[:160]}")
            decode.persistent_state.reset()
            us = float("inf")
        rows.append(({"persistent": None} if config is None else config.as_dict(), us))
    best = min(range(len(rows)), key=lambda i: rows[i][1])
    chosen = ([None, *configs][best] if rows[best][1] < float("inf") else None)
    progress(f"tune persistent in the step: {chosen} {rows[best][1]:.1f} us a step (three kernels: "
             f"{rows[0][1]:.1f} us) of {len(rows)} candidates")
    decode.tuning = replace(base, persistent=chosen,
                            candidates_us={**base.candidates_us, "persistent in the step": rows},
                            seconds=base.seconds + time.perf_counter() - began)
    return decode.tuning


def _check_persistent(decode: FastDecode, config: PersistentConfig) -> None:
    """Raise where the persistent kernel's h and m differ from the step's three kernels' (its tuned tiles) on the
    first and last layers' weights, by more than CHECK_TOLERANCE of the largest value, or a barrier gave up."""
    device = decode.h.device
    for index in sorted({0, len(decode.layers) - 1}):
        layer = decode.layers[index]
        o = torch.randn_like(decode.o)
        h = torch.randn_like(decode.h)
        got = []
        for use in (None, config):
            decode.o.copy_(o)
            decode.h.copy_(h)
            decode.m.zero_()
            decode.tuning = replace(decode.tuning, persistent=use)
            decode.mlp(index, layer)
            got.append((decode.h.clone(), decode.m.clone()))
        decode.tuning = replace(decode.tuning, persistent=config)
        torch.cuda.synchronize(device)
        if decode.persistent_state.failed():
            raise RuntimeError("a grid barrier gave up (the grid was not co-resident)")
        for (want, found), name in zip(zip(got[0], got[1]), ("h", "m")):
            error = (found.float() - want.float()).abs().max().item()
            scale = max(want.float().abs().max().item(), 1e-3)
            if not error <= CHECK_TOLERANCE * scale:  # NaN fails too
                raise ValueError(f"wrong {name} at layer {index}: max error {error:.3g} against {scale:.3g} "
                                 "(the three kernels)")


def _choose_in_step(decode, configs: dict[str, GemvConfig], role: str, candidates: list[GemvConfig], position: int,
                    progress) -> tuple[GemvConfig, list[tuple[dict, float]]]:
    """The candidate for ``role`` whose whole step (the other roles at ``configs``) is fastest, with every time."""
    rows = []
    for config in candidates:
        decode.tuning = replace(decode.tuning, configs={**configs, role: config})
        try:
            us = _time_step(decode, position, STEP_REPLAYS)
        except Exception as exc:  # noqa: BLE001 - e.g. early launch refused: the candidate is left out
            progress(f"tune {role} in the step: {config} failed: {type(exc).__name__}: {str(exc)[:120]}")
            us = float("inf")
        rows.append((config.as_dict(), us))
    best = min(range(len(rows)), key=lambda i: rows[i][1])
    found = candidates[best] if rows[best][1] < float("inf") else configs[role]
    progress(f"tune {role} in the step: {found} {rows[best][1]:.1f} us a step of {len(rows)} candidates")
    return found, rows


def _time_step(decode, position: int, replays: int) -> float:
    """Microseconds per decode step at cache slot ``position`` (it writes that slot of every layer's cache)."""
    device = decode.model.output.weight.device
    token = torch.zeros(1, dtype=torch.long, device=device)
    pos = torch.tensor([position], device=device)
    pad = torch.zeros(1, dtype=torch.long, device=device)
    return _time_launches(lambda: decode.step(decode.model, token, pos, pad), 1, replays)


def _tune_products(decode, configs, replays, progress, extra: dict[str, list[GemvConfig]] | None = None,
                   label: str = "", check: bool = False) -> tuple[dict[str, GemvConfig], dict[str, list]]:
    """Each role's fastest tile of ``configs(rows, k, halves)`` and of ``extra[role]`` (timed after them).

    ``check``: each candidate's output on the role's first weight is compared with the torch twin's first; one
    off by more than CHECK_TOLERANCE of the largest output is not a candidate (recorded with time inf)."""
    chosen, timings = {}, {}
    device = decode.model.output.weight.device
    for role in ROLES:
        rows, k = decode.shape(role)
        weights = [decode.head_weight] if role == "head" else [layer[role] for layer in decode.layers]
        if role == "head":
            weights = weights * 4  # one matrix: repeated, it is still bigger than the L2 for every model here
        x = torch.randn(k, dtype=decode.dtype, device=device) * 0.1
        out = torch.zeros(rows, dtype=decode.dtype, device=device)
        res = torch.zeros(rows, dtype=decode.dtype, device=device)
        norm = torch.ones(k, dtype=decode.dtype, device=device) if role in ("qkv", "w13", "head") else None
        residual = res if role in ("wo", "w2") else None
        rows_us = []
        candidates = list(dict.fromkeys([*configs(rows, k, 2 if role == "w13" else 1), *(extra or {}).get(role, [])]))
        for config in candidates:
            try:
                if check:
                    _check_product(decode, role, weights[0], x, norm, residual, config)
                us = _time_products(decode, role, weights, x, out, norm, residual, config, replays)
            except Exception as exc:  # noqa: BLE001 - a tile that does not compile is not a candidate
                progress(f"tune {role}{label}: {config} failed: {type(exc).__name__}: {str(exc)[:120]}")
                us = float("inf")
            rows_us.append((config.as_dict(), us))
        best = min(rows_us, key=lambda r: r[1])
        chosen[role] = GemvConfig(**best[0]) if best[1] < float("inf") else decode.tuning.configs[role]
        timings[role] = rows_us
        progress(f"tune {role}{label} ({rows}x{k}): {chosen[role]} {best[1]:.2f} us of {len(rows_us)} candidates")
    return chosen, timings


def tune_attention(decode: FastDecode, *, position: int | None = None, replays: int = 5,
                   progress: Callable[[str], None] = lambda _: None) -> Tuning:
    """Only the attention's slots per program, the products' tiles kept (CUDA only): for a step that shares a
    tuned step's tiles with another attention version. ``position`` as in ``tune``. When every candidate fails,
    the step keeps the attention settings it had (slots, warps, merge block and position, chosen together) and
    only the failed candidates' times are recorded."""
    if decode.device.type != "cuda" or not decode.triton_attention:
        return decode.tuning
    last = decode.model.max_seq - 1
    position = last if position is None else max(0, min(position, last))
    per_split, rows = _tune_attention(decode, decode.model.output.weight.device, replays, progress, position)
    if all(us == float("inf") for _, us in rows):
        progress("tune attention: every candidate failed; the step's attention settings are kept")
        decode.tuning = replace(decode.tuning, candidates_us={**decode.tuning.candidates_us, "attention": rows})
        return decode.tuning
    found = [c for c, us in rows if c["t_per_split"] == per_split and us == min(u for _, u in rows)]
    decode.tuning = replace(decode.tuning, t_per_split=per_split, attention_position=position,
                            attention_warps=found[0].get("num_warps") if found else None,
                            attention_split_block=found[0].get("split_block") if found else None,
                            candidates_us={**decode.tuning.candidates_us, "attention": rows})
    return decode.tuning


def _tune_attention(decode, device, replays, progress, position: int) -> tuple[int, list[tuple[dict, float]]]:
    """The attention kernel's cache slots per program, timed over every layer's cache at slot ``position``."""
    pos = torch.tensor([position], device=device)
    decode.qkv.copy_(torch.randn_like(decode.qkv) * 0.1)
    rows = []
    if decode.attention_version == 2:  # the merge sized by the slices live at the position (live_split_block)
        candidates = ([{"t_per_split": p, "split_block": live_split_block(position, p)} for p in T_PER_SPLITS_V2]
                      + [{"t_per_split": p, "num_warps": 16, "split_block": live_split_block(position, p)}
                         for p in V2_SIXTEEN_WARPS])
    else:
        candidates = [{"t_per_split": p} for p in T_PER_SPLITS]
    for candidate in candidates:
        per_split = candidate["t_per_split"]

        def launch_all(per_split=per_split, warps=candidate.get("num_warps"), block=candidate.get("split_block")):
            for layer in decode.layers:
                decode.attend(layer, pos, per_split, warps, block)

        try:
            us = _time_launches(launch_all, len(decode.layers), replays)
        except Exception as exc:  # noqa: BLE001
            progress(f"tune attention: {candidate} failed: {type(exc).__name__}: {str(exc)[:120]}")
            us = float("inf")
        rows.append((candidate, us))
    best = min(rows, key=lambda r: r[1])
    chosen = best[0]["t_per_split"] if best[1] < float("inf") else decode.tuning.t_per_split
    progress(f"tune attention at slot {position}: {best[0]}, {best[1]:.2f} us")
    return chosen, rows


CHECK_TOLERANCE = 2e-2


def _check_product(decode, role, w, x, norm, residual, config) -> None:
    """Raise where the kernel with ``config`` disagrees with the torch twin (a wrong tile is no candidate)."""
    halves = 2 if role == "w13" else 1
    rows = w.shape[0] // halves
    got = torch.zeros(rows, dtype=decode.dtype, device=w.device)
    want = torch.zeros(rows, dtype=decode.dtype, device=w.device)
    res = None if residual is None else torch.randn(rows, dtype=decode.dtype, device=w.device)
    decode.product(role, w, x, got, norm=norm, residual=None if res is None else res.clone(), config=config)
    gemv_torch(w, x, want, halves=halves, norm_weight=norm, eps=decode.eps, residual=res)
    error = (got.float() - want.float()).abs().max().item()
    scale = max(want.float().abs().max().item(), 1e-3)
    if not error <= CHECK_TOLERANCE * scale:  # NaN fails too
        raise ValueError(f"wrong results: max error {error:.3g} against {scale:.3g} (torch twin)")


def _time_products(decode, role, weights, x, out, norm, residual, config, replays) -> float:
    """Microseconds per product: the products over ``weights`` captured as one CUDA graph, replayed."""
    def launch_all():
        for w in weights:
            decode.product(role, w, x, out, norm=norm, residual=residual, config=config)

    return _time_launches(launch_all, len(weights), replays)


def _time_launches(launch_all, launches: int, replays: int) -> float:
    """Microseconds per launch of ``launch_all``'s kernels, captured as one CUDA graph and replayed."""
    launch_all()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launch_all()
    graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    end.synchronize()
    return 1e3 * start.elapsed_time(end) / (replays * launches)
