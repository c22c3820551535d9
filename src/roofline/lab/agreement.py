"""Do two stages generate the same greedy tokens, and when not, how close to a tie was the choice?

A fix that changes the arithmetic (fp16 norms, another attention kernel, fused compiled kernels) rounds
differently; where the two best logits are nearly tied, that flips the argmax and every later token differs.
``logit_gap`` measures that: the first stage's model, fed the reference tokens up to the divergence, gives its
top-two logits there; their gap is reported in units of the dtype's rounding step (ulp) at the top logit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from roofline.models.llama import Transformer


@dataclass
class Agreement:
    stage: str
    identical: bool
    first_divergence: int | None
    compared_tokens: int
    divergent_prompt: int | None = None
    logit_gap: float | None = None
    logit_gap_ulps: float | None = None


def compare_tokens(stage: str, reference: list[list[int]], tokens: list[list[int]]) -> Agreement:
    """Agreement of ``tokens`` with ``reference``, row by row; the earliest divergence over all rows."""
    first: int | None = None
    row_of_first: int | None = None
    compared = 0
    for row, (ref_row, out_row) in enumerate(zip(reference, tokens)):
        compared += min(len(ref_row), len(out_row))
        index = next((i for i, (a, b) in enumerate(zip(ref_row, out_row)) if a != b), None)
        if index is None and len(ref_row) != len(out_row):
            index = min(len(ref_row), len(out_row))
        if index is not None and (first is None or index < first):
            first, row_of_first = index, row
    return Agreement(stage, first is None, first, compared, row_of_first)


@torch.no_grad()
def logit_gap(model: Transformer, prompt: list[int], reference: list[int], index: int) -> tuple[float, float]:
    """(top-1 minus top-2 logit, that gap in ulps of the top logit) where ``reference[index]`` was chosen."""
    device = model.output.weight.device
    tokens = torch.tensor([list(prompt) + list(reference[:index])], device=device)
    logits = model(tokens)[0, -1]
    top = torch.topk(logits.float(), 2).values.tolist()
    gap = top[0] - top[1]
    return gap, gap / _ulp(top[0], logits.dtype)


def _ulp(value: float, dtype: torch.dtype) -> float:
    """Spacing of ``dtype``'s representable numbers at ``value``."""
    mantissa_bits = {torch.float16: 10, torch.bfloat16: 7, torch.float32: 23, torch.float64: 52}.get(dtype, 23)
    exponent = math.floor(math.log2(abs(value))) if value else -14
    return 2.0 ** (exponent - mantissa_bits)
