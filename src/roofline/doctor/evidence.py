"""Reading a Report's evidence the same way in every rule: op kinds, dtypes, layouts, roofline times, locations.

Op names arrive spelled several ways ('aten::add_', 'aten.add.Tensor', 'add'); dtypes too ('float16',
'torch.float16', 'c10::Half', 'Half'). Everything here normalises them, so rules compare like with like.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple, TypeVar

import numpy as np

from roofline.count.families import (ATTENTION, CONV, HOST_READ, MATMUL, VIEW,  # noqa: F401 - op_kind re-exported
                                     op_kind, repeats_read_by_host)
from roofline.count.meta import canonical_dtype, dtype_itemsize
from roofline.doctor.op_table import KernelTable, OpTable
from roofline.report import Ceilings, OpRecord, Report

T = TypeVar("T")

HALF_DTYPES = ("float16", "bfloat16")

# The op families are count/families.py's (one table for analysis and the doctor).
MATMUL_KINDS, CONV_KINDS, ATTENTION_KINDS = MATMUL, CONV, ATTENTION

# Ops that move no data: count/families.py's VIEW (count's own view marks, and allocations).
VIEW_KINDS = VIEW

ELEMENTWISE_KINDS = frozenset({
    "add", "sub", "mul", "div", "neg", "pow", "rsqrt", "sqrt", "exp", "log", "tanh", "sigmoid", "silu", "gelu",
    "relu", "clamp", "clamp_min", "clamp_max", "abs", "cos", "sin", "reciprocal", "where", "masked_fill", "erf",
    "softplus", "hardtanh", "leaky_relu", "elu", "mish", "hardswish", "square", "maximum", "minimum", "fill",
    "threshold", "addcmul", "addcdiv", "lerp", "exp2", "log1p", "expm1", "sign", "rsub", "_to_copy", "to",
    "dropout", "native_dropout", "bitwise_and", "logical_and", "eq", "ne", "lt", "gt", "le", "ge", "tril", "triu",
})
NORM_KINDS = frozenset({"mean", "sum", "var", "var_mean", "std", "softmax", "_softmax", "log_softmax", "_log_softmax",
                        "layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm", "group_norm",
                        "native_group_norm", "batch_norm", "native_batch_norm", "_native_batch_norm_legit_no_training",
                        "amax", "amin", "max", "min", "norm", "linalg_vector_norm"})

SYNC_KINDS = HOST_READ


def waits_for_data(op: OpRecord) -> bool:
    """Whether an op of a SYNC_KINDS kind makes the host read a value (count/families.repeats_read_by_host)."""
    return op_kind(op.name) != "repeat_interleave" or repeats_read_by_host(op.input_shapes, op.input_dtypes)


norm_dtype = functools.lru_cache(maxsize=256)(canonical_dtype)
itemsize = dtype_itemsize


def numel(shape: Sequence[int] | None) -> int:
    if not shape:
        return 0
    return math.prod(int(d) for d in shape)


def tensor_bytes(shape: Sequence[int] | None, dtype: str | None) -> float:
    return float(numel(shape) * itemsize(dtype))


def input_dtype(op: OpRecord, i: int) -> str:
    return norm_dtype(op.input_dtypes[i]) if i < len(op.input_dtypes) else ""


def output_dtype(op: OpRecord) -> str:
    """The first output's dtype: recorded when the capture gives it, else the op's own dtype."""
    outs = getattr(op, "output_dtypes", None) or []
    if outs:
        return norm_dtype(outs[0])
    return norm_dtype(op.dtype)


_TENSOR_INPUTS: dict[tuple[int, int, int], list[tuple[list[int], str, list[int]]]] = {}


def tensor_inputs(op: OpRecord) -> list[tuple[list[int], str, list[int]]]:
    """(shape, dtype, strides) for each input that is a tensor of at least one dimension (read-only lists).

    Reports share argument lists between identical calls, and every rule asks again: within one diagnose()
    the answer is memoised by those lists' identities (cleared by ``clear_caches`` so ids are never reused)."""
    key = (id(op.input_shapes), id(op.input_dtypes), id(op.input_strides))
    found = _TENSOR_INPUTS.get(key)
    if found is None:
        dtypes, strides = op.input_dtypes, op.input_strides
        nd, ns = len(dtypes), len(strides)
        found = _TENSOR_INPUTS[key] = [
            (shape, norm_dtype(dtypes[i]) if i < nd else "", (strides[i] or []) if i < ns else [])
            for i, shape in enumerate(op.input_shapes)
            if shape and isinstance(shape, (list, tuple))
        ]
    return found


def clear_caches() -> None:
    _TENSOR_INPUTS.clear()
    _ORDERED.clear()
    _PER_REPORT.clear()
    _PER_OPS.clear()


_ORDERED: dict[int, tuple[list[OpRecord], list[OpRecord]]] = {}
_ordering_memoised = False


_PER_REPORT: dict[tuple[str, int], tuple[Report, object]] = {}


def once_per_diagnose(evidence: Callable[[Report], T]) -> Callable[[Report], T]:
    """A read-only view of the report that several rules ask for, computed once within memoised() (and on every
    call outside it). The rules must not change what it returns."""

    @functools.wraps(evidence)
    def memo(report: Report) -> T:
        if not _ordering_memoised:
            return evidence(report)
        key = (evidence.__qualname__, id(report))
        hit = _PER_REPORT.get(key)
        if hit is not None and hit[0] is report:
            return hit[1]
        value = evidence(report)
        _PER_REPORT[key] = (report, value)
        return value

    return memo


@contextlib.contextmanager
def memoised() -> Iterator[None]:
    """Within it (one diagnose()), the report's run order is computed once for every rule that asks (seven do: a
    pass over every op each time, a fifth of the doctor on a 127,620-op report); caches are cleared on both ends."""
    global _ordering_memoised
    clear_caches()
    _ordering_memoised = True
    try:
        yield
    finally:
        _ordering_memoised = False
        clear_caches()


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Row-major contiguity, ignoring size-1 dimensions; unknown strides count as contiguous (no evidence)."""
    if not strides or len(strides) != len(shape):
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def is_dense_permutation(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """A non-contiguous view that is a permutation of a dense tensor: a transposed or permuted layout.

    Broadcast (stride 0) and sliced views are not: copying them is not a layout fix.
    """
    if not strides or len(strides) != len(shape) or is_contiguous(shape, strides):
        return False
    dims = [(s, n) for n, s in zip(shape, strides) if n != 1]
    if any(s <= 0 for s, _ in dims):
        return False
    expected = 1
    for stride, size in sorted(dims):
        if stride != expected:
            return False
        expected *= size
    return True


def blas_compatible(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether a matmul operand can be read in place: each matrix row- or column-major, batches evenly strided."""
    if not strides or len(strides) != len(shape) or len(shape) < 2 or is_contiguous(shape, strides):
        return True
    rows, cols = shape[-2], shape[-1]
    rs, cs = strides[-2], strides[-1]
    row_major = cols == 1 or (cs == 1 and (rows == 1 or rs >= cols))
    col_major = rows == 1 or (rs == 1 and (cols == 1 or cs >= rows))
    if not (row_major or col_major):
        return False
    batch = [(n, s) for n, s in zip(shape[:-2], strides[:-2]) if n != 1]
    if len(batch) <= 1:
        return True
    for (outer_n, outer_s), (inner_n, inner_s) in zip(batch, batch[1:]):
        if outer_s != inner_n * inner_s:
            return False
    return True


def matmul_operands(op: OpRecord) -> tuple[list[int], list[int], int, int] | None:
    """(activation shape, weight shape, activation input index, weight input index) of a matmul-like op."""
    kind = op_kind(op.name)
    shapes = op.input_shapes
    if kind in ("addmm", "baddbmm", "addbmm", "_addmm_activation"):
        a_i, b_i = 1, 2
    elif kind in MATMUL_KINDS or kind in ATTENTION_KINDS:
        a_i, b_i = 0, 1
    else:
        return None
    if len(shapes) <= max(a_i, b_i):
        return None
    a, b = shapes[a_i], shapes[b_i]
    if not a or not b:
        return None
    if kind == "linear":
        b = list(reversed(b)) if len(b) == 2 else b
    return list(a), list(b), a_i, b_i


def op_bytes(op: OpRecord) -> float:
    """The op's bytes as counted by the analysis, else its tensor inputs read once and first output written once."""
    if op.bytes > 0:
        return op.bytes
    reads = sum(tensor_bytes(shape, dtype) for shape, dtype, _ in tensor_inputs(op))
    out = op.output_shapes[0] if op.output_shapes else []
    return reads + tensor_bytes(out, output_dtype(op) or (op.input_dtypes[0] if op.input_dtypes else ""))


def rows(shape: Sequence[int]) -> int:
    """The work items of an activation: the product of every dimension but the last (tokens x batch)."""
    return numel(shape[:-1]) if len(shape) >= 2 else 1


@once_per_diagnose
def ceilings_by_op(report: Report) -> dict[int, Ceilings]:
    """The roofs of each op that ran on a GPU of its own model (one process driving GPUs of different models):
    its GPU's, the device its kernels spent most time on (the analysis's choice, analyze/pipeline.py); empty
    when the report's ceilings are every op's."""
    by_device = report.ceilings_by_device()
    if not by_device:
        return {}
    time: dict[int, dict[int, float]] = {}
    for k in report.kernels:
        if k.op_index is not None and k.device is not None:
            on = time.setdefault(k.op_index, {})
            on[k.device] = on.get(k.device, 0.0) + k.dur_s
    found = {}
    for index, on in time.items():
        device = max(on.items(), key=lambda kv: (kv[1], -kv[0]))[0]
        roofs = by_device.get(device)
        if roofs is not None and roofs.memory_bandwidth_bytes_per_s > 0:
            found[index] = roofs
    return found


def ceilings_of(report: Report, op: OpRecord | None) -> Ceilings:
    """The roofs ``op`` is judged against: its own GPU's where the report holds each GPU's
    (Report.ceilings_by_device), else the report's."""
    if op is None:
        return report.ceilings
    return ceilings_by_op(report).get(op.index, report.ceilings)


def bandwidth_of(report: Report, op: OpRecord | None) -> float:
    """The memory bandwidth ``op``'s bytes move at: its own GPU's (ceilings_of)."""
    return ceilings_of(report, op).memory_bandwidth_bytes_per_s


def roofline_time(report: Report, op: OpRecord) -> float:
    """The op's time at the roof: the analysis's prediction when present, else flops/peak vs bytes/bandwidth."""
    if op.predicted_time_s > 0:
        return op.predicted_time_s
    return roofline_time_of(report, op.flops, op.bytes, norm_dtype(op.dtype) or "float32", op)


def roofline_time_of(report: Report, flops: float, nbytes: float, dtype: str, op: OpRecord | None = None) -> float:
    """``flops`` and ``nbytes`` at the roofs of ``op``'s own GPU (ceilings_of), else the report's."""
    c = ceilings_of(report, op)
    compute = flops / c.peak_for(dtype) if flops > 0 and c.peak_for(dtype) > 0 else 0.0
    memory = nbytes / c.memory_bandwidth_bytes_per_s if nbytes > 0 and c.memory_bandwidth_bytes_per_s > 0 else 0.0
    return max(compute, memory)


def has_roofs(report: Report) -> bool:
    return report.ceilings.has_roofs()


def is_gpu_report(report: Report) -> bool:
    device = (report.ceilings.device or "").lower()
    return device.startswith(("cuda", "xpu")) or any(k.category == "kernel" for k in report.kernels)


def device_not_recorded(report: Report) -> bool:
    """A GPU drove the ops but the trace holds none of its activity (analyze/unused_gpu.py say_device_not_recorded):
    the op times are the host's launch times, so no rule may read them as the work's."""
    return bool(report.extra.get("device_not_recorded")) if isinstance(report.extra, dict) else False


def is_cpu_report(report: Report) -> bool:
    """A run on the CPU alone: its device is the CPU and no device kernel ran (an MPS or HPU run is neither)."""
    device = (report.ceilings.device or "").lower().split(":")[0]
    return device == "cpu" and not is_gpu_report(report)


def torch_device(report: Report) -> str:
    """torch's name for the report's device type, for advice with code in it (``device='xpu'`` on an Intel GPU):
    ``xpu``, ``mps``, ``hpu`` or ``cuda`` (NVIDIA, and AMD under ROCm, which torch also calls cuda)."""
    found = report.extra.get("device") if isinstance(report.extra, dict) else None
    if isinstance(found, dict):
        vendor, kind = found.get("vendor"), found.get("kind")
        if vendor == "intel":
            return "xpu" if kind == "gpu" else "hpu"
        if vendor == "apple":
            return "mps"
    device = (report.ceilings.device or "").lower().split(":")[0]
    return device if device in ("xpu", "mps", "hpu") else "cuda"


# Whose runtime a GPU report's lazy initialisation and launches are, in advice ("CUDA's lazy initialisation").
_RUNTIMES = {"cuda": "CUDA", "xpu": "the XPU runtime", "mps": "Metal", "hpu": "the HPU runtime"}


def device_runtime(report: Report) -> str:
    """The runtime a report's device runs on, for advice: CUDA (NVIDIA; HIP for AMD under ROCm), the XPU runtime
    on an Intel GPU, ..."""
    found = report.extra.get("device") if isinstance(report.extra, dict) else None
    if isinstance(found, dict) and found.get("vendor") == "amd":
        return "HIP"
    return _RUNTIMES[torch_device(report)]


def generic_module(module: str) -> str:
    """'model.layers.3.attn' -> 'model.layers.*.attn', 'Model_0.Layer_5.Norm_11' -> 'Model.Layer.Norm':
    one name for the same code in every layer."""
    text = re.sub(r"(?<=\.)\d+(?=\.|$)|^\d+(?=\.|$)", "*", module or "")
    return re.sub(r"_\d+(?=\.|$)", "", text)


def is_aten_like(op: OpRecord) -> bool:
    """An op of the aten vocabulary, not a compiled (Triton/Inductor) kernel or a profiler annotation."""
    kind = op_kind(op.name)
    return not (kind.startswith("triton") or kind.startswith("Torch-Compiled") or "Backward" in kind)


def location(op: OpRecord) -> str:
    """'file.py:42 (layers.0.attn)': where the user's code made the op, and which module ran it."""
    if op.source and op.module:
        return f"{op.source} ({op.module})"
    return op.source or op.module or op.name


def top_locations(ops: Iterable[OpRecord], limit: int = 5) -> list[str]:
    """Distinct locations, the most time-consuming first.

    Time is summed per (source, module) pair, each location written once per pair: a rule hands in up to 51,000
    ops, and writing and hashing each one's 130-character location cost more than the rule. Pairs that write the
    same location (a source of "" or None) are summed again per location, op by op, as ``location`` has it."""
    ops = ops if isinstance(ops, (list, tuple)) else list(ops)
    weight: dict[tuple[str, str] | str, float] = {}
    for op in ops:
        source, module = op.source, op.module
        key = (source, module) if source or module else op.name
        weight[key] = weight.get(key, 0.0) + op.time_s
    by_location = {_location_of(key): time for key, time in weight.items()}
    if len(by_location) < len(weight):
        by_location = {}
        for op in ops:
            loc = location(op)
            by_location[loc] = by_location.get(loc, 0.0) + op.time_s
    return [loc for loc, _ in sorted(by_location.items(), key=lambda kv: -kv[1])][:limit]


def _location_of(key: tuple[str, str] | str) -> str:
    """``location`` of the ops ``top_locations`` summed under ``key``."""
    if isinstance(key, str):
        return key
    source, module = key
    return f"{source} ({module})" if source and module else (source or module)


def ordered_ops(report: Report) -> list[OpRecord]:
    """The ops in the order they ran (step, then start time or recorded index); a new list each call."""
    ops = report.ops
    if _ordering_memoised:
        hit = _ORDERED.get(id(ops))
        if hit is not None and hit[0] is ops and len(hit[1]) == len(ops):
            return list(hit[1])
    order = [ops[i] for i in run_positions(report)]
    if _ordering_memoised:
        _ORDERED[id(ops)] = (ops, order)
        return list(order)
    return order


def run_positions(report: Report) -> Sequence[int]:
    """The positions in report.ops of the ops in the order they ran (``ordered_ops``' order); read-only."""
    return op_table(report).run


def op_table(report: Report) -> OpTable:
    """The ops as columns and distinct calls (doctor/op_table.py), once for every rule of one diagnose()."""
    return _per_ops(report, "table", lambda r: OpTable(r.ops))


def _per_ops(report: Report, what: str, build: Callable[[Report], T]) -> T:
    """Memoised within memoised() for the report's op list as long as it holds the same number of ops."""
    ops = report.ops
    if not _ordering_memoised:
        return build(report)
    hit = _PER_OPS.get((what, id(ops)))
    if hit is not None and hit[0] is ops and hit[1] == len(ops):
        return hit[2]
    value = build(report)
    _PER_OPS[(what, id(ops))] = (ops, len(ops), value)
    return value


_PER_OPS: dict[tuple[str, int], tuple[list[OpRecord], int, object]] = {}


class StepSpans(NamedTuple):
    """The ops with a host start time, per step (steps in the order they first appear among those ops): each
    step's earliest start and latest host end (start + the longer of cpu_time_s and time_s), and its ops'
    positions in report.ops, ascending (``positions[bounds[g]:bounds[g + 1]]`` for step ``steps[g]``)."""

    steps: list[int | None]
    earliest_start: np.ndarray
    latest_end: np.ndarray
    positions: np.ndarray
    bounds: np.ndarray


@once_per_diagnose
def step_spans(report: Report) -> StepSpans:
    table = op_table(report)
    start, cpu_time, time = table.float_fields("start_s", "cpu_time_s", "time_s")
    timed = np.flatnonzero(~np.isnan(start))
    steps, group, by_step = table.step_groups(timed)
    if not steps:
        empty = np.zeros(0)
        return StepSpans([], empty, empty, by_step, np.zeros(1, dtype=np.int64))
    cpu, dev = cpu_time[by_step], time[by_step]
    begin = start[by_step]
    end = begin + np.where(dev > cpu, dev, cpu)
    bounds = np.flatnonzero(np.diff(group)) + 1
    heads = np.concatenate(([0], bounds))
    return StepSpans(steps, np.minimum.reduceat(begin, heads), np.maximum.reduceat(end, heads), by_step,
                     np.concatenate((heads, [len(by_step)])))


@once_per_diagnose
def kernel_table(report: Report) -> KernelTable:
    return KernelTable(report.kernels)


def step_count(report: Report, ops: Iterable[OpRecord] | None = None) -> int:
    """How many steps the ops span: distinct op.step values, else one representative step."""
    steps = {op.step for op in (report.ops if ops is None else ops) if op.step is not None}
    return max(len(steps), 1)


def total_time(report: Report) -> float:
    if report.summary.total_time_s > 0:
        return report.summary.total_time_s
    return sum(op.time_s for op in report.ops)


def device_time_share(report: Report, seconds: float) -> float:
    total = total_time(report)
    return seconds / total if total > 0 else 0.0


def severity_for(report: Report, savings_s: float) -> str:
    """'critical' from a fifth of the step, 'warning' from 2%, else 'info'; of the time every view shows a
    finding's share of (``Summary.reference_time_s``: the profiled wall time when known), so a row's severity and
    its "of time" agree (against the ops' summed time, a GPU idle most of the step made a 0.4% saving critical)."""
    base = report.summary.reference_time_s or total_time(report)
    share = savings_s / base if base > 0 else 0.0
    if share >= 0.2:
        return "critical"
    if share >= 0.02:
        return "warning"
    return "info"
