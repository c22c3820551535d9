"""The Triton source of attention.py's second kernel (``version=2``), beside the first for side-by-side timing.

Issue 19: the first kernel takes ~7.6 us a launch on llama-1b's ~300-slot caches, latency rather than bytes.
After the wait for q/k/v, its critical path is: q/k/v, the softmax of the slice, the partials to L2, an atomic
arrival, the last program's load of every live slice's partials, the output. This one ends at the output when a
single program holds every live slot of its KV head (``pos < T_PER_SPLIT``): no partials, no atomic, no merge,
two L2 round trips fewer. Wide slices (128-512 slots, 8 warps, up to 256 slots a block) make that the common case
for short contexts: a program loads its first block (up to 64 KB) before the wait, under the previous kernel's
tail. Past the first slice it is the first kernel (partials and the last program's merge), unchanged.

``L2_PREFETCH``: the grid has extra programs past the KV heads (axis 0) that only ask the L2 for the next
products' first weight bytes (up to three ranges: l2_prefetch.next_weights_ranges) and exit; the bus is idle while
attention runs. ``L2_ISSUE`` False compiles the request out (Triton's interpreter cannot run the instruction).
"""

import triton
import triton.language as tl

from roofline.lab.kernels.triton_attention import _first_block, _publish, _slice_softmax, _write_out
from roofline.lab.kernels.triton_gemv import gdc_launch_dependents, gdc_wait
from roofline.lab.kernels.triton_l2 import prefetch_range


@triton.jit
def decode_attention_v2_kernel(QKV, KC, VC, COS, SIN, POS, OUT, PARTIAL, COUNTERS, scale, max_seq,
                               Q_HEADS: tl.constexpr, KV_HEADS: tl.constexpr, GROUP: tl.constexpr,
                               GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr, HALF: tl.constexpr,
                               BLOCK_T: tl.constexpr, T_PER_SPLIT: tl.constexpr, SPLITS: tl.constexpr,
                               GROUP_POW2: tl.constexpr, SPLIT_BLOCK: tl.constexpr, PDL: tl.constexpr,
                               EARLY_LAUNCH: tl.constexpr = False, PF_A=0, PF_A_BYTES=0, PF_B=0, PF_B_BYTES=0,
                               PF_C=0, PF_C_BYTES=0,
                               L2_PREFETCH: tl.constexpr = False, L2_ISSUE: tl.constexpr = False,
                               PF_CHUNK: tl.constexpr = 32768, PF_LANES: tl.constexpr = 128):
    dt = KC.dtype.element_ty
    if PDL and EARLY_LAUNCH:  # the next kernel (a product: weights only before its wait) may start with this one
        gdc_launch_dependents()
    kh = tl.program_id(0)
    sp = tl.program_id(1)
    if L2_PREFETCH:
        if kh >= KV_HEADS:  # a prefetch program: no wait (weights only), no attention
            if L2_ISSUE:
                program = (kh - KV_HEADS) * tl.num_programs(1) + sp
                programs = (tl.num_programs(0) - KV_HEADS) * tl.num_programs(1)
                prefetch_range(PF_A, PF_A_BYTES, program, programs, PF_CHUNK, PF_LANES)
                prefetch_range(PF_B, PF_B_BYTES, program, programs, PF_CHUNK, PF_LANES)
                prefetch_range(PF_C, PF_C_BYTES, program, programs, PF_CHUNK, PF_LANES)
            return
    pos = tl.load(POS).to(tl.int32)  # int32 like the slots, so the block loop's slots keep one type
    own = pos // T_PER_SPLIT
    if sp > own:
        return
    cache, t, k1, k2, v, c, s = _first_block(KC, VC, COS, SIN, kh, sp, pos, max_seq, HEAD_DIM, HALF, BLOCK_T,
                                             T_PER_SPLIT)
    if PDL:
        gdc_wait()
        if not EARLY_LAUNCH:
            gdc_launch_dependents()
    m, l, acc = _slice_softmax(QKV, KC, VC, kh, sp, own, pos, cache, t, k1, k2, v, c, s, scale, Q_HEADS, KV_HEADS,
                               GROUP, GROUP_PAD, HEAD_DIM, HALF, BLOCK_T, T_PER_SPLIT, dt)
    if own == 0:  # one live slice: this program holds the whole softmax, nothing to merge
        _write_out(OUT, kh, l, acc, GROUP, GROUP_PAD, HEAD_DIM, dt)
    else:
        _publish(PARTIAL, OUT, COUNTERS, kh, sp, own, m, l, acc, KV_HEADS, SPLITS, GROUP, GROUP_PAD, GROUP_POW2,
                 HEAD_DIM, SPLIT_BLOCK, dt)
