"""Nsight Compute's CSV output read into per-kernel counters (no torch, no ncu needed).

Two layouts are read: the details page (``ncu --csv --metrics ...``, the default: one row per kernel and metric,
with "Metric Name", "Metric Unit" and "Metric Value" columns) and the raw page (``ncu --csv --page raw``: one row
per kernel, one column per metric, a second row of units). ncu's own ``==PROF==``/``==WARNING==`` lines and any
output of the profiled program are skipped. Values are converted to bytes, seconds and percent.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from roofline.errors import RooflineError
from roofline.io import read_maybe_gzip

_BYTE_UNITS = {"byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
               "kibyte": 2.0**10, "mibyte": 2.0**20, "gibyte": 2.0**30}
_TIME_UNITS = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3,
               "second": 1.0, "s": 1.0}
_FIXED_COLUMNS = ("ID", "Kernel Name")


@dataclass(slots=True)
class NcuKernel:
    """One profiled kernel launch: ncu's sequence number, its (demangled) name and its metrics by ncu name, in
    bytes, seconds, percent or the metric's own unit."""

    id: int
    name: str
    metrics: dict[str, float] = field(default_factory=dict)
    stream: str = ""
    grid: str = ""
    block: str = ""


def read_ncu_csv(path: str | Path) -> list[NcuKernel]:
    """The kernels of an ncu CSV file (plain or .gz), in ncu's launch order."""
    text = read_maybe_gzip(path, "ncu CSV").decode("utf-8", errors="replace")
    return parse_ncu_csv(text, str(path))


def parse_ncu_csv(text: str, where: str = "ncu output") -> list[NcuKernel]:
    rows = _csv_rows(text)
    if not rows:
        raise RooflineError(f"{where} holds no ncu CSV table (expected `ncu --csv` output with an \"ID\" and a "
                            "\"Kernel Name\" column); did ncu profile any kernel?")
    header, body = rows[0], rows[1:]
    if "Metric Name" in header and "Metric Value" in header:
        kernels = _details(header, body)
    else:
        kernels = _raw(header, body)
    if not kernels:
        raise RooflineError(f"{where}: the ncu CSV table has a header but no kernel rows")
    return kernels


def _csv_rows(text: str) -> list[list[str]]:
    """The CSV table's rows from the header on; lines that are not quoted CSV (ncu's messages, the program's
    prints) are dropped."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    for i, row in enumerate(rows):
        if all(col in row for col in _FIXED_COLUMNS):
            width = len(row)
            return [row] + [r for r in rows[i + 1:] if len(r) == width]
    return []


def _details(header: list[str], body: list[list[str]]) -> list[NcuKernel]:
    col = {name: i for i, name in enumerate(header)}
    kernels: dict[int, NcuKernel] = {}
    for row in body:
        kid = _int(row[col["ID"]])
        if kid is None:
            continue
        kernel = kernels.get(kid)
        if kernel is None:
            kernel = kernels[kid] = _kernel(kid, row, col)
        unit = row[col["Metric Unit"]] if "Metric Unit" in col else ""
        value = _value(row[col["Metric Value"]], unit)
        if value is not None:
            kernel.metrics[row[col["Metric Name"]]] = value
    return [kernels[k] for k in sorted(kernels)]


def _raw(header: list[str], body: list[list[str]]) -> list[NcuKernel]:
    """The raw page: a units row follows the header (its ID cell is empty)."""
    col = {name: i for i, name in enumerate(header)}
    units = [""] * len(header)
    if body and _int(body[0][col["ID"]]) is None:
        units, body = body[0], body[1:]
    fixed = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
             "Grid Size", "Device", "CC"}
    kernels = []
    for row in body:
        kid = _int(row[col["ID"]])
        if kid is None:
            continue
        kernel = _kernel(kid, row, col)
        for i, name in enumerate(header):
            if name in fixed or not name:
                continue
            value = _value(row[i], units[i])
            if value is not None:
                kernel.metrics[name] = value
        kernels.append(kernel)
    kernels.sort(key=lambda k: k.id)
    return kernels


def _kernel(kid: int, row: list[str], col: dict[str, int]) -> NcuKernel:
    def cell(name: str) -> str:
        return row[col[name]] if name in col else ""

    return NcuKernel(kid, cell("Kernel Name"), stream=cell("Stream"), grid=cell("Grid Size"), block=cell("Block Size"))


def _int(text: str) -> int | None:
    try:
        return int(text.replace(",", ""))
    except ValueError:
        return None


def _value(text: str, unit: str) -> float | None:
    """A metric value in base units (bytes, seconds); percent and counts as written. n/a and blanks: None."""
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    unit = unit.strip().lower()
    if unit in _BYTE_UNITS:
        return value * _BYTE_UNITS[unit]
    if unit in _TIME_UNITS:
        return value * _TIME_UNITS[unit]
    return value
