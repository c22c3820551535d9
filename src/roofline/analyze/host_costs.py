"""The host side of the predictor: what issuing one op costs on this machine, measured once and cached.

Per op kind, a loop of the op on tiny tensors on the device, timed on the host (on a GPU the host only enqueues,
so this is dispatch + launch; on a CPU it is the whole call, the tiny op's work negligible). Then what a model adds
around its ops: one nn.Module call (hooks machinery, ``__call__``), the Python a reference block spends per op
beyond those (a pre-norm transformer block written as eager PyTorch: its host time less its ops' dispatch and its
module calls, per op), and one backward op run by autograd's engine (no Python). Each figure is the median of
``PASSES`` passes; ``spread`` is the median relative interquartile range among them.

And what torch.profiler, configured as ``analyze_model`` runs it, adds to the host time: under Kineto it records
every aten call and, under CUPTI, every CUDA runtime call. On the H200 a lone add gained 10 us under it and a linear
(one call holding five nested aten calls) 20 us: a call the model makes costs more than one nested in it. So the
cost is fitted per top-level event, per nested event and per runtime call (``fit_profiler_costs``) over reference
loops timed with and without the profiler (an add; a chain of views, no launch; a linear, a layer norm, an
embedding: nested calls; a convolution: cuDNN's several calls; a transformer block; a tiny MLP's backward: autograd's
engine frames), each loop's events counted in its own exported trace as analyze/host_events.py counts a report's.
The profiled host model of the predictor subtracts them from each op's profiled host time, unless the fit is poor
(analyze/predict.py says when).

Cached per device and torch version beside the ceilings (``$ROOFLINE_CACHE_DIR``); a few seconds to measure.
"""

from __future__ import annotations

import datetime as _dt
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from roofline.count.families import op_kind
from roofline.io import atomic_write_text
from roofline.report import HostCosts

PASSES = 5
CALLS = 200
PROFILED_PASSES = 7
PROFILED_CALLS = 200
# A profiled reference's loops are cut to about this long (at least PROFILED_MIN_CALLS calls): on a loaded machine a
# short loop is more often run without being descheduled, so the fastest of the passes is nearer the call's cost.
PROFILED_PASS_S = 1e-3
PROFILED_MIN_CALLS = 5
# The profiler-cost model a cached HostCosts was fitted with: a cache fitted otherwise is measured again.
PROFILER_MODEL = "top-level + nested event + runtime call + step"
# Profiled steps of two tiny adds each, whose first gaps give the profiler's cost per step (``_profiler_step_cost``).
STEP_REFERENCE_STEPS = 20


def _timed(fn: Callable[[], object], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def _passes(fn: Callable[[], object], device: torch.device, calls: int, passes: int) -> list[float]:
    """One call to warm up, then ``passes`` timed loops of ``calls`` calls, the device idle before each."""
    fn()
    samples = []
    for _ in range(passes):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        samples.append(_timed(fn, calls))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return samples


def _median_and_spread(fn: Callable[[], object], device: torch.device, calls: int | None = None) -> tuple[float, float]:
    samples = _passes(fn, device, calls or CALLS, PASSES)
    q = statistics.quantiles(samples, n=4, method="inclusive") if len(samples) > 1 else [samples[0]] * 3
    median = statistics.median(samples)
    return median, (q[2] - q[0]) / median if median > 0 else 0.0


def _kind_probes(device: torch.device) -> dict[str, Callable[[], object]]:
    """One tiny call per op kind the predictor looks up (families.op_kind spellings)."""
    x = torch.randn(8, 8, device=device)
    y = torch.randn(8, 8, device=device)
    b = torch.randn(8, device=device)
    x3 = torch.randn(2, 8, 8, device=device)
    img = torch.randn(1, 4, 8, 8, device=device)
    w = torch.randn(4, 4, 3, 3, device=device)
    idx = torch.zeros(4, dtype=torch.long, device=device)
    q = torch.randn(1, 2, 8, 8, device=device)
    return {
        "add": lambda: x + y, "mul": lambda: x * y, "mm": lambda: x @ y, "addmm": lambda: torch.addmm(b, x, y),
        "linear": lambda: F.linear(x, y, b), "bmm": lambda: torch.bmm(x3, x3), "softmax": lambda: x.softmax(-1),
        "layer_norm": lambda: F.layer_norm(x, (8,)), "sum": lambda: x.sum(-1), "mean": lambda: x.mean(),
        "view": lambda: x.view(64), "transpose": lambda: x.t(), "cat": lambda: torch.cat([x, y]),
        "copy": lambda: x.clone(), "embedding": lambda: F.embedding(idx, y), "index": lambda: x[idx],
        "convolution": lambda: F.conv2d(img, w, padding=1), "relu": lambda: torch.relu(x), "gelu": lambda: F.gelu(x),
        "scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(q, q, q),
        "empty": lambda: torch.empty(8, device=device), "to": lambda: x.to(torch.float16),
    }


class _Count(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.kinds: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.kinds.append(op_kind(str(func.overloadpacket.__name__)))
        return func(*args, **(kwargs or {}))


class _Block(nn.Module):
    """A pre-norm transformer block as eager models write it: the reference for Python overhead per op."""

    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, s, d))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


def measure_host_costs(device: torch.device) -> HostCosts:
    """On a CPU with one intra-op thread (restored after): a tiny op never gains from more, and on a loaded
    machine a thread pool waking for a 64-element op measures the load, not the dispatch."""
    threads = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(1)
    try:
        return _measure(device)
    finally:
        torch.set_num_threads(threads)


def _measure(device: torch.device) -> HostCosts:
    spreads: list[float] = []
    dispatch: dict[str, float] = {}
    with torch.no_grad():
        for kind, fn in _kind_probes(device).items():
            dispatch[kind], spread = _median_and_spread(fn, device)
            spreads.append(spread)

        class Identity(nn.Module):
            def forward(self, t: torch.Tensor) -> torch.Tensor:
                return t

        ident, x = Identity(), torch.randn(4, device=device)
        module_call, spread = _median_and_spread(lambda: ident(x), device)
        raw_call, _ = _median_and_spread(lambda: ident.forward(x), device)
        module_call = max(module_call - raw_call, 0.0)
        spreads.append(spread)

        block = _Block().to(device)
        h = torch.randn(2, 8, 16, device=device)
        with _Count() as counter:
            block(h)
        block_time, spread = _median_and_spread(lambda: block(h), device, calls=50)
        spreads.append(spread)
    median_dispatch = statistics.median(dispatch.values())
    issued = sum(dispatch.get(k, median_dispatch) for k in counter.kinds)
    module_calls = sum(1 for _ in block.modules())
    python_per_op = max(block_time - issued - module_calls * module_call, 0.0) / max(len(counter.kinds), 1)

    chain_len = 64
    leaf = torch.randn(8, device=device, requires_grad=True)

    def backward_chain() -> None:
        t = leaf
        for _ in range(chain_len):
            t = t * 1.0001
        t.sum().backward()

    fwd, _ = _median_and_spread(lambda: _chain_forward(leaf, chain_len), device, calls=20)
    total, spread = _median_and_spread(backward_chain, device, calls=20)
    spreads.append(spread)
    backward_per_op = max(total - fwd, 0.0) / (chain_len + 1)
    with torch.no_grad():
        references = _profiler_references(device, block, h)
        per_step = _profiler_step_cost(device)
    fit = fit_profiler_costs(references)
    return HostCosts(
        device=str(device), device_name=_device_name(device), dispatch_s=dispatch, module_call_s=module_call,
        python_per_op_s=python_per_op, backward_per_op_s=backward_per_op, spread=statistics.median(spreads),
        profiler_per_top_level_s=fit.per_top_level_s, profiler_per_nested_event_s=fit.per_nested_event_s,
        profiler_per_runtime_call_s=fit.per_runtime_call_s, profiler_fit_residual=fit.residual,
        profiler_fit_condition=fit.condition,
        profiler_references=references, profiler_left_out=fit.left_out, profiler_model=PROFILER_MODEL,
        profiler_per_step_s=per_step,
        method=f"host perf_counter over {CALLS}-call loops of each op on tiny tensors (no sync inside), median of "
               f"{PASSES} passes; module call = nn.Module __call__ less forward; Python per op = a pre-norm "
               f"transformer block's host time less its ops' dispatch and module calls; backward op = a "
               f"{chain_len}-op autograd chain's backward; profiler cost per top-level event, nested aten event and "
               f"runtime call = non-negative least squares of relative errors over {len(fit.used)} reference loops "
               f"({', '.join(fit.used)}) timed with and without torch.profiler as analyze_model runs it "
               f"(fastest of {PROFILED_PASSES} alternating pairs of loops), their events counted in its own trace; "
               f"profiler cost per step = median over {STEP_REFERENCE_STEPS} profiled steps of two tiny adds of the "
               f"first add's gap after the step began less the second's after the first",
        torch_version=str(torch.__version__),
        measured_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    )


def _profiler_references(device: torch.device, block: nn.Module, h: torch.Tensor) -> dict[str, list[float]]:
    """Reference loops whose mixes of top-level calls, nested aten calls and runtime calls differ, so that the three
    costs are each determined: one call and one launch (add); six top-level views, no launch; nested aten calls
    (linear, layer norm, embedding); cuDNN's or oneDNN's several calls (conv2d); a model block; a tiny MLP's
    forward and backward (autograd's engine frames). Name -> ``REFERENCE_FIELDS``."""
    x, y, b = (torch.randn(8, 8, device=device), torch.randn(8, 8, device=device), torch.randn(8, device=device))
    img, w = torch.randn(1, 4, 8, 8, device=device), torch.randn(4, 4, 3, 3, device=device)
    idx = torch.zeros(4, dtype=torch.long, device=device)
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8)).to(device)
    xi = torch.randn(4, 8, device=device)

    def views() -> torch.Tensor:
        return x.view(64).view(8, 8).t().transpose(0, 1).unsqueeze(0).squeeze(0)

    def mlp_backward() -> None:
        with torch.enable_grad():
            mlp(xi).sum().backward()

    refs: dict[str, tuple[Callable[[], object], int]] = {
        "tiny add": (lambda: x + y, PROFILED_CALLS),
        "views": (views, PROFILED_CALLS),
        "linear": (lambda: F.linear(x, y, b), PROFILED_CALLS),
        "conv2d": (lambda: F.conv2d(img, w, padding=1), PROFILED_CALLS),
        "layer norm": (lambda: F.layer_norm(x, (8,)), PROFILED_CALLS),
        "embedding": (lambda: F.embedding(idx, y), PROFILED_CALLS),
        "transformer block": (lambda: block(h), PROFILED_CALLS),
        "mlp backward": (mlp_backward, PROFILED_CALLS),
    }
    return {name: _profiled_reference(fn, calls, device) for name, (fn, calls) in refs.items()}


def _profiler_step_cost(device: torch.device) -> float:
    """What torch.profiler, stepped as ``analyze_model`` steps it (``profile_steps``), adds once per step before
    the step's first op: not per event, so the references' loops (one step each) cannot show it, but it lands in the
    first op's gap of every profiled step (on this CPU about 15 us, against 0.6-1.1 us per event: a tiny model's
    profiled host time is then mostly it). Profiled steps of two tiny adds each: the median over the steps of the
    first add's gap after the step's annotation began less the second add's gap after the first ended (the add's
    own per-event cost, which the fit already charges, is in both)."""
    import tempfile
    from pathlib import Path

    from roofline.analyze.host_events import is_top_level
    from roofline.analyze.live import profile_steps
    from roofline.capture.kineto import load_trace
    from roofline.errors import RooflineError

    x, y = torch.randn(8, 8, device=device), torch.randn(8, 8, device=device)

    def two_adds() -> None:
        x + y
        x + y

    two_adds()
    with tempfile.TemporaryDirectory(prefix="roofline-host-costs-") as tmp:
        path = Path(tmp) / "trace.json"
        profile_steps(two_adds, device, STEP_REFERENCE_STEPS, path, record_shapes=True)
        try:
            trace = load_trace(path)
        except RooflineError:
            return 0.0
    return step_cost_from_trace(trace, is_top_level)


def step_cost_from_trace(trace, is_top_level) -> float:
    """Median over the trace's steps of (first top-level op's start - step start) - (second's start - first's
    end), at least 0; 0 without a step holding two top-level ops."""
    by_step: dict[int, list] = {}
    for j, ev in enumerate(trace.ops):
        if ev.step is not None and is_top_level(trace, j):
            by_step.setdefault(ev.step, []).append(ev)
    extra = []
    for step, evs in by_step.items():
        if len(evs) < 2 or step >= len(trace.steps):
            continue
        first, second = sorted(evs, key=lambda e: e.ts_us)[:2]
        extra.append((first.ts_us - trace.steps[step].ts_us) - (second.ts_us - first.ts_us - first.dur_us))
    return max(statistics.median(extra), 0.0) / 1e6 if extra else 0.0


# What each reference holds, per call of its loop (``HostCosts.profiler_references``).
REFERENCE_FIELDS = ("plain_s", "profiled_s", "events", "runtime_calls", "top_level", "device_s")


def _profiled_reference(fn: Callable[[], object], calls: int, device: torch.device) -> list[float]:
    """One profiled loop exported and counted as a report's ops are counted (analyze/host_events.py), then
    ``PROFILED_PASSES`` pairs of a plain and a profiled loop, each pair's two loops run back to back: the profiled
    time is the fastest plain loop (load only ever adds time) times the median ratio of a pair's profiled loop to its
    plain one (a core shared with other load slows both loops of a pair alike; the ratio keeps what the profiler
    adds). Loops of at most ``calls`` calls, fewer for a slow call (``PROFILED_PASS_S``)."""
    import tempfile
    from pathlib import Path

    from roofline.analyze.host_events import trace_counts
    from roofline.analyze.live import analyze_profiler
    from roofline.capture.kineto import load_trace
    from roofline.errors import RooflineError

    fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    per_call = _timed(fn, 3)
    calls = max(min(calls, round(PROFILED_PASS_S / max(per_call, 1e-9))), min(PROFILED_MIN_CALLS, calls))
    with tempfile.TemporaryDirectory(prefix="roofline-host-costs-") as tmp:
        with analyze_profiler(device) as prof:
            _passes(fn, device, calls, 1)
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        try:
            trace = load_trace(path)
        except RooflineError:
            return [0.0] * len(REFERENCE_FIELDS)
    made = calls + 1
    events, top_level, runtime = trace_counts(trace)
    device_s = sum(k.dur_us for k in trace.kernels) / 1e6 / made
    plain, ratios = [], []
    for _ in range(PROFILED_PASSES):
        plain.append(min(_passes(fn, device, calls, 1)))
        with analyze_profiler(device):
            ratios.append(min(_passes(fn, device, calls, 1)) / plain[-1])
    fastest = min(plain)
    return [fastest, fastest * statistics.median(ratios), events / made, runtime / made, top_level / made, device_s]


@dataclass
class ProfilerFit:
    """The profiler's cost per top-level event, per nested event and per runtime call; the RMS relative error of
    the references' added times it leaves; ``condition``: the condition number of the fitted costs' columns (each
    scaled to unit length), how much the references' noise can move them (large: two costs hard to tell apart);
    the references used and those left out (with why)."""

    per_top_level_s: float = 0.0
    per_nested_event_s: float = 0.0
    per_runtime_call_s: float = 0.0
    residual: float = 0.0
    condition: float = 0.0
    used: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)


# A reference whose loop keeps the device busy this fraction of its host time or more may have the host wait on
# the device (a full launch queue): the profiler's cost then hides in that wait, and the reference is left out.
DEVICE_BOUND = 0.5


def fit_profiler_costs(references: dict[str, list[float]]) -> ProfilerFit:
    """The costs per top-level event, nested event and runtime call that best explain the references' added times
    (profiled less plain), none negative: least squares of the relative errors (each reference weighs the same,
    however long its loop), exactly over every subset of the three costs (the best fit with no negative cost; a
    cost no reference has counts for stays 0, as the runtime call's on a CPU). Left out: a reference the profiler
    did not slow down, one whose device time per call is ``DEVICE_BOUND`` of its host time or more, and, when the
    fit misses by more than the predictor accepts (``MAX_PROFILER_RESIDUAL``), the one reference without which it
    would not, if at least ``MIN_PROFILER_REFERENCES`` remain (a loop that other load slowed, or one like the H200's
    conv2d that gained less than a lone add: one outlier, never more)."""
    import numpy as np

    from roofline.analyze.predict import MAX_PROFILER_RESIDUAL, MIN_PROFILER_REFERENCES

    fit = ProfilerFit()
    names, rows = [], []
    for name, r in references.items():
        plain, profiled, events, runtime, top = r[:5]
        device_s = r[5] if len(r) > 5 else 0.0
        if profiled <= plain:
            fit.left_out[name] = "the profiler did not slow it down"
        elif plain > 0 and device_s >= DEVICE_BOUND * plain:
            fit.left_out[name] = f"device-bound (device {device_s / plain:.0%} of its host time)"
        else:
            names.append(name)
            rows.append([top, max(events - top, 0.0), runtime, profiled - plain])
    if not rows:
        return fit
    data = np.array(rows, dtype=float)
    counts = data[:, :3] / data[:, 3:4]
    costs, residual = _relative_nnls(counts)
    keep = list(range(len(names)))
    if residual > MAX_PROFILER_RESIDUAL and len(names) > MIN_PROFILER_REFERENCES:
        trials = [(_relative_nnls(np.delete(counts, i, axis=0)), i) for i in range(len(names))]
        (trimmed_costs, trimmed_residual), worst = min(trials, key=lambda t: t[0][1])
        if trimmed_residual <= MAX_PROFILER_RESIDUAL:
            explained = float(counts[worst] @ trimmed_costs)
            fit.left_out[names[worst]] = (f"an outlier: the others' fit explains {explained:.2f} of its added time "
                                          f"(with it, the fit missed by {residual:.0%} RMS)")
            keep.remove(worst)
            costs, residual = trimmed_costs, trimmed_residual
    fit.used = [names[i] for i in keep]
    fit.per_top_level_s, fit.per_nested_event_s, fit.per_runtime_call_s = (float(c) for c in costs)
    fit.residual = residual
    fitted = counts[keep][:, costs > 0]
    if fitted.size:
        fit.condition = float(np.linalg.cond(fitted / np.linalg.norm(fitted, axis=0)))
    return fit


def _relative_nnls(counts):
    """Non-negative costs c minimising the sum of (counts @ c - 1)^2 (``counts``: each reference's counts over its
    added time), exactly: the best unconstrained least-squares fit over every subset of the costs whose solution is
    non-negative. Returns the costs and the RMS relative error."""
    import itertools

    import numpy as np

    ones = np.ones(len(counts))
    best: tuple[float, np.ndarray] = (float(len(counts)), np.zeros(counts.shape[1]))
    for size in range(1, counts.shape[1] + 1):
        for cols in itertools.combinations(range(counts.shape[1]), size):
            a = counts[:, cols]
            if not a.any(axis=0).all():
                continue
            solution = np.linalg.lstsq(a, ones, rcond=None)[0]
            if (solution < 0).any():
                continue
            sse = float(np.sum((a @ solution - ones) ** 2))
            if sse < best[0] - 1e-12:
                costs = np.zeros(counts.shape[1])
                costs[list(cols)] = solution
                best = (sse, costs)
    return best[1], (best[0] / len(counts)) ** 0.5


def _chain_forward(leaf: torch.Tensor, n: int) -> torch.Tensor:
    t = leaf
    for _ in range(n):
        t = t * 1.0001
    return t.sum()


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    from roofline.device.host import cpu_name

    return cpu_name()


def host_costs_path(device: torch.device):
    from roofline.device.cache import _slug, cache_dir

    return cache_dir() / f"host-costs-{_slug(_device_name(device))}-torch{_slug(str(torch.__version__))}.json"


def get_host_costs(device: torch.device | str, *, remeasure: bool = False) -> HostCosts:
    """This machine's host costs for ``device``, from the cache unless absent or ``remeasure``."""
    device = torch.device(device)
    path = host_costs_path(device)
    if path.exists() and not remeasure:
        try:
            cached = msgspec.json.decode(path.read_bytes(), type=HostCosts)
            if cached.profiler_model == PROFILER_MODEL:
                return cached
        except (msgspec.DecodeError, OSError):
            pass
    costs = measure_host_costs(device)
    atomic_write_text(path, msgspec.json.format(msgspec.json.encode(costs), indent=1).decode() + "\n")
    return costs
