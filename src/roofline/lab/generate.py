"""Greedy generation, written once with a switch per fix: the naive loop and the fixed one side by side.

Naive: one prompt at a time, the whole sequence re-run for every new token, and an ``.item()`` per token to
check for the end of text. Fixed: all prompts in one left-padded batch, a static KV cache filled by one prefill
and then one token per decode step, and stop conditions kept on the device (a finished row keeps emitting
``<eos>``), so the host never waits for the device inside the loop.
"""

from __future__ import annotations

from typing import Callable

import torch

from roofline.lab.model import Fixes
from roofline.models.llama import Transformer

DecodeStep = Callable[[Transformer, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
RecomputeStep = Callable[[Transformer, torch.Tensor, "torch.Tensor | None"], torch.Tensor]


def padded_causal_mask(input_pos: torch.Tensor, pad: torch.Tensor, n_keys: int) -> torch.Tensor:
    """(batch, 1, queries, keys): causal, and a real token never attends to its row's left padding.

    Padding queries may attend to earlier padding, so no row of the mask is empty (an empty row gives NaN).
    """
    keys = torch.arange(n_keys, device=pad.device)
    queries = input_pos[:, None]
    causal = keys[None, :] <= queries
    real_key = keys[None, None, :] >= pad[:, None, None]
    padding_query = queries[None] < pad[:, None, None]
    return (causal[None] & (real_key | padding_query))[:, None]


def padded_positions(input_pos: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
    """RoPE position of each token: its slot minus its row's padding (batch, queries)."""
    return (input_pos[None, :] - pad[:, None]).clamp(min=0)


def decode_one_token(
    model: Transformer, token: torch.Tensor, input_pos: torch.Tensor, pad: torch.Tensor
) -> torch.Tensor:
    """One cached decode step, (batch, 1) -> next token (batch,): every shape fixed, so it compiles to one graph."""
    mask = padded_causal_mask(input_pos, pad, model.max_seq)
    logits = model(token, input_pos, positions=padded_positions(input_pos, pad), mask=mask)
    return logits[:, -1].argmax(dim=-1)


def recompute_one_token(model: Transformer, tokens: torch.Tensor, pad: torch.Tensor | None) -> torch.Tensor:
    """The naive step: the whole sequence (batch, seq) re-run -> next token (batch,). ``pad`` is None for rows
    of one length (plain causal attention), else each row's left padding. Its shapes grow every token, so it
    compiles only with dynamic shapes, and without CUDA graphs (a graph is captured for fixed shapes)."""
    if pad is None:
        logits = model(tokens)
    else:
        slots = torch.arange(tokens.shape[1], device=tokens.device)
        mask = padded_causal_mask(slots, pad, tokens.shape[1])
        logits = model(tokens, positions=padded_positions(slots, pad), mask=mask)
    return logits[:, -1].argmax(dim=-1)


def left_pad(prompts: list[list[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (batch, longest) with shorter prompts padded on the left, and each row's padding length."""
    longest = max(len(p) for p in prompts)
    rows = torch.tensor([[pad_id] * (longest - len(p)) + list(p) for p in prompts])
    pad = torch.tensor([longest - len(p) for p in prompts])
    return _to_device(rows, device), _to_device(pad, device)


def _to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A copy from pinned memory, so the host does not wait for the device queue (a pageable copy does)."""
    if device.type == "cpu":
        return tensor
    if device.type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


def prepare(model: Transformer, prompts: list[list[int]], max_new_tokens: int, fixes: Fixes) -> None:
    """Allocate the KV cache once, big enough for every prompt plus its new tokens (a bigger one is kept)."""
    if fixes.kv_cache:
        batch = len(prompts) if fixes.batched else 1
        seq = max(len(p) for p in prompts) + max_new_tokens
        if model.max_batch < batch or model.max_seq < seq:
            model.setup_caches(max(batch, model.max_batch), max(seq, model.max_seq))


@torch.no_grad()
def generate(
    model: Transformer,
    prompts: list[list[int]],
    max_new_tokens: int,
    eos_id: int,
    fixes: Fixes,
    decode_step: DecodeStep = decode_one_token,
    recompute_step: RecomputeStep = recompute_one_token,
) -> list[list[int]]:
    """Greedy continuation of each prompt, cut after its first ``eos_id``, on the host."""
    ids = generate_ids(model, prompts, max_new_tokens, eos_id, fixes, decode_step, recompute_step)
    return [_cut_after_eos(row, eos_id) for row in ids.tolist()]


@torch.no_grad()
def generate_ids(
    model: Transformer,
    prompts: list[list[int]],
    max_new_tokens: int,
    eos_id: int,
    fixes: Fixes,
    decode_step: DecodeStep = decode_one_token,
    recompute_step: RecomputeStep = recompute_one_token,
) -> torch.Tensor:
    """(prompts, max_new_tokens) greedy token ids, left on the model's device; ``eos_id`` after a row's first.
    ``decode_step`` runs the cached steps (``fixes.kv_cache``), ``recompute_step`` the recomputing ones."""
    prepare(model, prompts, max_new_tokens, fixes)
    step = decode_step if fixes.kv_cache else recompute_step
    if fixes.batched:
        return _generate_batch(model, prompts, max_new_tokens, eos_id, fixes, step)
    rows = []
    for prompt in prompts:
        row = _generate_batch(model, [prompt], max_new_tokens, eos_id, fixes, step)
        rest = torch.full((1, max_new_tokens - row.shape[1]), eos_id, dtype=row.dtype, device=row.device)
        rows.append(torch.cat([row, rest], dim=1))
    return torch.cat(rows)


def _generate_batch(model, prompts, max_new_tokens, eos_id, fixes, step) -> torch.Tensor:
    device = model.output.weight.device
    tokens, pad = left_pad(prompts, eos_id, device)
    finished = torch.zeros(len(prompts), dtype=torch.bool, device=device)
    generated: list[torch.Tensor] = []
    if fixes.kv_cache:
        steps = _cached_steps(model, tokens, pad, max_new_tokens, step)
    else:
        padded = len({len(p) for p in prompts}) > 1
        steps = _recomputed_steps(model, tokens, pad if padded else None, max_new_tokens, step)
    for next_token in steps:
        next_token = torch.where(finished, eos_id, next_token)
        finished |= next_token == eos_id
        generated.append(next_token)
        if not fixes.sync_free and finished.all().item():
            break
    return torch.stack(generated, dim=1)


def _recomputed_steps(model, tokens, pad, max_new_tokens, recompute_step):
    for _ in range(max_new_tokens):
        next_token = recompute_step(model, tokens, pad)
        yield next_token
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)


def _cached_steps(model, tokens, pad, max_new_tokens, decode_step):
    prompt_len = tokens.shape[1]
    input_pos = torch.arange(prompt_len, device=tokens.device)
    mask = padded_causal_mask(input_pos, pad, model.max_seq)
    logits = model(tokens, input_pos, positions=padded_positions(input_pos, pad), mask=mask)
    next_token = logits[:, -1].argmax(dim=-1)
    yield next_token
    input_pos = input_pos[-1:] + 1
    for _ in range(max_new_tokens - 1):
        next_token = decode_step(model, next_token[:, None], input_pos, pad).clone()
        yield next_token
        input_pos = input_pos + 1


def _cut_after_eos(row: list[int], eos_id: int) -> list[int]:
    return row[: row.index(eos_id) + 1] if eos_id in row else row
