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

WITHIN = (0.85, 1.15)
WHATIF_WITHIN = (0.8, 1.25)


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
