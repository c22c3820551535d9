"""The products after attention (wo + residual, RMSNorm + stacked gate/up + SiLU*mul, w2 + residual) as ONE
persistent kernel a layer, host side (issue 19).

Each of the three gemv kernels pays a start and a drain (llama-1b: wo 3.5 us for 8.4 MB, 2.4 TB/s). Here a grid
of a few programs per multiprocessor walks its row blocks of the three phases in turn with a grid-wide barrier
between them (an int32 counter in global memory: release adds, acquire reads). Each program keeps the next unit's
weights in flight while it sums one, and between its arrival at a barrier and its wait there it issues the loads of
its first weights of the next phase: the weights never depend on the previous phase (only the activation vector
and the norm do), so the memory bus stays busy across the phase boundary as deep prefetch keeps it busy across
kernels under PDL. After the wo phase every program recomputes RMSNorm's 1/rms from h in global memory (2,048
values, from the L2).

Co-residency (a spinning program must not keep a waiting one from starting): the grid is at most the device's
multiprocessors times the programs of this compiled kernel that fit on one at once (``resident_programs``: its
registers, shared memory and warps against the multiprocessor's, and no more than the CUDA driver's occupancy
query says for it). Under PDL the kernel lets the next kernel start only after its last barrier, when every program
of the grid has started, and the kernels before it (all their programs started before it was launched) never wait
on it, so they only delay its programs. As a safety net a program that spins ``SPIN_LIMIT`` reads without seeing
the barrier's count sets the error flag and goes on (wrong results, never a hang); ``PersistentState.failed``
reads it and the step's users check it.

``phased=True`` launches the same code once per phase (PHASE 1, 2, 3) with no barrier: the mode Triton's
interpreter can run (it runs programs one after another), checked against the torch twin on CPU.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from roofline.lab.kernels import triton_available
from roofline.lab.kernels.gemv import _pow2_at_least, gemv_torch

SPIN_LIMIT = 1 << 20  # barrier reads (each an L2 round trip, ~1 us) before a program gives up and flags it
ASSUMED_SMS = 132  # the H200's, where no device says (CPU, the interpreter)


@dataclass(frozen=True)
class PersistentConfig:
    """Rows per block and K per chunk of each phase, warps, and programs asked for per multiprocessor (capped by
    what fits: resident_programs)."""

    wo: tuple[int, int] = (2, 2048)
    w13: tuple[int, int] = (2, 2048)
    w2: tuple[int, int] = (2, 2048)
    num_warps: int = 8
    per_sm: int = 1
    evict_first: bool = False

    def as_dict(self) -> dict:
        found = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in found.items()}

    @classmethod
    def from_dict(cls, found: dict) -> "PersistentConfig":
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in found.items()})


# (rows per block, K per chunk, warps) for all three phases: a unit (one block's chunk; both halves for w13) is
# 2-16 KB of fp16, one unit in flight beyond the one being summed, 16-32 fp16 a thread per half.
# (4, 1024, 8), (4, 2048, 8) and (1, 2048, 4) spill on sm_90 (benchmarks/decode_kernels_sm90.py --persistent).
TILES = ((2, 1024, 4), (2, 2048, 8), (2, 512, 4), (1, 2048, 8), (4, 512, 4))
PER_SM = (1, 2, 4, 8)  # asked for; a 4-warp tile at 48 registers fits 10 a multiprocessor, an 8-warp one at 58 fits 4


def candidate_configs(dim: int, ffn: int, k_attn: int | None = None) -> list[PersistentConfig]:
    """TILES at each PER_SM, K chunks no wider than each phase's K (rounded up to a power of two)."""
    k_attn = k_attn or dim
    found = []
    for block_n, block_k, warps in TILES:
        def tile(k, n=block_n, b=block_k):
            return n, min(b, _pow2_at_least(k))
        for per_sm in PER_SM:
            found.append(PersistentConfig(tile(k_attn), tile(dim), tile(ffn), warps, per_sm))
    return list(dict.fromkeys(found))


class PersistentState:
    """Each launch slot's barrier counter (0 between launches) and the error flag every launch shares."""

    SLOT_STRIDE = 32  # int32s between two slots' counters: each 128-byte aligned (one Triton specialisation for all)

    def __init__(self, device: torch.device, slots: int) -> None:
        self.slots = max(1, slots)
        self.sync = torch.zeros(self.slots * self.SLOT_STRIDE, dtype=torch.int32, device=device)
        self.error = torch.zeros(1, dtype=torch.int32, device=device)
        self.resident: dict[tuple, int] = {}  # compiled kernel -> programs one multiprocessor holds

    def counter(self, slot: int) -> torch.Tensor:
        if not 0 <= slot < self.slots:
            raise ValueError(f"persistent_mlp: slot {slot} of {self.slots}")
        return self.sync[slot * self.SLOT_STRIDE:slot * self.SLOT_STRIDE + 1]

    def failed(self) -> bool:
        """A barrier gave up (its results are wrong) since the last reset; synchronises."""
        return bool(self.error.item())

    def reset(self) -> None:
        self.sync.zero_()
        self.error.zero_()


def persistent_mlp_torch(wo, w13, w2, o, h, m, gamma, eps: float) -> torch.Tensor:
    """The torch twin: gemv_torch's three products (the eager model's ops), h and m updated in place."""
    gemv_torch(wo, o, h, residual=h.clone())
    gemv_torch(w13, h, m, halves=2, norm_weight=gamma, eps=eps)
    return gemv_torch(w2, m, h, residual=h.clone())


def resident_programs(n_regs: int, shared: int, num_warps: int, props) -> int:
    """Programs of a kernel one multiprocessor holds at once: by registers (allocated per warp in 256s, a warp's
    from one of the four quarters of the register file), threads, shared memory and the 32-block limit."""
    regs_per_sm = getattr(props, "regs_per_multiprocessor", 65536) or 65536
    threads = getattr(props, "max_threads_per_multi_processor", 2048) or 2048
    smem = getattr(props, "shared_memory_per_multiprocessor", 233472) or 233472
    per_warp = -(-max(1, n_regs) * 32 // 256) * 256
    warps_by_regs = 4 * ((regs_per_sm // 4) // per_warp)
    fit = min(32, threads // 32 // num_warps, warps_by_regs // num_warps)
    if shared:
        fit = min(fit, smem // (shared + 1024))
    return max(0, fit)


def persistent_mlp(wo: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, o: torch.Tensor, h: torch.Tensor,
                   m: torch.Tensor, gamma: torch.Tensor, *, eps: float, config: PersistentConfig,
                   state: PersistentState, slot: int = 0, pdl: bool = False, phased: bool = False,
                   spin_limit: int = SPIN_LIMIT) -> torch.Tensor:
    """h += wo o; m = SiLU(gate) * up of w13 RMSNorm(h); h += w2 m, in one launch (``phased``: three, no barrier).
    The kernel's name has "gemv" in it, so roofline's kernel classes count it with the matrix products.

    ``slot``: this launch's barrier counter in ``state`` (one per launch of a step: each must be back at 0 when its
    launch starts, which the kernel's last program makes sure of)."""
    dim, k_attn = wo.shape
    ffn = w13.shape[0] // 2
    if (w13.shape != (2 * ffn, dim) or w2.shape != (dim, ffn) or o.numel() != k_attn or h.numel() != dim
            or m.numel() != ffn or gamma.numel() != dim or not all(t.is_contiguous() for t in (wo, w13, w2))):
        raise ValueError(f"persistent_mlp: wo {tuple(wo.shape)} w13 {tuple(w13.shape)} w2 {tuple(w2.shape)} "
                         f"o {tuple(o.shape)} h {tuple(h.shape)} m {tuple(m.shape)}")
    kernel = _kernel()
    consts = constexprs(config, dim, k_attn, ffn, pdl)
    args = (wo, w13, w2, o, h, m, gamma, state.counter(slot), state.error, dim, k_attn, ffn, eps, spin_limit)
    launch = {"num_warps": config.num_warps, **({"launch_pdl": True} if pdl else {})}
    if phased:
        programs = grid_size(config, None, h.device)
        for phase in (1, 2, 3):
            kernel[(programs,)](*args, PHASE=phase, **consts, **launch)
        return h
    programs = grid_size(config, _resident(kernel, args, consts, launch, state, config), h.device)
    kernel[(programs,)](*args, PHASE=0, **consts, **launch)
    return h


def constexprs(config: PersistentConfig, dim: int, k_attn: int, ffn: int, pdl: bool) -> dict:
    """The kernel's compile-time arguments but PHASE, in its parameter order: the launch's, and the sm_90 compile
    check's (benchmarks/decode_kernels_sm90.py), so that check builds what the step launches."""
    consts = {"PDL": pdl, "NORM_BLOCK": _pow2_at_least(dim)}
    for i, ((block_n, block_k), k) in enumerate(((config.wo, k_attn), (config.w13, dim), (config.w2, ffn)), 1):
        consts.update({f"BN{i}": block_n, f"BK{i}": block_k, f"KT{i}": -(-k // block_k), f"EK{i}": k % block_k == 0})
    consts["EVICT_FIRST"] = config.evict_first
    return consts


def grid_size(config: PersistentConfig, resident: int | None, device: torch.device) -> int:
    """Programs of the grid: the multiprocessors times config.per_sm, capped at ``resident`` a multiprocessor."""
    sms = (torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda"
           else ASSUMED_SMS)
    per_sm = config.per_sm if resident is None else min(config.per_sm, resident)
    if per_sm < 1:
        raise RuntimeError("persistent_mlp: not one program of this kernel fits on a multiprocessor")
    return sms * per_sm


def _resident(kernel, args, consts, launch, state: PersistentState, config: PersistentConfig) -> int | None:
    """Programs of the compiled PHASE 0 kernel one multiprocessor holds (compiled, not launched, the first time)."""
    h = args[4]
    if h.device.type != "cuda":
        return None
    key = (h.device.index, config.num_warps, *sorted(consts.items()))
    if key not in state.resident:
        compiled = kernel.warmup(*args, PHASE=0, **consts, **launch, grid=(1,))
        init = getattr(compiled, "_init_handles", None)
        if init is not None:
            init()
        shared = int(getattr(compiled.metadata, "shared", 0) or 0) if hasattr(compiled, "metadata") else 0
        fit = resident_programs(int(compiled.n_regs), shared, config.num_warps,
                                torch.cuda.get_device_properties(h.device))
        driver = driver_occupancy(getattr(compiled, "function", None), 32 * config.num_warps, shared)
        state.resident[key] = fit if driver is None else min(fit, driver)
    return state.resident[key]


def driver_occupancy(function, threads: int, shared: int) -> int | None:
    """The CUDA driver's own count (cuOccupancyMaxActiveBlocksPerMultiprocessor) of the compiled kernel's programs
    one multiprocessor holds; None where it cannot be asked. The grid takes the smaller of it and
    resident_programs', so a mistake in either never makes the grid larger than what fits."""
    if not function:
        return None
    try:
        import ctypes

        lib = ctypes.CDLL("libcuda.so.1")
        found = ctypes.c_int(0)
        rc = lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(found), ctypes.c_void_p(int(function)),
                                                             ctypes.c_int(threads), ctypes.c_size_t(shared))
    except Exception:  # noqa: BLE001 - no driver library here: the computed count alone
        return None
    return found.value if rc == 0 else None


def _kernel():
    if not triton_available():
        raise RuntimeError("persistent_mlp: Triton is not installed (use persistent_mlp_torch)")
    from roofline.lab.kernels.triton_persistent import persistent_gemv_kernel

    return persistent_gemv_kernel
