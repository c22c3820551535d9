"""The host side of the predictor: what issuing one op costs on this machine, measured once and cached.

Per op kind, a loop of the op on tiny tensors on the device, timed on the host (on a GPU the host only enqueues,
so this is dispatch + launch; on a CPU it is the whole call, the tiny op's work negligible). Then what a model adds
around its ops: one nn.Module call (hooks machinery, ``__call__``), the Python a reference block spends per op
beyond those (a pre-norm transformer block written as eager PyTorch: its host time less its ops' dispatch and its
module calls, per op), and one backward op run by autograd's engine (no Python). Each figure is the median of
``PASSES`` passes; ``spread`` is the median relative interquartile range among them.

And what torch.profiler, configured as ``analyze_model`` runs it, adds to the host time: under Kineto it records
every aten call and, under CUPTI, every CUDA runtime call, so its cost is fitted per aten event and per runtime call
(``fit_profiler_costs``) over reference loops timed with and without it (a tiny add: one event, one launch; a
convolution: cuDNN's several calls; a linear: nested aten calls; a transformer block), each loop's events counted in
its own exported trace as analyze/host_events.py counts a report's. The profiled host model of the predictor
subtracts them from each op's profiled host time.

Cached per device and torch version beside the ceilings (``$ROOFLINE_CACHE_DIR``); a few seconds to measure.
"""

from __future__ import annotations

import datetime as _dt
import statistics
import time
from collections.abc import Callable

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
PROFILED_PASSES = 3
PROFILED_CALLS = 200


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
    (per_event, per_call), residual = fit_profiler_costs(list(references.values()))
    return HostCosts(
        device=str(device), device_name=_device_name(device), dispatch_s=dispatch, module_call_s=module_call,
        python_per_op_s=python_per_op, backward_per_op_s=backward_per_op, spread=statistics.median(spreads),
        profiler_per_event_s=per_event, profiler_per_runtime_call_s=per_call,
        profiler_fit_residual=residual, profiler_references=references,
        method=f"host perf_counter over {CALLS}-call loops of each op on tiny tensors (no sync inside), median of "
               f"{PASSES} passes; module call = nn.Module __call__ less forward; Python per op = a pre-norm "
               f"transformer block's host time less its ops' dispatch and module calls; backward op = a "
               f"{chain_len}-op autograd chain's backward; profiler cost per aten event and per runtime call = "
               f"non-negative least squares over {len(references)} reference loops ({', '.join(references)}) "
               f"timed with and without torch.profiler as "
               f"analyze_model runs it, their events counted in its own trace",
        torch_version=str(torch.__version__),
        measured_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    )


def _profiler_references(device: torch.device, block: nn.Module, h: torch.Tensor) -> dict[str, list[float]]:
    """Reference loops whose mix of aten events and runtime calls differ (one event and one launch; a cuDNN
    convolution's several; a linear's nested aten calls; a model block): name -> [host time per call without the
    profiler, with it, aten events, runtime calls per call]."""
    x, y = torch.randn(8, 8, device=device), torch.randn(8, 8, device=device)
    img = torch.randn(2, 8, 16, 16, device=device)
    w = torch.randn(8, 8, 3, 3, device=device)
    refs: dict[str, tuple[Callable[[], object], int]] = {
        "tiny add": (lambda: x + y, PROFILED_CALLS),
        "conv2d": (lambda: F.conv2d(img, w, padding=1), PROFILED_CALLS),
        "linear": (lambda: F.linear(x, y), PROFILED_CALLS),
        "transformer block": (lambda: block(h), PROFILED_CALLS // 4),
    }
    return {name: _profiled_reference(fn, calls, device) for name, (fn, calls) in refs.items()}


def _profiled_reference(fn: Callable[[], object], calls: int, device: torch.device) -> list[float]:
    import json
    import tempfile
    from pathlib import Path

    from roofline.analyze.live import analyze_profiler

    plain, _ = _median_and_spread(fn, device, calls=calls)
    with tempfile.TemporaryDirectory(prefix="roofline-host-costs-") as tmp:
        with analyze_profiler(device) as prof:
            samples = _passes(fn, device, calls, PROFILED_PASSES)
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text()).get("traceEvents", [])
    counts = profiled_counts(events)
    made = PROFILED_PASSES * calls + 1
    return [plain, statistics.median(samples)] + [c / made for c in counts]


def profiled_counts(events: list[dict]) -> tuple[int, int]:
    """(aten events, CUDA runtime/driver calls) among a trace's complete events, as capture/kineto.py and
    analyze/host_events.py count them for a report's ops."""
    ops = runtime = 0
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        cat = str(ev.get("cat", ""))
        if cat in ("cpu_op", "operator", "Operator"):
            ops += 1
        elif cat.lower().endswith(("_runtime", "_driver")) or cat == "Runtime":
            runtime += 1
    return ops, runtime


def fit_profiler_costs(references: list[list[float]]) -> tuple[tuple[float, float], float]:
    """Costs per aten event and per runtime call that best explain each reference's added time (profiled less
    plain), neither negative: least squares of the relative errors (each reference weighs the same, however long
    its loop), over both costs, else either alone, the best fit with no negative cost (on a CPU there are no
    runtime calls: the event cost alone). Returns the costs and the fit's RMS relative error."""
    import itertools

    import numpy as np

    data = np.array([r for r in references if r[1] > r[0]], dtype=float).reshape(-1, 4)
    if not len(data):
        return (0.0, 0.0), 0.0
    added = data[:, 1] - data[:, 0]
    counts = data[:, 2:4] / added[:, None]
    ones = np.ones(len(added))
    best: tuple[float, np.ndarray] = (float(len(added)), np.zeros(2))
    for size in (1, 2):
        for cols in itertools.combinations(range(2), size):
            a = counts[:, cols]
            if not a.any():
                continue
            solution = np.linalg.lstsq(a, ones, rcond=None)[0]
            if (solution < 0).any():
                continue
            sse = float(np.sum((a @ solution - ones) ** 2))
            if sse < best[0] - 1e-12:
                costs = np.zeros(2)
                costs[list(cols)] = solution
                best = (sse, costs)
    return (float(best[1][0]), float(best[1][1])), (best[0] / len(added)) ** 0.5


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
            if cached.profiler_references:
                return cached
        except (msgspec.DecodeError, OSError):
            pass
    costs = measure_host_costs(device)
    atomic_write_text(path, msgspec.json.format(msgspec.json.encode(costs), indent=1).decode() + "\n")
    return costs
