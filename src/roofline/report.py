"""The Report: the one versioned, serialisable object between capture and everything else.

Capture and analysis fill a Report; renderers, the doctor's output, diff and the HTML page only read it.
Field names carry their units (``_s`` seconds, ``_bytes``, ``_flops``, ``_per_s``). Names listed in the
foundation issue are stable: tests outside the project read them. A later schema adds fields with defaults,
so reports written by an older version still load.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import gzip
import math
import os
import platform
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from roofline.errors import RooflineError
from roofline.io import atomic_write_bytes

_REPORT_HEAD = re.compile(rb'\s*\{\s*"schema_version"\s*:')

SCHEMA_VERSION = 1

BOUNDS = ("compute", "memory", "launch", "unmodeled", "unknown")


@dataclass(slots=True)
class Environment:
    torch_version: str = ""
    device_name: str = ""
    python_version: str = ""
    command_line: str = ""
    timestamp: str = ""
    platform: str = ""
    hostname: str = ""
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None

    @classmethod
    def capture(cls, device_name: str = "") -> "Environment":
        torch_version = _torch_version()
        return cls(
            torch_version=torch_version,
            device_name=device_name,
            python_version=platform.python_version(),
            command_line=" ".join(sys.argv),
            timestamp=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            platform=platform.platform(),
            hostname=platform.node(),
        )


def _torch_version() -> str:
    """torch's version without importing torch when it is not loaded yet (the trace path never needs it)."""
    module = sys.modules.get("torch")
    if module is not None:
        return str(module.__version__)
    try:
        from importlib.metadata import version

        return version("torch")
    except Exception:  # noqa: BLE001 - metadata missing: not worth failing a report over
        return "unknown"


@dataclass(slots=True)
class DatasheetEntry:
    """A vendor's dense (never with-sparsity) peak figures for one GPU, with where they come from."""

    name: str
    memory_bandwidth_bytes_per_s: float
    peak_flops_per_s: dict[str, float]
    source: str
    memory_bytes: float | None = None


@dataclass(slots=True)
class Ceilings:
    """The device's roofs. Measured ones state how; the datasheet entry, when known, sits beside them.

    ``cache_bandwidth_bytes_per_s`` is the last-level cache's roof and ``cache_bytes`` that cache's size (0: not
    known, as in ceilings written before the cache roof existed and in datasheet ceilings)."""

    device: str = "cpu"
    device_name: str = ""
    memory_bandwidth_bytes_per_s: float = 0.0
    peak_flops_per_s: dict[str, float] = field(default_factory=dict)
    launch_overhead_s: float = 0.0
    launch_overhead_graph_s: float | None = None
    datasheet: DatasheetEntry | None = None
    bandwidth_by_kernel_bytes_per_s: dict[str, float] = field(default_factory=dict)
    source: str = "measured"
    method: str = ""
    torch_version: str = ""
    measured_at: str = ""
    threads: int | None = None
    load_average: list[float] = field(default_factory=list)
    cache_bandwidth_bytes_per_s: float = 0.0
    cache_bytes: int = 0

    def has_roofs(self) -> bool:
        """Whether there is a roofline to judge against: a memory roof and at least one compute roof."""
        return self.memory_bandwidth_bytes_per_s > 0 and bool(self.peak_flops_per_s)

    def peak_for(self, dtype: str) -> float:
        """Peak FLOP/s for an op of this dtype; integer and unknown dtypes fall back to float32's roof."""
        if dtype in self.peak_flops_per_s:
            return self.peak_flops_per_s[dtype]
        return self.peak_flops_per_s.get("float32", max(self.peak_flops_per_s.values(), default=0.0))

    def ridge_point(self, dtype: str) -> float:
        """Arithmetic intensity (FLOP/byte) where the memory roof meets this dtype's compute roof."""
        if self.memory_bandwidth_bytes_per_s <= 0:
            return float("inf")
        return self.peak_for(dtype) / self.memory_bandwidth_bytes_per_s


@dataclass(slots=True)
class OpRecord:
    """One op call in one representative step, joined with its measured device time. ``roof`` names the memory
    roof it was judged against: ``dram``, ``cache`` (served from the last-level cache) or ``cache-unknown``
    (served from cache, no cache roof known); analyze/roofline.py states the rule."""

    name: str
    module: str = ""
    dtype: str = ""
    flops: float = 0.0
    bytes: float = 0.0
    time_s: float = 0.0
    arithmetic_intensity: float = 0.0
    achieved_flops_per_s: float = 0.0
    achieved_bytes_per_s: float = 0.0
    attainable_flops_per_s: float = 0.0
    efficiency: float = 0.0
    bound: str = "unmodeled"
    source: str | None = None
    phase: str = "forward"
    input_shapes: list[list[int]] = field(default_factory=list)
    input_dtypes: list[str] = field(default_factory=list)
    input_strides: list[list[int]] = field(default_factory=list)
    output_shapes: list[list[int]] = field(default_factory=list)
    predicted_time_s: float = 0.0
    above_roof: bool = False
    modeled: bool = True
    kernels: list[str] = field(default_factory=list)
    start_s: float | None = None
    cpu_time_s: float = 0.0
    index: int = 0
    step: int | None = None
    count: int = 1
    external_id: int | None = None
    output_dtypes: list[str] = field(default_factory=list)
    roof: str = "dram"


@dataclass(slots=True)
class KernelRecord:
    """One device-side event (kernel, memcpy, memset) of the representative step, on the report's timeline."""

    name: str
    start_s: float = 0.0
    dur_s: float = 0.0
    stream: int | None = None
    device: int | None = None
    category: str = "kernel"
    op_index: int | None = None


@dataclass(slots=True)
class Finding:
    rule: str
    title: str
    category: str
    evidence: dict[str, Any] = field(default_factory=dict)
    locations: list[str] = field(default_factory=list)
    estimated_savings_s: float = 0.0
    savings_method: str = ""
    fix: str = ""
    severity: str = "warning"
    share_of_time: float | None = None


@dataclass(slots=True)
class SyncSite:
    kind: str
    location: str
    count: int = 0
    stall_s: float = 0.0
    per_step: float | None = None


@dataclass(slots=True)
class LiveTensor:
    bytes: int
    shape: list[int] = field(default_factory=list)
    dtype: str = ""
    op: str = ""
    module: str = ""
    source: str | None = None


@dataclass(slots=True)
class MemorySummary:
    """Memory over the profiled window. ``counter`` names what was counted (allocated vs reserved)."""

    peak_allocated_bytes: int = 0
    peak_reserved_bytes: int | None = None
    counter: str = ""
    peak_live_tensors: list[LiveTensor] = field(default_factory=list)
    timeline: list[list[float]] = field(default_factory=list)
    reference_peak_bytes: int | None = None
    reference_counter: str = ""


@dataclass(slots=True)
class Timing:
    """A timed quantity with every sample kept, so spread can be judged (torch.utils.benchmark's habit)."""

    median_s: float = 0.0
    spread_s: float = 0.0
    n: int = 0
    samples_s: list[float] = field(default_factory=list)
    method: str = ""

    @classmethod
    def from_samples(cls, samples: list[float], method: str) -> "Timing":
        import statistics

        if not samples:
            return cls(method=method)
        ordered = sorted(samples)
        q1, q3 = _quantile(ordered, 0.25), _quantile(ordered, 0.75)
        return cls(statistics.median(ordered), q3 - q1, len(ordered), list(samples), method)


def _quantile(ordered: list[float], q: float) -> float:
    if len(ordered) == 1:
        return ordered[0]
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(slots=True)
class Summary:
    """Totals over the report's ops. Shares are fractions of ``total_time_s`` (the ops' summed time);
    ``wall_time_s`` is the wall-clock span of the profiled steps those ops cover (None when the trace has no steps),
    the fair base for savings that are not op time (launch gaps, syncs, idle)."""

    total_time_s: float = 0.0
    total_flops: float = 0.0
    total_bytes: float = 0.0
    predicted_total_s: float = 0.0
    time_by_bound_s: dict[str, float] = field(default_factory=dict)
    time_by_module_s: dict[str, float] = field(default_factory=dict)
    time_by_op_s: dict[str, float] = field(default_factory=dict)
    unmodeled_time_share: float = 0.0
    kernel_time_attributed_share: float | None = None
    kernel_time_total_s: float | None = None
    idle_time_s: float | None = None
    wall_time_s: float | None = None
    ops_above_roof: int = 0
    timing_method: str = ""
    notes: list[str] = field(default_factory=list)
    stale_ceilings: str | None = None
    share_by_bound: dict[str, float] = field(default_factory=dict)
    ops_from_cache: int = 0

    def fill_shares(self) -> None:
        """share_by_bound for a report written before it was a field (every view reads the field)."""
        if not self.share_by_bound and self.total_time_s:
            self.share_by_bound = {b: t / self.total_time_s for b, t in self.time_by_bound_s.items()}

    @property
    def reference_time_s(self) -> float | None:
        """What findings' shares of time are taken against: the profiled wall time when known, else the ops'
        summed time (which, for launch-bound or merged reports, is not the run's length)."""
        return self.wall_time_s or self.total_time_s or None


@dataclass(slots=True)
class Report:
    schema_version: int = SCHEMA_VERSION
    kind: str = "analyze"
    workload: str = ""
    environment: Environment = field(default_factory=Environment)
    ceilings: Ceilings = field(default_factory=Ceilings)
    ops: list[OpRecord] = field(default_factory=list)
    kernels: list[KernelRecord] = field(default_factory=list)
    summary: Summary = field(default_factory=Summary)
    findings: list[Finding] = field(default_factory=list)
    syncs: list[SyncSite] = field(default_factory=list)
    memory: MemorySummary = field(default_factory=MemorySummary)
    step_time: Timing | None = None
    profiled_step_time: Timing | None = None
    steps: int = 1
    ranks: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; non-finite floats become None (JSON has no NaN or Infinity); an unmodelled
        op's FLOPs, bytes and intensity are None (unknown, never zero)."""
        return finite_for_json(_null_unknown_work(msgspec.to_builtins(self)))

    def _json_bytes(self) -> bytes:
        if all(op.modeled for op in self.ops):
            return msgspec.json.encode(self)
        return msgspec.json.encode(_null_unknown_work(msgspec.to_builtins(self)))

    def to_json(self, indent: int | None = None) -> str:
        """JSON text; non-finite floats become null. msgspec encodes dataclasses directly, which keeps a
        report of 100,000+ ops fast to write (dataclasses.asdict deep-copies every field)."""
        data = self._json_bytes()
        if indent:
            data = msgspec.json.format(data, indent=indent)
        return data.decode()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Report":
        if not isinstance(data, dict) or "schema_version" not in data:
            raise RooflineError("not a roofline report: no schema_version field")
        version = data["schema_version"]
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            raise RooflineError(
                f"report schema_version {version!r} is newer than this roofline understands ({SCHEMA_VERSION}); upgrade roofline"
            )
        try:
            report = _build(cls, data)
        except (TypeError, ValueError, KeyError) as exc:
            raise RooflineError(f"malformed roofline report: {exc}") from None
        report.summary.fill_shares()
        return report

    def save(self, path: str | os.PathLike[str]) -> Path:
        """JSON (gzip-compressed for a .gz name); schema_version is always the first field written."""
        return atomic_write_bytes(path, self._json_bytes())

    @staticmethod
    def is_report_file(path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` holds a roofline report rather than a trace, from its first bytes only (a trace
        can be gigabytes): a report's JSON opens with its schema_version field."""
        try:
            with open(path, "rb") as fh:
                head = fh.read(2)
            opener = gzip.open if head == b"\x1f\x8b" else open
            with opener(path, "rb") as fh:
                head = fh.read(256)
        except (OSError, EOFError):
            return False
        return _REPORT_HEAD.match(head) is not None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Report":
        path = Path(path)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise RooflineError(f"report file not found: {path}") from None
        except OSError as exc:
            raise RooflineError(f"cannot read report {path}: {exc.strerror or exc}") from None
        try:
            if raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
            data = msgspec.json.decode(raw)
        except (OSError, EOFError, UnicodeDecodeError, msgspec.DecodeError) as exc:
            raise RooflineError(f"cannot parse report {path}: {exc}") from None
        return cls.from_dict(data)

    def to_pandas(self):
        """The ops as a pandas DataFrame (one row per op call). Needs pandas."""
        try:
            import pandas as pd
        except ImportError:
            raise RooflineError("to_pandas() needs pandas: pip install pandas") from None
        return pd.DataFrame(msgspec.to_builtins(self.ops))


def finite_for_json(obj: Any) -> Any:
    """Plain data with non-finite floats replaced by None (JSON has no NaN or Infinity)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_for_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_for_json(v) for v in obj]
    return obj


UNKNOWN_WORK_FIELDS = ("flops", "bytes", "arithmetic_intensity")


def _null_unknown_work(data: dict[str, Any]) -> dict[str, Any]:
    """An unmodelled op's work is unknown: null in JSON, not 0 (the report's plain data, changed in place)."""
    for op in data.get("ops") or ():
        if not op.get("modeled", True):
            for name in UNKNOWN_WORK_FIELDS:
                op[name] = None
    return data


def _build(cls: type, data: Any, where: str = "report") -> Any:
    """Rebuild nested dataclasses from plain JSON data, ignoring unknown keys written by newer minor versions.

    Scalar fields are checked against their declared type (a number where a number is meant, never negative for
    counts, FLOPs, bytes and times), so a hand-edited or foreign file fails here in one line, not in a renderer.
    A null where the field is a number (an unmodelled op's FLOPs) takes the field's default."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError(f"{where} is {_shown(data)}, expected an object")
    fields, nested, scalars = _plan(cls)
    kwargs = {name: value for name, value in data.items()
              if name in fields and not (value is None and name in UNKNOWN_WORK_FIELDS)}
    for name, value in kwargs.items():
        kind = scalars.get(name)
        if kind is not None:
            kwargs[name] = _checked(kind, value, f"{where}.{name}", name in _NON_NEGATIVE)
    for name, (many, klass) in nested.items():
        value = kwargs.get(name)
        if value is None:
            continue
        if many:
            if not isinstance(value, list):
                raise ValueError(f"{where}.{name} is {_shown(value)}, expected a list")
            kwargs[name] = [_build(klass, v, f"{where}.{name}[{i}]") for i, v in enumerate(value)]
        else:
            kwargs[name] = _build(klass, value, f"{where}.{name}")
    return cls(**kwargs)


_NON_NEGATIVE = frozenset({"flops", "bytes", "time_s", "cpu_time_s", "predicted_time_s", "dur_s", "stall_s", "count",
                           "steps"})
_SCALAR_KINDS = {"float": float, "int": int, "str": str, "bool": bool}


def _checked(kind: tuple[type, bool], value: Any, where: str, non_negative: bool) -> Any:
    expected, optional = kind
    if value is None:
        if optional or expected is float:  # non-finite floats are written as null
            return None if optional else math.nan
        raise ValueError(f"{where} is null, expected {expected.__name__}")
    if expected is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif expected is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, expected)
    if not ok:
        name = "a number" if expected in (int, float) else expected.__name__
        raise ValueError(f"{where} is {_shown(value)}, expected {name}")
    if non_negative and expected in (int, float) and value < 0:
        raise ValueError(f"{where} is {value}, expected 0 or more")
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"a {type(value).__name__}"


_NESTED: dict[str, type] = {}
_PLANS: dict[type, tuple[frozenset[str], dict[str, tuple[bool, type]], dict[str, tuple[type, bool]]]] = {}


def _plan(cls: type) -> tuple[frozenset[str], dict[str, tuple[bool, type]], dict[str, tuple[type, bool]]]:
    """Per class, once: its field names, which fields hold a nested dataclass (or a list of them), and the
    scalar/list/dict type of the others (with whether None is allowed).

    Loading a report of 100,000+ ops must not re-inspect annotations for every op."""
    plan = _PLANS.get(cls)
    if plan is None:
        nested: dict[str, tuple[bool, type]] = {}
        scalars: dict[str, tuple[type, bool]] = {}
        for f in dataclasses.fields(cls):
            full = str(f.type)
            text = full.removesuffix(" | None")
            for name, klass in _NESTED.items():
                if text == name:
                    nested[f.name] = (False, klass)
                elif text == f"list[{name}]":
                    nested[f.name] = (True, klass)
            if f.name in nested:
                continue
            base = _SCALAR_KINDS.get(text)
            if base is None and text.startswith(("list[", "dict[")):
                base = list if text.startswith("list[") else dict
            if base is not None:
                scalars[f.name] = (base, full != text)
        plan = _PLANS[cls] = (frozenset(f.name for f in dataclasses.fields(cls)), nested, scalars)
    return plan


_NESTED.update(
    {
        "Environment": Environment,
        "DatasheetEntry": DatasheetEntry,
        "Ceilings": Ceilings,
        "OpRecord": OpRecord,
        "Finding": Finding,
        "KernelRecord": KernelRecord,
        "SyncSite": SyncSite,
        "LiveTensor": LiveTensor,
        "MemorySummary": MemorySummary,
        "Timing": Timing,
        "Summary": Summary,
    }
)
