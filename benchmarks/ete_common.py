"""What benchmarks/ete.py (the GPU run) and benchmarks/ete_offline.py (its re-prediction on a CPU) share: the bands,
the report file names, the statistics, and the paired comparison of a what-if. No torch: ete_offline.py imports it
on a machine without one, and ete.py's import of torch takes seconds.

A what-if's source and target are timed back to back within each repeat (their order alternating between repeats),
so the host's level, which on the lent H200 moved by up to 2x within seconds (benchmarks/results/h200/ete/rounds/
DIAGNOSIS.md), is nearly the same for both timings of a repeat. Their ratio, target over source, is then a
measurement of what the change did with the host's level mostly cancelled; the prediction's counterpart is the
projected target over the same source report's unchanged prediction. Both come from the source's report only: the
target's measurement never enters a prediction.
"""

from __future__ import annotations

import statistics
import tarfile
import zlib
from pathlib import Path

WITHIN = (0.85, 1.15)
WHATIF_WITHIN = (0.8, 1.25)


# A device run returns at most 8 files under OUT, each at most 16 MiB (64 MiB in all): the reports go in xz parts
# under this size, and OUT keeps at most this many files (ete.json, ete.md, the command's log, traces, parts).
PART_LIMIT = 15 * 2**20
MAX_OUT_FILES = 7
PART_GLOB = "reports.part*.tar.xz"
# 43 MB of one run's reports: preset 3 in 4.3 s to 2.0 MB, preset 6 in 10.1 s to 1.8 MB (this machine)
XZ_PRESET = 3


def pack_reports(files: list[Path], out: Path, limit: float = PART_LIMIT,
                 max_parts: int = 4) -> tuple[list[Path], list[str]]:
    """``files`` as OUT/reports.partNN.tar.xz (arcname reports/NAME), each under ``limit`` bytes, at most
    ``max_parts`` of them; returns the parts and the names left out (the list also goes in the last part as
    reports/NOT_KEPT.txt). Grouped in order by each file's gzip size (xz of a group, solid, stays under the sum of
    its members' gzip sizes on JSON), then checked: a part over the limit is split in two and written again."""
    sizes = [len(zlib.compress(f.read_bytes(), 6)) + 512 for f in files]
    groups: list[list[int]] = []
    for i, size in enumerate(sizes):
        if groups and sum(sizes[j] for j in groups[-1]) + size <= limit:
            groups[-1].append(i)
        else:
            groups.append([i])
    parts: list[Path] = []
    left: list[str] = []
    while groups:
        group = groups.pop(0)
        if len(parts) == max_parts:
            left += [files[i].name for i in group]
            continue
        path = out / f"reports.part{len(parts) + 1:02d}.tar.xz"
        with tarfile.open(path, "w:xz", preset=XZ_PRESET) as tar:
            for i in group:
                tar.add(files[i], arcname=f"reports/{files[i].name}")
        if path.stat().st_size > limit and len(group) > 1:
            path.unlink()
            groups[:0] = [group[:len(group) // 2], group[len(group) // 2:]]
            continue
        parts.append(path)
    if left and parts:
        import io

        note = ("over the parts' size budget: " + ", ".join(left) + "\n").encode()
        last = parts[-1]
        with tarfile.open(last) as tar:
            members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]
        with tarfile.open(last, "w:xz", preset=XZ_PRESET) as tar:
            for m, data in members:
                tar.addfile(m, io.BytesIO(data))
            info = tarfile.TarInfo("reports/NOT_KEPT.txt")
            info.size = len(note)
            tar.addfile(info, io.BytesIO(note))
    return parts, left


def report_archives(out: Path) -> list[Path]:
    """A saved run's report archives: reports.tgz (runs before 2026-12-01 18:00 UTC) and/or the xz parts."""
    return ([out / "reports.tgz"] if (out / "reports.tgz").exists() else []) + sorted(out.glob(PART_GLOB))


def extract_reports(out: Path, dest: Path) -> Path:
    """Every report archive of ``out`` unpacked into ``dest``; returns the folder of report.json files."""
    for archive in report_archives(out):
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "data_filter"):  # Python 3.12, and 3.11 from 3.11.4
                tar.extractall(dest, filter="data")
            else:
                tar.extractall(dest)
    return dest / "reports"


def slug(key: str) -> str:
    """A report file's stem for a configuration key ("source:llama-tiny seq 512 -> 2048" ...)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in key.replace(" -> ", "-to-"))


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def median(values: list[float | None]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def iqr(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(sorted(values), n=4, method="inclusive")
    return q[2] - q[0]


def within(x: float | None, band: tuple[float, float]) -> bool:
    return x is not None and band[0] <= x <= band[1]


def change_of(pair: dict) -> dict:
    """The ``predict_report`` arguments of a what-if row of ete.json (its ``scenario``: "8 -> 32", ...)."""
    scenario = pair.get("scenario", {})
    out: dict = {}
    for label in ("batch", "seq"):
        if label in scenario:
            out[label] = int(scenario[label].split("->")[1])
    if "dtype" in scenario:
        out["dtype"] = scenario["dtype"].split("->")[1].strip()
    return out


def paired(source_repeats: list[float], target_repeats: list[float]) -> dict:
    """The measured change of a what-if from repeats timed back to back: each repeat's target over its source, their
    median and interquartile range. Empty when the run kept no source repeats (runs before 2026-12-02)."""
    ratios = [t / s for s, t in zip(source_repeats, target_repeats) if s and t]
    if not ratios or len(source_repeats) != len(target_repeats):
        return {}
    return {"paired_ratios": ratios, "measured_change": statistics.median(ratios),
            "measured_change_spread": iqr(ratios)}


def predicted_change(projected_s: list[float], unchanged_s: list[float]) -> float | None:
    """The predicted change of a what-if: per round, the projected target over the same report's unchanged
    prediction; the median over the rounds."""
    return median([ratio(p, u) for p, u in zip(projected_s, unchanged_s)])
