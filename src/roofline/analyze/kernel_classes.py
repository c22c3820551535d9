"""A step's device time by kernel class: matrix products, attention, everything else, and the gaps between kernels.

Why: a memory-bound loop (batch-1 decode above all) that stays under its roof is either running slow kernels or
leaving the GPU idle between fast ones, and the two need different fixes (a better matrix-vector kernel, or
fewer launches: fusion, CUDA graphs, programmatic dependent launch). Each class's achieved bandwidth (its ops'
modelled bytes over their kernels' time) says which class is slow; the gaps say what the launches cost.

A kernel's class comes from the op that launched it when that op is a matrix product or attention (every kernel
of an eager SDPA is attention, its batched products included), and otherwise from the kernel's name: Inductor's
kernels by the ops their names list (templates and reductions over an mm are matrix products, those over a bmm
or softmax attention; pointwise kernels are other, whatever they fuse), library and hand-written kernels by the
usual words (gemm/gemv/cutlass/nvjet, flash/fmha/attention). Pure: reads the Report's ops and kernels only.
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import lru_cache
from operator import attrgetter

import numpy as np

from roofline.analyze.communication import is_communication_kernel, is_communication_op
from roofline.count.families import ATTENTION, MATMUL, MATVEC, op_kind
from roofline.count.inductor import kernel_kind_and_ops
from roofline.report import Ceilings, KernelClasses, KernelClassTime, KernelRecord, OpRecord, Report

MATRIX = "matrix products"
ATTENTION_CLASS = "attention"
OTHER = "other"
COMMUNICATION = "communication"
CLASSES = (MATRIX, ATTENTION_CLASS, OTHER, COMMUNICATION)
_CODE = {cls: code for code, cls in enumerate(CLASSES)}

_MATMUL_NAME = re.compile(r"gemm|gemv|nvjet|cutlass|xmma|splitk|sm\d+_xmma", re.I)
_ATTENTION_NAME = re.compile(r"flash|fmha|attention|sdpa", re.I)
_INDUCTOR_MATMULS = {"mm", "addmm", "_addmm_activation"}

METHOD = (
    "each kernel counted from where the kernels before it ended (overlapping kernels, as under programmatic "
    "dependent launch, not counted twice), per profiled step; class from the launching op (matrix products, "
    "attention) or else the kernel's name (Inductor's fused op names, gemm/gemv/flash/attention); bandwidth = the "
    "class's ops' modelled minimum bytes / those ops' kernel time; gaps = each profiled step's first kernel start "
    "to its last kernel end, summed, less the time any kernel ran (the host's time between steps is not a gap)"
)


@lru_cache(maxsize=8192)
def op_class(name: str) -> str | None:
    """The class an op's own name gives (None: let its kernels' names decide)."""
    if is_communication_op(name):
        return COMMUNICATION
    kind = op_kind(name)
    if kind in MATMUL or kind in MATVEC:
        return MATRIX
    if kind in ATTENTION:
        return ATTENTION_CLASS
    return None


@lru_cache(maxsize=8192)
def kernel_class(name: str) -> str:
    """The class of a kernel from its name alone (memoised: a trace launches the same few hundred kernels
    thousands of times, and the regexes were a sixth of `roofline trace` on a 1 M-event trace)."""
    if is_communication_kernel(name):
        return COMMUNICATION
    kind, ops = kernel_kind_and_ops(name)
    if kind:
        fused = set(ops)
        if kind in ("tem", "mm", "bmm") or (kind in ("red", "per") and fused & _INDUCTOR_MATMULS):
            return MATRIX
        if kind in ("red", "per") and fused & {"bmm", "baddbmm", "softmax", "_softmax"}:
            return ATTENTION_CLASS
        return OTHER
    if _ATTENTION_NAME.search(name):
        return ATTENTION_CLASS
    if _MATMUL_NAME.search(name):
        return MATRIX
    return OTHER


def kernel_classes(report: Report, *, known_bytes: dict[str, float] | None = None, bytes_method: str = "",
                   per_step: int = 1, unit: str = "step",
                   ceilings_by_device: dict[int, Ceilings] | None = None) -> KernelClasses | None:
    """The report's device time per step by kernel class, or None for a report without device kernels.

    ``per_step``/``unit``: each profiled step did ``per_step`` units of work (a decode loop's tokens), and every
    figure is given per unit. ``known_bytes``: bytes per unit a caller knows a class moves (a hand-written
    kernel's weights, which no counted op carries), used for that class instead of its ops' modelled bytes;
    ``bytes_method`` says where they come from. ``ceilings_by_device`` (default: the report's,
    ``Report.ceilings_by_device()``): where one process drove GPUs of different models, each GPU's roofs; a class's
    share of roof is then its bytes over what its kernels' time could have moved, each kernel's time at its own
    GPU's bandwidth (a kernel on no known device at the report's)."""
    kernels = sorted((k for k in report.kernels if k.category == "kernel"), key=lambda k: k.start_s)
    if not kernels:
        return None
    steps = max(1, report.steps) * max(1, per_step)
    ops = report.ops
    by_device = report.ceilings_by_device() if ceilings_by_device is None else ceilings_by_device
    bandwidth = report.ceilings.memory_bandwidth_bytes_per_s
    # Bytes each op's kernels (and each class's) could have moved at their own GPUs' roofs: only with GPUs of
    # different roofs (one GPU's share stays achieved / bandwidth, the same float as before).
    roof_of = {d: c.memory_bandwidth_bytes_per_s for d, c in by_device.items()} if by_device else None
    sweep = _Sweep(kernels, ops, roof_of, bandwidth)
    codes, own = sweep.codes, sweep.own
    present, first = np.unique(codes, return_index=True)
    seen = present[np.argsort(first)].tolist()  # classes in the order their first kernel ran, as summed before

    def by_class(values: np.ndarray) -> dict[str, float]:
        return {CLASSES[c]: float(t) for c, t in zip(seen, _sums_by(codes, values)[seen])}

    time, raw, class_roof_bytes = by_class(own), by_class(sweep.dur), by_class(sweep.at_roof)
    count = defaultdict(int, {CLASSES[c]: int(n) for c, n in zip(seen, np.bincount(codes)[seen])})
    has_op = sweep.has_op
    op_of, class_of, own_of, roof_bytes_of = sweep.op_index[has_op], codes[has_op], own[has_op], sweep.at_roof[has_op]
    moved, moved_time, moved_roof = _moved_by_class(ops, op_of, class_of, own_of, roof_bytes_of)
    known = known_bytes or {}
    rows = []
    for cls in CLASSES:
        if not count[cls]:
            continue
        if cls in known:
            nbytes, over, at_roof = known[cls] * steps, time[cls], class_roof_bytes[cls]
        else:
            nbytes, over, at_roof = (moved[cls], moved_time[cls], moved_roof[cls]) if moved[cls] > 0 \
                else (None, 0.0, 0.0)
        achieved = nbytes / over if nbytes is not None and over > 0 else None
        if roof_of is None:
            share = achieved / bandwidth if achieved is not None and bandwidth > 0 else None
        else:
            share = nbytes / at_roof if achieved is not None and at_roof > 0 else None
        rows.append(KernelClassTime(
            name=cls, time_s=time[cls] / steps, kernels=count[cls] / steps,
            overlapped_s=_overlap(raw[cls], time[cls]) / steps,
            bytes=None if nbytes is None else nbytes / steps, bytes_time_s=over / steps,
            achieved_bytes_per_s=achieved,
            share_of_roof=share))
    busy = sum(time.values())
    devices = sorted({k.device for k in kernels}, key=lambda d: (d is None, d or 0))
    span = sum(_step_spans([k for k in kernels if k.device == d] if len(devices) > 1 else kernels, report.ops)
               for d in devices)
    method = METHOD + (f"; {len(devices)} GPUs in one process: each GPU's kernels swept on their own, times and "
                       "spans summed over the GPUs (GPU-seconds)" if len(devices) > 1 else "") \
        + ("; communication (NCCL) kernels swept apart from the compute they overlap, so class times can add up to "
           "more than the span; gaps = time no kernel of either ran" if count[COMMUNICATION] else "") \
        + (f"; {bytes_method}" if bytes_method else "") \
        + ("; share of roof with each kernel's time at its own GPU's memory bandwidth ("
           + ", ".join(f"device {d} {c.device_name or '?'} {c.memory_bandwidth_bytes_per_s / 1e12:.3g} TB/s"
                       for d, c in sorted(by_device.items())) + ")" if roof_of is not None else "")
    return KernelClasses(
        classes=rows, kernel_time_s=busy / steps, span_s=span / steps, gaps_s=max(0.0, span - sweep.busy) / steps,
        overlapped_s=_overlap(sum(raw.values()), busy) / steps, kernels=len(kernels) / steps, steps=max(1, report.steps),
        bandwidth_bytes_per_s=bandwidth, method=method, unit=unit, per_step=max(1, per_step))


def _moved_by_class(ops: list[OpRecord], op_of: np.ndarray, class_of: np.ndarray, own_of: np.ndarray,
                    roof_bytes_of: np.ndarray) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Each modelled op's bytes, its kernels' own time and their bytes at roof, credited to the class its kernels
    spent the most own time in (a tie: the class of its first such kernel), from one row per kernel in start order.
    Sums run in kernel order and ops in first-kernel order (cumsum adds in order), so the figures are the same
    floats as op by op; no Python object per op (issue 23's peak)."""
    moved: dict[str, float] = defaultdict(float)
    moved_time: dict[str, float] = defaultdict(float)
    moved_roof: dict[str, float] = defaultdict(float)
    if not len(op_of):
        return moved, moved_time, moved_roof
    op, own = op_of, own_of
    n = len(CLASSES)
    pairs, first, pair_of = np.unique(op * n + class_of, return_index=True,
                                      return_inverse=True)
    pair_time = np.bincount(pair_of, weights=own)
    pair_op = pairs // n
    order = np.lexsort((first, -pair_time, pair_op))
    leader_class = (pairs % n)[order[np.r_[True, pair_op[order][1:] != pair_op[order][:-1]]]]
    ops_seen, op_first, row_of = np.unique(op, return_index=True, return_inverse=True)
    op_time = np.bincount(row_of, weights=own)
    op_roof = np.bincount(row_of, weights=roof_bytes_of)
    n_ops = len(ops)
    op_bytes = np.fromiter(map(attrgetter("bytes"), ops), dtype=np.float64, count=n_ops)
    modeled = np.fromiter(map(attrgetter("modeled"), ops), dtype=bool, count=n_ops)
    inside = (ops_seen >= 0) & (ops_seen < n_ops)
    at = np.where(inside, ops_seen, 0)
    keep = inside & modeled[at] & (op_bytes[at] > 0)
    by_first = np.argsort(op_first, kind="stable")
    by_first = by_first[keep[by_first]]
    chosen = leader_class[by_first]
    for code, cls in enumerate(CLASSES):
        rows = by_first[chosen == code]
        if len(rows):
            moved[cls] = float(np.cumsum(op_bytes[ops_seen[rows]])[-1])
            moved_time[cls] = float(np.cumsum(op_time[rows])[-1])
            moved_roof[cls] = float(np.cumsum(op_roof[rows])[-1])
    return moved, moved_time, moved_roof


class _Sweep:
    """The kernels (in start order) as columns, each kernel's class code and own time: its end less where the
    kernels before it on its lane had ended (a lane: a device's compute, or its communication), never below 0; and
    ``busy``, the time any kernel ran, per device, summed. Vectorised: 60,000 kernels of a big trace took 0.1 s as a
    loop. The covered ends are running maxima that skip NaN (fmax), as the loop's comparisons did, and every sum
    adds in kernel order (bincount, cumsum), so the figures are the same floats."""

    def __init__(self, kernels: list[KernelRecord], ops: list[OpRecord], roof_of: dict[int, float] | None,
                 bandwidth: float) -> None:
        indexes = list(map(attrgetter("op_index"), kernels))
        self.codes = _class_codes(kernels, ops, indexes)
        start = np.fromiter(map(attrgetter("start_s"), kernels), dtype=np.float64, count=len(kernels))
        self.dur = np.fromiter(map(attrgetter("dur_s"), kernels), dtype=np.float64, count=len(kernels))
        end = start + self.dur
        devices = list(map(attrgetter("device"), kernels))
        device_codes = _codes(devices)
        comm = self.codes == _CODE[COMMUNICATION]
        self.own = _own_times(start, end, device_codes * 2 + comm)
        busy = _own_times(start, end, device_codes)
        self.busy = float(np.cumsum(busy)[-1]) if len(busy) else 0.0  # cumsum adds in order, as the loop did
        if roof_of is None:
            self.at_roof = np.zeros(len(kernels))
        else:
            self.at_roof = self.own * np.array([roof_of.get(d, bandwidth) for d in devices], dtype=np.float64)
        self.has_op = np.fromiter((i is not None for i in indexes), dtype=bool, count=len(indexes))
        self.op_index = np.array([-1 if i is None else i for i in indexes], dtype=np.int64)


def _class_codes(kernels: list[KernelRecord], ops: list[OpRecord], indexes: list[int | None]) -> np.ndarray:
    """Each kernel's class (its code in CLASSES), worked out once per op name and once per kernel name."""
    n_ops = len(ops)
    by_op: dict[str, int | None] = {}
    by_kernel: dict[str, int] = {}
    codes = []
    for index, kernel in zip(indexes, kernels):
        code = None
        if index is not None and 0 <= index < n_ops:
            name = ops[index].name
            code = by_op.get(name, -1)
            if code == -1:
                cls = op_class(name)
                code = by_op[name] = None if cls is None else _CODE[cls]
        if code is None:
            code = by_kernel.get(kernel.name)
            if code is None:
                code = by_kernel[kernel.name] = _CODE[kernel_class(kernel.name)]
        codes.append(code)
    return np.array(codes, dtype=np.int8)


def _codes(values: list) -> np.ndarray:
    """A small integer per distinct value (None among them), in the values' positions."""
    index: dict = {}
    return np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values))


def _own_times(start: np.ndarray, end: np.ndarray, lanes: np.ndarray) -> np.ndarray:
    """Each kernel's end less the later of its start and the latest end of the kernels before it on its lane,
    0 where that is not positive (NaN included)."""
    covered = np.full(len(start), -np.inf)
    for lane in np.unique(lanes):
        at = np.flatnonzero(lanes == lane)
        ends = end[at]
        covered[at[1:]] = np.fmax.accumulate(ends)[:-1]
    own = end - np.where(covered > start, covered, start)
    return np.where(own > 0.0, own, 0.0)


def _sums_by(codes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` summed per code, each sum in the values' order (bincount adds one after another)."""
    return np.bincount(codes, weights=values, minlength=len(CLASSES))


def _overlap(raw: float, counted: float) -> float:
    """Kernel time that ran under an earlier kernel: what the sweep did not count, less float rounding (a sum of
    durations and a sum of differences of large timestamps differ by ~1e-16 of them where nothing overlapped)."""
    over = raw - counted
    return over if over > 1e-9 * raw else 0.0


def _step_spans(kernels: list[KernelRecord], ops: list[OpRecord]) -> float:
    """Sum over profiled steps of first kernel start to last kernel end. A kernel's step is its op's; one whose
    op has none (no op, or a report of one step) belongs to the step of the kernel before it."""
    spans: dict[int | None, list[float]] = {}
    step = None
    n_ops = len(ops)
    for k in kernels:
        index = k.op_index
        if index is not None and 0 <= index < n_ops:
            op_step = ops[index].step
            if op_step is not None:
                step = op_step
        start = k.start_s
        end = start + k.dur_s
        lo_hi = spans.get(step)
        if lo_hi is None:
            spans[step] = [start, end]
            continue
        if start < lo_hi[0]:
            lo_hi[0] = start
        if end > lo_hi[1]:
            lo_hi[1] = end
    return sum(hi - lo for lo, hi in spans.values())
