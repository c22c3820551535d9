"""Running one step under Nsight Compute: finding ncu, choosing the metrics it has, profiling a child process.

The child (``python -m roofline.cli._ncu_step SPEC.json``) builds the same workload, warms it up and runs one step
between cudaProfilerStart/Stop, so ncu (``--profile-from-start off``) sees exactly one step's kernels.
``--clock-control none`` keeps the GPU's own clocks (the timed pass ran at them); caches are flushed before each
kernel (ncu's default), so DRAM bytes are each kernel's own. Returns ncu's CSV text; nothing is parsed here.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from roofline.capture.ncu_metrics import METRIC_SETS
from roofline.errors import RooflineError

CORE = frozenset(METRIC_SETS["dram"])

NCU_TIMEOUT_S = 1200
QUERY_TIMEOUT_S = 60
_SEARCH = ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda/bin/ncu", "/usr/local/cuda*/bin/ncu",
           "/usr/local/cuda*/nsight-compute*/ncu")


@dataclass(slots=True)
class NcuRun:
    csv_text: str
    metrics: list[str]
    command: list[str]
    notes: list[str] = field(default_factory=list)


def find_ncu() -> str:
    """ncu's path: $ROOFLINE_NCU, then PATH, then the usual install folders (newest version first)."""
    explicit = os.environ.get("ROOFLINE_NCU")
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise RooflineError(f"ROOFLINE_NCU={explicit} is not an executable file")
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in _SEARCH:
        hits = sorted(glob.glob(pattern), reverse=True)
        hits = [h for h in hits if os.access(h, os.X_OK)]
        if hits:
            return hits[0]
    raise RooflineError("--ncu needs Nsight Compute's `ncu`: not on PATH nor in /opt/nvidia/nsight-compute or "
                        "/usr/local/cuda (install Nsight Compute, or set ROOFLINE_NCU=/path/to/ncu)")


def available_metrics(ncu: str, wanted: list[str]) -> tuple[list[str], list[str]]:
    """(kept, dropped): the wanted metrics whose base name this GPU's ncu lists. All are kept when the query fails
    or names none of them (output not understood); the DRAM bytes and duration are never dropped."""
    try:
        out = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=QUERY_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return list(wanted), []
    known = {line.split()[0] for line in out.stdout.splitlines() if line.strip() and "__" in line.split()[0]}
    if out.returncode != 0 or not known:
        return list(wanted), []
    listed = [m for m in wanted if m.split(".", 1)[0] in known]
    if not listed:
        return list(wanted), []
    kept = [m for m in wanted if m in listed or m in CORE]
    return kept, [m for m in wanted if m not in kept]


def profile_step(spec: dict, metrics: list[str], *, max_kernels: int | None = None,
                 fallback: list[str] | None = None, timeout_s: float = NCU_TIMEOUT_S) -> NcuRun:
    """Run the workload ``spec`` describes (the arguments of ``load_target`` plus warm-up and backward) for one
    step under ncu and return its CSV. With ``fallback``, a failed run is retried once with those metrics."""
    ncu = find_ncu()
    notes: list[str] = []
    kept, dropped = available_metrics(ncu, metrics)
    if dropped:
        notes.append(f"this GPU's ncu does not list {', '.join(dropped)}: not collected")
    with tempfile.TemporaryDirectory(prefix="roofline-ncu-") as tmp:
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps(spec))
        try:
            result = _run(ncu, kept, spec_path, max_kernels, timeout_s)
        except RooflineError as exc:
            if not fallback or fallback == kept:
                raise
            notes.append(f"ncu failed with {len(kept)} metrics ({exc}); retried with {', '.join(fallback)}")
            result = _run(ncu, fallback, spec_path, max_kernels, timeout_s)
    csv_text, used, cmd, returncode, last = result
    if returncode != 0:
        notes.append(f"ncu exited with {returncode} after writing its table ({last})")
    return NcuRun(csv_text, used, cmd, notes)


def ncu_command(ncu: str, metrics: list[str], spec_path: Path, max_kernels: int | None) -> list[str]:
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--metrics", ",".join(metrics), "--csv"]
    if max_kernels:
        cmd += ["--launch-count", str(max_kernels)]
    return cmd + [sys.executable, "-m", "roofline.cli._ncu_step", str(spec_path)]


def _run(ncu: str, metrics: list[str], spec_path: Path, max_kernels: int | None,
         timeout_s: float) -> tuple[str, list[str], list[str], int, str]:
    cmd = ncu_command(ncu, metrics, spec_path, max_kernels)
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=_child_env())
    except subprocess.TimeoutExpired:
        raise RooflineError(f"ncu did not finish within {timeout_s:g} s (pass --ncu-max-kernels N to profile fewer "
                            "kernels, or --ncu-metrics dram for fewer replay passes)") from None
    except OSError as exc:
        raise RooflineError(f"cannot run {ncu}: {exc.strerror or exc}") from None
    # The table is on ncu's stdout; stderr is searched too, in case a build writes it through the target's streams.
    text = out.stdout if '"Kernel Name"' in out.stdout else out.stdout + "\n" + out.stderr
    if '"Kernel Name"' not in text:
        raise RooflineError(f"ncu profiled no kernel (exit {out.returncode}): {_why(out.stdout + out.stderr)}")
    return text, metrics, cmd, out.returncode, _why(out.stdout + out.stderr)


def _child_env() -> dict[str, str]:
    """The child finds this roofline (PYTHONPATH carries the package's folder) whatever the caller's sys.path."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    return env


def _why(text: str) -> str:
    """The most telling line of a failed run: ncu's ==ERROR== line, the child's last error, or the last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for marker in ("==ERROR==", "roofline: error:", "Error", "error"):
        hits = [line for line in lines if marker in line]
        if hits:
            return hits[-1][:300]
    return lines[-1][:300] if lines else "no output"
