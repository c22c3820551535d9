"""The ceilings cache (per device and torch version, in the user's cache directory) and ceilings by GPU name.

Needs no torch: `roofline trace` reads ceilings for a GPU it only knows by name.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import msgspec

from roofline.device.datasheet import lookup_datasheet, with_datasheet_cache
from roofline.errors import RooflineError
from roofline.io import atomic_write_text
from roofline.report import Ceilings, describe_invalid, from_builtins


def cache_dir() -> Path:
    """$ROOFLINE_CACHE_DIR, else $XDG_CACHE_HOME/roofline, else ~/.cache/roofline."""
    if os.environ.get("ROOFLINE_CACHE_DIR"):
        return Path(os.environ["ROOFLINE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:  # no $HOME and no home in the password database (a bare container user)
            raise RooflineError("no home directory for the ceilings cache: set ROOFLINE_CACHE_DIR to a writable "
                                "folder") from None
    return Path(base) / "roofline"


def check_cache_writable(path: str | os.PathLike[str]) -> None:
    """Refuse, before a measurement of seconds to minutes, a cache folder its result could not be saved in."""
    folder = Path(path).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        writable = os.access(folder, os.W_OK | os.X_OK)
    except OSError as exc:
        problem = exc.strerror or str(exc)
    else:
        if writable:
            return
        problem = "Permission denied"
    raise RooflineError(f"cannot write the ceilings cache {folder}: {problem}; set ROOFLINE_CACHE_DIR to a "
                        "writable folder")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower()


def cache_path(name: str, torch_version: str | None = None, quick: bool = False) -> Path:
    if torch_version is None:
        import torch

        torch_version = str(torch.__version__)
    version = torch_version
    suffix = "-quick" if quick else ""
    return cache_dir() / f"ceilings-{_slug(name)}-torch{_slug(version)}{suffix}.json"


def remeasure_command(ceilings: Ceilings) -> str:
    """The exact command that measures these ceilings again on the machine they describe."""
    device = ceilings.device or "cpu"
    quick = " --quick" if "(quick)" in ceilings.source else ""
    return f"roofline ceilings --device {device} --remeasure{quick}"


def save_ceilings(ceilings: Ceilings, path: str | os.PathLike[str]) -> Path:
    return atomic_write_text(Path(path), msgspec.json.format(msgspec.json.encode(ceilings), indent=1).decode() + "\n")


def load_ceilings(path: str | os.PathLike[str], *, missing_ok: bool = False) -> Ceilings | None:
    """Ceilings from a JSON file (`roofline ceilings --json` output, or a report's `ceilings` block)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        if missing_ok:
            return None
        raise RooflineError(f"ceilings file not found: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        if missing_ok:
            return None
        raise RooflineError(f"cannot read ceilings file {path}: {exc}") from None
    if isinstance(data, dict) and "ceilings" in data and "schema_version" in data:
        data = data["ceilings"]
    if not isinstance(data, dict) or "memory_bandwidth_bytes_per_s" not in data:
        if missing_ok:
            return None
        raise RooflineError(f"{path} holds no ceilings (no memory_bandwidth_bytes_per_s field)")
    try:
        ceilings = from_builtins(Ceilings, data)
    except msgspec.ValidationError as exc:
        if missing_ok:
            return None
        raise RooflineError(f"malformed ceilings file {path}: {describe_invalid(exc, data, 'the file')}") from None
    problem = unusable_roof(ceilings)
    if problem:
        if missing_ok:
            return None
        raise RooflineError(f"malformed ceilings file {path}: {problem}")
    return ceilings


def unusable_roof(ceilings: Ceilings) -> str | None:
    """What makes a roof unusable (NaN, infinite or negative: JSON allows NaN and Infinity), else None. Zero is
    allowed: a roof not known (a report's ceilings block for an unnamed device)."""
    roofs = {"memory_bandwidth_bytes_per_s": ceilings.memory_bandwidth_bytes_per_s,
             **{f"peak_flops_per_s.{dtype}": value for dtype, value in (ceilings.peak_flops_per_s or {}).items()}}
    for name, value in roofs.items():
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            return f"{name} is {value!r}, expected a finite number, 0 or more"
    launch = ceilings.launch_overhead_s
    if not (isinstance(launch, (int, float)) and math.isfinite(launch) and launch >= 0):
        return f"launch_overhead_s is {launch!r}, expected a finite number, 0 or more"
    return None


def cached_ceilings(name: str | None, *, allow_quick: bool = False) -> Ceilings | None:
    """Measured ceilings of a device by name from the cache (never measures), full ones before quick ones."""
    if not name:
        return None
    quick = None
    for candidate in sorted(cache_dir().glob(f"ceilings-{_slug(name)}-torch*.json"), reverse=True):
        cached = load_ceilings(candidate, missing_ok=True)
        if cached is None:
            continue
        if not cached.source.endswith("(quick)"):
            return cached
        quick = quick or cached
    return quick if allow_quick else None


def ceilings_for_device_name(name: str | None) -> Ceilings | None:
    """Ceilings for a device seen only by name (e.g. in a trace): a measured cache entry, else the datasheet."""
    if not name:
        return None
    cached = cached_ceilings(name)
    if cached is not None:
        return cached
    sheet = lookup_datasheet(name)
    if sheet is None:
        return None
    return with_datasheet_cache(Ceilings(
        device="cuda",
        device_name=name,
        memory_bandwidth_bytes_per_s=sheet.memory_bandwidth_bytes_per_s,
        peak_flops_per_s=dict(sheet.peak_flops_per_s),
        launch_overhead_s=5e-6,
        datasheet=sheet,
        source="datasheet",
        method=f"datasheet peaks ({sheet.source}); launch overhead assumed 5 us (not measured on this GPU)",
    ))
