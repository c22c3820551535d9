"""The greedy token: the index of the largest logit, first index on ties (torch.argmax's answer), in one kernel.

torch's argmax over a 32-128k vocabulary is a generic reduction that took 12 us on the H200 for 64 KB of logits
(llama-1b); this is one program of 16 warps that loads 8k logits per pass (two 16-byte loads per thread, two
passes unrolled so their loads are in flight together) and keeps a running best per lane. NaN logits are not
ranked as torch ranks them (torch returns a NaN's index): a decode that produces NaN logits is broken anyway.
"""

from __future__ import annotations

import torch

from roofline.lab.kernels import triton_available

BLOCK = 8192
WARPS = 16


def argmax(logits: torch.Tensor, out: torch.Tensor, *, pdl: bool = False) -> torch.Tensor:
    """out (1,) int64 = the first index of logits' (1-D) maximum; the Triton kernel, launched once."""
    if not triton_available():
        raise RuntimeError("argmax: Triton is not installed (use torch.argmax)")
    from roofline.lab.kernels.triton_argmax import argmax_kernel

    if logits.dim() != 1 or out.numel() != 1 or out.dtype != torch.int64:
        raise ValueError(f"argmax: logits {tuple(logits.shape)} -> out {tuple(out.shape)} {out.dtype}")
    n = logits.numel()
    block = min(BLOCK, 1 << max(4, (n - 1).bit_length()))
    argmax_kernel[(1,)](logits, out, n, BLOCK=block, PDL=pdl, num_warps=min(WARPS, max(1, block // 256)),
                        **({"launch_pdl": True} if pdl else {}))
    return out
