"""The serving engine under both schedulers: the lab's LLaMA over a slot KV cache, one forward pass per step.

The cache holds ``slots`` rows of ``max_len`` positions per layer, allocated once: the memory budget both
schedulers share. A step names the rows it runs as a contiguous range ``[first_row, first_row + batch)``, so the
keys attention reads are a view of the cache (no gather), and gives each row its own write positions, RoPE
positions and visible keys. That one primitive serves a left-padded batch that starts together (static batching)
and rows at different lengths that joined at different steps (continuous batching).

A decode step runs one of three ways (``decode=``): ``eager``, the dynamic step (keys read up to the longest row's
context, inputs built on the host); ``static``, the same step with static shapes (keys read are always slots
0..max_len-1, the visibility mask hides the rest; tokens, write slots and first keys copied into fixed device
buffers; mask and positions computed on the device), run eagerly; ``graphed``, that static step captured as one
CUDA graph per row count (lazily on first use, or all up front by ``capture_graphs``; one shared memory pool) and
replayed. An eager llama-1b step is ~1,400 ops launched from Python (22 ms of wall time on the H200 for 2.7 ms of
kernels), so without graphs a serving loop measures Python dispatch. If a capture raises, or its first replay gives
other tokens than the step run eagerly, the engine falls back to ``eager`` for good and says why in ``fallback``.

Nothing in ``models/llama.py`` changes: the cached path of ``Transformer.forward`` hands ``input_pos`` through to
``kv_cache.update`` untouched, so a ``Placement`` goes there in its place, and ``SlotKVCache`` (the same buffers as
``KVCache``) reads it. The engine runs the fixed model (``configure(model, Fixes.all())``); the model's own caches
and module classes are put back when the engine closes, also when a step raises.
"""

from __future__ import annotations

import time
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


DECODE_MODES = ("eager", "static", "graphed")
# The annotation a replayed graph runs under: the profiler gives the graph's kernels to it (one op per step).
GRAPH_OP = "batching::decode_step_cuda_graph"


class SlotEngine:
    """``prefill`` and ``decode`` forward passes of ``model`` over a slot KV cache of ``slots`` x ``max_len``.

    ``decode``: "eager", "static" or "graphed" (see the module's docstring); "auto" is "graphed" on CUDA and
    "eager" elsewhere. Use as a context manager (or call ``close``): the model's own KV caches are restored on
    exit and the graphs released."""

    def __init__(self, model: Transformer, slots: int, max_len: int, decode: str = "auto") -> None:
        if slots < 1 or max_len < 2:
            raise ValueError(f"a slot cache needs slots >= 1 and max_len >= 2, got {slots} x {max_len}")
        if max_len > model.rope_cos.shape[0]:
            raise ValueError(f"max_len {max_len} exceeds the model's RoPE table ({model.rope_cos.shape[0]})")
        weight = model.output.weight
        if decode == "auto":
            decode = "graphed" if weight.device.type == "cuda" else "eager"
        if decode not in DECODE_MODES:
            raise ValueError(f"decode must be one of {', '.join(DECODE_MODES)} or auto, got {decode!r}")
        if decode == "graphed" and weight.device.type != "cuda":
            raise ValueError(f"CUDA graphs need a CUDA model, this one is on {weight.device}")
        self.model, self.slots, self.max_len = model, slots, max_len
        self.device, self.dtype = weight.device, weight.dtype
        self.decode_mode = decode
        self.fallback: str | None = None
        self.capture_s = 0.0
        self._graphs: dict[int, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}
        self._pool = None
        # The static step's inputs: tokens, write slots, first visible keys (rows 0..slots-1); the key slots.
        self._inputs = torch.zeros(3, slots, dtype=torch.long, device=self.device)
        self._keys = torch.arange(max_len, device=self.device)
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
        self._graphs.clear()
        self._pool = None
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

    def decode(self, tokens: list[int], write: list[int], first_key: list[int]) -> torch.Tensor:
        """One token for rows 0..len(tokens)-1: row i's token goes to slot ``write[i]`` at RoPE position
        ``write[i] - first_key[i]`` and attends to slots ``first_key[i]..write[i]``. The next token of each row."""
        if self.decode_mode == "eager":
            return self._decode_eager(tokens, write, first_key)
        batch = len(tokens)
        self._check_rows(0, batch, max(write) + 1)
        if min(w - f for w, f in zip(write, first_key)) < 0:
            raise ValueError("a row's first visible key comes after its write slot")
        self._inputs[:, :batch].copy_(torch.tensor([tokens, write, first_key], dtype=torch.long))
        if self.decode_mode == "static":
            return self._static_step(batch)
        if batch not in self._graphs and not self._capture(batch):
            return self._decode_eager(tokens, write, first_key)
        graph, out = self._graphs[batch]
        with torch.profiler.record_function(GRAPH_OP):
            graph.replay()
        # Copied at once: ``out`` lives in the shared pool, where another row count's graph may use its memory.
        return out.clone()

    @property
    def graph_count(self) -> int:
        """Row counts whose step is captured (and replayed)."""
        return len(self._graphs)

    def capture_graphs(self) -> float:
        """Capture the graphed step of every row count 1..slots now (so that no timed step pays for a capture):
        the seconds it took (also added to ``capture_s``). Nothing to do in another mode. The warm-up steps
        write slot 0 of each row: call this before any request is in the cache."""
        if self.decode_mode != "graphed":
            return 0.0
        began = time.perf_counter()
        for batch in range(1, self.slots + 1):
            if batch not in self._graphs:
                self._inputs[:, :batch].zero_()
                if not self._capture(batch):
                    break
        return time.perf_counter() - began

    def _capture(self, batch: int) -> bool:
        """Warm the static step up on a side stream (as torch.cuda.graphs requires), capture it into the shared
        pool, replay it once and check that it gives the warm-up's tokens. The warm-up and the check run the step
        on the current inputs (rewriting the very keys and values the step itself writes). On failure: eager
        decoding from now on, ``fallback`` says why; False."""
        began = time.perf_counter()
        try:
            if self._pool is None:
                self._pool = torch.cuda.graph_pool_handle()
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                for _ in range(2):
                    expected = self._static_step(batch)
            torch.cuda.current_stream(self.device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self._pool):
                out = self._static_step(batch)
            graph.replay()
            if not torch.equal(out, expected):
                raise RuntimeError("its replay gave other tokens than the same step run eagerly")
            self._graphs[batch] = (graph, out)
            return True
        except Exception as exc:  # noqa: BLE001 - the run goes on eagerly and the result says so
            self.fallback = (f"capturing the {batch}-row decode step as a CUDA graph failed "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}): every decode "
                             "step from then on ran eager (dynamic shapes, host-launched)")
            self.decode_mode = "eager"
            self._graphs.clear()
            self._pool = None
            try:
                torch.cuda.synchronize(self.device)
            except Exception:  # noqa: BLE001 - the fallback note already says what went wrong
                pass
            return False
        finally:
            self.capture_s += time.perf_counter() - began

    @torch.no_grad()
    def _static_step(self, batch: int) -> torch.Tensor:
        """The decode step of rows 0..batch-1 with shapes fixed by ``batch`` alone, from the input buffers: keys
        read are slots 0..max_len-1, the mask hides all but ``first..write`` of each row. What a graph captures."""
        tokens, write, first = self._inputs[0, :batch], self._inputs[1, :batch], self._inputs[2, :batch]
        visible = (self._keys[None, :] >= first[:, None]) & (self._keys[None, :] <= write[:, None])
        place = Placement(0, write[:, None], self.max_len)
        logits = self.model(tokens[:, None], place, positions=(write - first)[:, None],
                            mask=visible[:, None, None, :])
        return logits[:, -1].argmax(dim=-1)

    @torch.no_grad()
    def _decode_eager(self, tokens: list[int], write: list[int], first_key: list[int]) -> torch.Tensor:
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
