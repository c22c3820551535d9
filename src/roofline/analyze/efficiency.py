"""How close to its roof an op runs, learned from measured reports: the device side of the predictor.

An op's efficiency here is its roofline time against the DRAM roof (max(FLOPs / peak of its dtype, bytes / DRAM
bandwidth)) over its measured time. One number per op, whatever bounds it, so a table of them turns any op's
roofline time back into a time: predicted = roofline time / efficiency. Small ops run far from their roof (a
kernel's fixed latency), so the table is keyed by device, op kind, size bucket (the decade of the roofline time)
and dtype, and keeps the quartiles of what it saw. Ops with no work (views, allocations) and unmodelled ops have
no roofline time, and an op under 1 us of it takes a kernel's fixed latency whatever its size: for those the
table keeps the measured time per call instead (buckets ``none`` and ``small``).

The shipped table (analyze/data/efficiency.json) was learned from the committed H200 reports and CPU reports of
this project (benchmarks/learn_efficiency.py); ``learn_table`` + ``save_user_table`` refresh it from a user's own
reports (``roofline predict --learn REPORT...``), and a user's table overrides the shipped one entry by entry.
No torch: predicting from a report file must not need it.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

import msgspec
from msgspec import Struct, field

from roofline.count.families import ATTENTION, CONV, CONV_OTHER, MATMUL, MATVEC, VIEW, op_kind
from roofline.errors import RooflineError
from roofline.io import atomic_write_text
from roofline.report import Ceilings, OpRecord, Report

NO_WORK = "none"
SMALL = "small"
SMALL_S = 1e-6
# Efficiencies above this are cache reuse or counting errors; they are clipped, never learned as they are.
MAX_EFFICIENCY = 4.0
USER_TABLE = "efficiency-table.json"


class Entry(Struct, array_like=True):
    """Quartiles of efficiency (or of time per call in seconds, for buckets ``none`` and ``small``) and how many
    ops they came from."""

    q25: float
    q50: float
    q75: float
    n: int


class EfficiencyTable(Struct):
    """``entries[device][key]``: key is ``kind|bucket|dtype``, ``kind|bucket|16-bit`` (``SHARED_ROOF``), the same
    two of the op's family, ``kind|bucket``, ``family|bucket``, ``*|bucket`` or (views, unmodelled ops) ``family``.
    ``device`` is a device name, or ``cuda``/``cpu`` for the pooled class."""

    entries: dict[str, dict[str, Entry]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    method: str = ""

    def merged(self, other: "EfficiencyTable") -> "EfficiencyTable":
        """This table with ``other``'s entries taking precedence (a user's own reports over the shipped ones)."""
        entries = {dev: dict(keys) for dev, keys in self.entries.items()}
        for dev, keys in other.entries.items():
            entries.setdefault(dev, {}).update(keys)
        return EfficiencyTable(entries, self.sources + other.sources, other.method or self.method)


def family(op: OpRecord) -> str:
    kind = op_kind(op.name)
    if kind in MATMUL or kind in MATVEC:
        return "matmul"
    if kind in CONV or kind in CONV_OTHER or "convolution" in kind:
        return "conv"
    if kind in ATTENTION or "attention" in kind:
        return "attention"
    if kind in VIEW or (op.modeled and op.flops == 0 and op.bytes == 0):
        return "view"
    if not op.modeled:
        return "unmodeled"
    return "memory" if op.flops == 0 or op.bytes and op.flops / op.bytes < 1 else "compute"


def device_class(ceilings: Ceilings) -> str:
    return "cuda" if (ceilings.device or "cpu").startswith("cuda") else "cpu"


def dram_roofline_time_s(op: OpRecord, ceilings: Ceilings) -> float:
    """max(FLOPs / peak of the op's dtype, bytes / DRAM bandwidth): the same roof for every op, cache or not."""
    peak = ceilings.peak_for(op.dtype) if ceilings.peak_flops_per_s else 0.0
    bw = ceilings.memory_bandwidth_bytes_per_s
    return max(op.flops / peak if peak else 0.0, op.bytes / bw if bw else 0.0)


def bucket(roofline_time_s: float) -> str:
    """The decade of the roofline time (``1e-05`` for 10-100 us, at most ``1e-01``); ``small`` under 1 us, where
    a kernel's fixed latency, not its work, sets its time; ``none`` for no work."""
    if roofline_time_s <= 0:
        return NO_WORK
    if roofline_time_s < SMALL_S:
        return SMALL
    return f"1e{min(math.floor(math.log10(roofline_time_s)), -1):03d}"


def keeps_time(key_bucket: str) -> bool:
    """Whether a bucket's entries are times (no work, or too little for the roof to matter), not efficiencies."""
    return key_bucket in (NO_WORK, SMALL)


# Dtypes that share a roof (the tensor cores' 16-bit peak): their kernels' efficiencies pool before any other
# dtype's, whose roof differs (an fp32 matmul's efficiency against the fp32 roof says nothing of a bf16 one's).
SHARED_ROOF = {"bfloat16": "16-bit", "float16": "16-bit"}


def keys(op: OpRecord, rt: float) -> list[str]:
    """Lookup keys, most specific first: the op's dtype's, then its roof-sharing class's (``SHARED_ROOF``), for its
    kind then its family; then any dtype's, for its kind then its family; then ``*|bucket``."""
    b = bucket(rt) if op.modeled else NO_WORK
    kind, fam = op_kind(op.name), family(op)
    shared = SHARED_ROOF.get(op.dtype)
    typed = [k for name in (kind, fam) for k in (f"{name}|{b}|{op.dtype}", f"{name}|{b}|{shared}" if shared else "")
             if k]
    out = typed + [f"{kind}|{b}", f"{fam}|{b}", f"*|{b}"]
    return out + [fam] if fam in ("view", "unmodeled") else out


def is_typed(key: str) -> bool:
    """Whether a key holds one dtype's (or one roof-sharing class's) entries."""
    return key.count("|") == 2


def learn_table(reports: Iterable[tuple[str, Report]], method: str = "") -> EfficiencyTable:
    """Quartiles per (device, key) from every op with a measured time in ``reports`` (label, report) whose
    device has roofs; each op counts once per call (``count``) in its device's entries and its class's."""
    samples: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    sources: list[str] = []
    for label, report in reports:
        ceilings = report.ceilings
        if not ceilings.has_roofs():
            continue
        sources.append(label)
        devices = {ceilings.device_name or device_class(ceilings), device_class(ceilings)}
        for op in report.ops:
            if op.time_s <= 0:
                continue
            calls = max(op.count, 1)
            rt = dram_roofline_time_s(op, ceilings) if op.modeled else 0.0
            small = keeps_time(bucket(rt / calls)) or not op.modeled
            value = op.time_s / calls if small else min(rt / op.time_s, MAX_EFFICIENCY)
            for key in keys(op, rt / calls):
                for dev in devices:
                    samples[dev][key].append(value)
    entries = {dev: {key: _entry(values) for key, values in by_key.items()} for dev, by_key in samples.items()}
    return EfficiencyTable(entries, sources, method or "quartiles of roofline time / measured time per op "
                                                        "(DRAM roof), by device, op kind, decade of roofline time, dtype")


def _entry(values: list[float]) -> Entry:
    ordered = sorted(values)
    if len(ordered) == 1:
        return Entry(ordered[0], ordered[0], ordered[0], 1)
    q = statistics.quantiles(ordered, n=4, method="inclusive")
    return Entry(q[0], q[1], q[2], len(ordered))


def lookup(table: EfficiencyTable, ceilings: Ceilings, op: OpRecord, rt: float) -> Entry | None:
    """The most specific entry for this op, None when none fits. Order: its dtype's entries (``keys``' typed ones:
    kind, then family) on its device's name, then on its class (``cuda``/``cpu``); then any dtype's (kind, family,
    every kind) on the same two. An fp32 matmul on the H200 never takes bf16 kernels' efficiency against a roof
    15x higher while any fp32 matmul of its size was measured (issue 21: HF Llama fp32 seq 512 -> 2048 projected at
    0.77-0.80 of its time on bf16's 0.94 of the roof; benchmarks/results/h200/ete/offline_fp32_efficiency/)."""
    devices = [by_key for by_key in (table.entries.get(ceilings.device_name),
                                     table.entries.get(device_class(ceilings))) if by_key]
    ordered = keys(op, rt)
    for tier in ([k for k in ordered if is_typed(k)], [k for k in ordered if not is_typed(k)]):
        for by_key in devices:
            for key in tier:
                entry = by_key.get(key)
                if entry is not None:
                    return entry
    return None


def shipped_table() -> EfficiencyTable:
    data = resources.files("roofline.analyze").joinpath("data/efficiency.json").read_bytes()
    return msgspec.json.decode(data, type=EfficiencyTable)


def user_table_path() -> Path:
    from roofline.device.cache import cache_dir

    return cache_dir() / USER_TABLE


def load_table(path: str | Path | None = None) -> EfficiencyTable:
    """The shipped table, overridden entry by entry by a user's (``path``, else the one in the cache dir)."""
    table = shipped_table()
    user = Path(path) if path is not None else user_table_path()
    if not user.exists():
        if path is not None:
            raise RooflineError(f"efficiency table not found: {user}")
        return table
    try:
        return table.merged(msgspec.json.decode(user.read_bytes(), type=EfficiencyTable))
    except (msgspec.DecodeError, OSError) as exc:
        raise RooflineError(f"cannot read efficiency table {user}: {exc}") from None


def save_table(table: EfficiencyTable, path: str | Path) -> Path:
    return atomic_write_text(Path(path), msgspec.json.format(msgspec.json.encode(table), indent=1).decode() + "\n")
