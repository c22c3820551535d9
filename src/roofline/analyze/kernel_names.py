"""What a kernel's name says about how it computed: which fp32 GEMM/conv kernels ran on TF32 tensor cores.

cuBLAS, cuDNN and CUTLASS name their TF32 kernels: ``cutlass_80_tensorop_s1688gemm*`` (fp32 in and out through
16x8x8 TF32 MMAs), ``*_tf32*``, ``sm80_xmma_*tf32*``; ``ampere_sgemm*``, ``volta_sgemm*`` and ``*scudnn*`` are
plain fp32 (SIMT) kernels.
"""

from __future__ import annotations

import functools
import re

_TF32 = re.compile(r"tf32|tensorop_s1688|_s1688gemm|s1688(?:fprop|dgrad|wgrad)", re.I)


@functools.lru_cache(maxsize=8192)
def is_tf32_kernel(name: str) -> bool:
    return _TF32.search(name) is not None


def any_tf32(kernels: list[str]) -> bool:
    return any(is_tf32_kernel(k) for k in kernels)
