"""Hand-written batch-1 decode kernels (Triton) and their torch twins.

A batch-1 decode step is a chain of matrix-vector products over weights read once per token; at 1-23 MB a
product is a few microseconds, so launch tails, too few programs and the small kernels between products
(norms, RoPE, cache writes, residual adds) decide how close the step gets to the memory roof. ``gemv`` fuses the
RMSNorm before a product and the residual add or SiLU*mul after it, with split-K for short outputs;
``decode_attention`` fuses RoPE, the KV-cache write and attention over the cache (split over the sequence).
Each has a torch twin with the same roundings, used where Triton cannot run and as the tests' oracle.
"""

from __future__ import annotations

import importlib
import os


def triton_available() -> bool:
    """Triton is importable (kernels run on CUDA tensors, or anywhere under TRITON_INTERPRET=1)."""
    try:
        importlib.import_module("triton")
    except Exception:  # noqa: BLE001 - any import failure means: use the torch twins
        return False
    return True


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
