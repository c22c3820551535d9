"""Three views of each fix, from measured configurations: cumulative, isolated and leave-one-out.

Plain data and arithmetic, no torch: ``lab/ablation.py`` measures the configurations, this module turns them into
rows (speed-up with its spread, a noise verdict) and explains each row from the roofline evidence of the two
configurations it compares (syncs, bytes, FLOPs and kernel launches per token against the measured roofs).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from roofline.lab.agreement import Agreement
from roofline.render.units import fmt_rate
from roofline.report import Ceilings

FIVE = ("batched", "sync_free", "contiguous_layout", "norms_in_model_dtype", "kv_cache")
SHORT = {
    "batched": "batched",
    "sync_free": "sync-free loop",
    "contiguous_layout": "contiguous layout",
    "norms_in_model_dtype": "norms in model dtype",
    "kv_cache": "KV cache",
    "compiled": "compiled",
    "total": "all fixes (naive to last stage)",
}
VIEWS = ("cumulative", "isolated", "leave-one-out")
WITHIN_NOISE = "within noise"
SPREAD_METHOD = (
    "spread = the interquartile range (IQR, 25th-75th percentile, linear interpolation) of a configuration's timed "
    "runs, which one stray run cannot stretch as it does a min-max range; a speed-up's range is [before's 25th / "
    "after's 75th, before's 75th / after's 25th percentile], and a change whose range holds 1.0x (the two IQRs "
    "overlap) is printed as within noise"
)


@dataclass
class Evidence:
    """Per generated token of a whole run, extrapolated from counted runs of 1 and ``new_tokens`` new tokens of
    every prompt (eager ops; lab/ablation.py's count_evidence)."""

    new_tokens: int
    syncs_per_token: float
    bytes_per_token: float
    flops_per_token: float
    launches_per_token: float | None
    unmodeled_ops: int = 0


@dataclass
class Config:
    key: str
    title: str
    fixes: list[str]
    tokens: int = 0
    samples_s: list[float] = field(default_factory=list)
    evidence: Evidence | None = None
    agreement: Agreement | None = None
    note: str = ""

    @property
    def launches_text(self) -> str:
        """How a compiled configuration launches its kernels (its launches are not counted one by one)."""
        if "compiled" not in self.fixes:
            return ""
        return "graph replay" if "kv_cache" in self.fixes else "Inductor kernels, no CUDA graph"

    def ms_per_token(self, quantile: float = 0.5) -> float:
        """A quantile (default the median) of the runs' time per generated token, in ms."""
        if not self.samples_s or not self.tokens:
            return float("nan")
        return 1e3 * _quantile(self.samples_s, quantile) / self.tokens

    @property
    def tokens_per_s(self) -> float:
        ms = self.ms_per_token()
        return 1e3 / ms if ms and math.isfinite(ms) else float("nan")


@dataclass
class Floors:
    """The least time per token each resource needs: launches x launch overhead, bytes / bandwidth, FLOPs / peak."""

    launch_ms: float | None
    memory_ms: float
    compute_ms: float

    def bound(self) -> str:
        return max(("launch", "memory", "compute"), key=self.of)

    def of(self, name: str) -> float:
        return {"launch": self.launch_ms or 0.0, "memory": self.memory_ms, "compute": self.compute_ms}[name]


@dataclass
class Row:
    view: str
    fix: str
    before: str
    after: str
    speedup: float | None = None
    low: float | None = None
    high: float | None = None
    verdict: str = "not measured"
    explanation: str = ""


def _quantile(values: list[float], q: float) -> float:
    if len(values) == 1:
        return values[0]
    quartiles = statistics.quantiles(values, n=4, method="inclusive")
    return {0.25: quartiles[0], 0.5: quartiles[1], 0.75: quartiles[2]}[q]


def config_key(fixes: list[str]) -> str:
    return "+".join(fixes) if fixes else "naive"


def config_title(fixes: list[str]) -> str:
    five = [f for f in FIVE if f in fixes]
    compiled = "compiled" in fixes
    if len(five) == len(FIVE):
        return "fixed, compiled" if compiled else "fixed (eager)"
    if not five:
        return "naive"
    missing = [f for f in FIVE if f not in five]
    if len(missing) == 1:
        return f"fixed, compiled, without {SHORT[missing[0]]}" if compiled else f"fixed without {SHORT[missing[0]]}"
    return "naive + " + ", ".join(SHORT[f] for f in five)


def view_pairs(order: tuple[str, ...], include_compile: bool) -> dict[str, list[tuple[str, list[str], list[str]]]]:
    """For each view, (fix, fixes before, fixes after) per row. Cumulative follows ``order``; isolated adds one fix
    to the naive model; leave-one-out takes one out of the fully fixed model, compiled when ``include_compile``
    (each bug put back into the compiled model: the usual way to credit a fix is against the best model), else
    eager. torch.compile compiles the KV-cache decode step, so it has no isolated row and its leave-one-out row is
    fixed eager vs fixed compiled."""
    cumulative, current = [], []
    for fix in order:
        if fix == "compiled" and not include_compile:
            continue
        after = current + [fix]
        cumulative.append((fix, list(current), list(after)))
        current = after
    cumulative.append(("total", [], list(current)))
    full = list(FIVE) + (["compiled"] if include_compile else [])
    isolated = [(fix, [], [fix]) for fix in FIVE]
    leave_one_out = [(fix, [f for f in full if f != fix], full) for fix in FIVE]
    if include_compile:
        leave_one_out.append(("compiled", list(FIVE), full))
    return {"cumulative": cumulative, "isolated": isolated, "leave-one-out": leave_one_out}


def canonical(fixes: list[str]) -> list[str]:
    return [f for f in (*FIVE, "compiled") if f in fixes]


def floors(config: Config, ceilings: Ceilings, dtype: str) -> Floors | None:
    e = config.evidence
    if e is None:
        return None
    launch = None if e.launches_per_token is None else 1e3 * e.launches_per_token * ceilings.launch_overhead_s
    bandwidth = ceilings.memory_bandwidth_bytes_per_s
    peak = ceilings.peak_for(dtype)
    return Floors(launch, 1e3 * e.bytes_per_token / bandwidth if bandwidth else 0.0,
                  1e3 * e.flops_per_token / peak if peak else 0.0)


def compare(before: Config, after: Config) -> tuple[float | None, float | None, float | None, str]:
    """(speed-up, low, high, verdict) of ``after`` over ``before`` per generated token."""
    if not before.samples_s or not after.samples_s:
        return None, None, None, "not measured"
    speedup = before.ms_per_token() / after.ms_per_token()
    low = before.ms_per_token(0.25) / after.ms_per_token(0.75)
    high = before.ms_per_token(0.75) / after.ms_per_token(0.25)
    if len(before.samples_s) < 3 or len(after.samples_s) < 3:
        return speedup, low, high, "no spread (under 3 runs)"
    if low <= 1.0 <= high:
        return speedup, low, high, WITHIN_NOISE
    return speedup, low, high, "faster" if speedup > 1 else "slower"


def build_rows(configs: dict[str, Config], order: tuple[str, ...], include_compile: bool, ceilings: Ceilings,
               dtype: str) -> list[Row]:
    rows = []
    for view, pairs in view_pairs(order, include_compile).items():
        for fix, before, after in pairs:
            row = Row(view, fix, config_key(canonical(before)), config_key(canonical(after)))
            b, a = configs.get(row.before), configs.get(row.after)
            if b is not None and a is not None:
                row.speedup, row.low, row.high, row.verdict = compare(b, a)
                if row.speedup is not None:
                    row.explanation = explain(fix, b, a, row.verdict, ceilings, dtype)
            rows.append(row)
    return rows


def _changes(b: Evidence, a: Evidence) -> list[str]:
    """The evidence that moved by more than 5%, before -> after."""
    out = []
    for label, x, y, fmt in (
        ("syncs/token", b.syncs_per_token, a.syncs_per_token, lambda v: f"{v:.2f}"),
        ("kernel launches/token", b.launches_per_token, a.launches_per_token, lambda v: f"{v:,.0f}"),
        ("bytes/token", b.bytes_per_token, a.bytes_per_token, lambda v: fmt_rate(v, "B")),
        ("FLOPs/token", b.flops_per_token, a.flops_per_token, lambda v: fmt_rate(v, "FLOP")),
    ):
        if x is None or y is None:
            continue
        if abs(x - y) > 0.05 * max(abs(x), abs(y), 1e-12):
            out.append(f"{label} {fmt(x)} -> {fmt(y)}")
    return out


def explain(fix: str, before: Config, after: Config, verdict: str, ceilings: Ceilings, dtype: str) -> str:
    """Why the row came out as it did, from the two configurations' evidence and the roofs."""
    fb, fa = floors(before, ceilings, dtype), floors(after, ceilings, dtype)
    if fb is None or fa is None or before.evidence is None or after.evidence is None:
        return "no evidence counted (budget)"
    t_before, t_after = before.ms_per_token(), after.ms_per_token()
    parts = []
    changes = _changes(before.evidence, after.evidence)
    if fix == "compiled":
        changes.append(f"{before.evidence.launches_per_token or 0:,.0f} eager launches/token -> CUDA-graph replays "
                       "of Inductor's fused kernels")
    parts.append("; ".join(changes) if changes else "no counted change")
    bound = fb.bound()
    share = fb.of(bound) / t_before if t_before > 0 else float("nan")
    launch = "-" if fb.launch_ms is None else f"{fb.launch_ms:.3g}"
    parts.append(f"before: {t_before:.3g} ms/token, {bound}-bound (floors: launches {launch}, memory "
                 f"{fb.memory_ms:.3g}, compute {fb.compute_ms:.3g} ms/token; the {bound} floor is "
                 f"{100 * share:.0f}% of the time)")
    saved = {name: fb.of(name) - fa.of(name) for name in ("launch", "memory", "compute")
             if not (name == "launch" and (fb.launch_ms is None or fa.launch_ms is None))}
    # A floor counts as lowered only by more than 1% of the token's time (byte counts differ by rounding).
    saved = {n: v if abs(v) > 0.01 * t_before else 0.0 for n, v in saved.items()}
    main = max(saved, key=lambda n: saved[n]) if saved else None
    gpu_ms = max(fb.memory_ms, fb.compute_ms)
    compiled = "compiled" in before.fixes and "compiled" in after.fixes
    if verdict == "faster":
        parts.append(f"pays: {t_before - t_after:.3g} ms/token saved" + (
            f", the {main} floor lowered by {saved[main]:.3g} ms/token" if main and saved[main] > 0 else ""))
    elif fix == "sync_free" and compiled:
        parts.append(f"a sync makes the host wait once per step for the GPU's queued work (~{gpu_ms:.3g} ms/token "
                     f"of memory/compute floor, {100 * gpu_ms / t_before:.0f}% of the token's time); the host's own "
                     "work per step (guards, graph replay, the loop's ops) hides most of that wait")
    elif fix == "sync_free":
        parts.append(f"a sync only makes the host wait for the GPU's queued work, at most ~{gpu_ms:.3g} ms/token "
                     f"of memory/compute floor here ({100 * gpu_ms / t_before:.0f}% of the token's time): the GPU "
                     "idles waiting for launches anyway, so there is little for the host to wait for")
    elif compiled:
        # Counted on the eager ops: Inductor fuses a cast or a copy into the kernel next to it, where it moves no
        # extra bytes, so what the eager count saves is an upper bound on the compiled step.
        if main is not None and saved[main] > 0:
            parts.append(f"counted on the eager ops, it saves at most {saved[main]:.3g} ms/token of {main} floor "
                         f"({100 * saved[main] / t_before:.1f}% of the token's time); the compiled step fuses such "
                         "casts and copies into its kernels, so on the device it saves less: too little to show")
        else:
            parts.append("it lowers no floor here: the compiled step does the same work with the bug or without "
                         "it (at one token per step the layout copies are of already contiguous tensors; only "
                         "the prefill changes)" if fix == "contiguous_layout" else "it lowers no floor here")
    elif main is not None and saved[main] > 0 and main != bound:
        parts.append(f"its saving ({saved[main]:.3g} ms/token of {main} floor) runs in the shadow of the {bound} "
                     f"floor ({fb.of(bound):.3g} ms/token), which it does not lower")
    elif main is not None and saved[main] > 0:
        parts.append(f"it lowers the {main} floor by {saved[main]:.3g} ms/token, "
                     f"{100 * saved[main] / t_before:.0f}% of the token's time: too little to show at this size")
    else:
        parts.append("it lowers no floor here")
    if verdict == "slower":
        parts.append(f"costs {t_after - t_before:.3g} ms/token more" + (
            "; added: " + ", ".join(f"{n} floor +{-v:.3g} ms" for n, v in saved.items() if v < 0)
            if any(v < 0 for v in saved.values()) else ""))
    return ". ".join(parts)
