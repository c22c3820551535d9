"""A note when a TorchScript model runs ops the dispatcher never sees.

Sweep 8: a model scripted, frozen and given to torch.jit.optimize_for_inference runs its convolutions (BatchNorm
folded in) as ``prim::mkldnn_convolution``, an operator of the TorchScript interpreter that does not go through
the dispatcher: torch.profiler records no event for it and the counting pass records no op. The report then held
the model's relu, pooling and layout changes alone (134 kFLOPs of the eager model's 13.0 M, 161 us of op time in a
366 us step) and read as a small memory-bound model, without a word. The same holds for the TorchScript fusers'
groups (``prim::TensorExprGroup``, ``prim::FusionGroup``, oneDNN's ``prim::oneDNNFusionGroup``) when they run.
Their work cannot be counted from outside; the note names them, how often they appear in the graph, and how much
of the step the op table misses.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from roofline.report import Report
from roofline.time_text import fmt_time

UNSEEN_NOTE = "ops outside the dispatcher"
_UNSEEN_PREFIXES = ("prim::mkldnn_", "prim::MKLDNN", "prim::TensorExpr", "prim::FusionGroup", "prim::CudaFusionGroup",
                    "prim::oneDNNFusionGroup", "prim::LlgaFusionGroup")


def _graphs(model: Any) -> list[Any]:
    graphs = []
    for attr in ("inlined_graph", "graph"):
        try:
            graphs.append(getattr(model, attr))
            break
        except Exception:  # noqa: BLE001 - a ScriptModule without forward (or a stub) has no graph
            continue
    return graphs


def unseen_script_ops(model: Any) -> Counter[str]:
    """Node kinds in ``model``'s TorchScript graph (nested blocks included) that run outside the dispatcher."""
    import torch

    kinds: Counter[str] = Counter()
    if not isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        return kinds
    stack = [node for graph in _graphs(model) for node in graph.nodes()]
    while stack:
        node = stack.pop()
        kind = node.kind()
        if kind.startswith(_UNSEEN_PREFIXES):
            kinds[kind] += 1
        for block in node.blocks():
            stack.extend(block.nodes())
    return kinds


def note_unseen_script_ops(report: Report, model: Any) -> None:
    kinds = unseen_script_ops(model)
    if not kinds:
        return
    named = ", ".join(f"{kind} x{n}" for kind, n in kinds.most_common())
    missing = ""
    true = report.step_time
    if true is not None and true.n and true.median_s:
        per_step = report.summary.total_time_s / max(report.steps or 1, 1)
        missing = (f"; the op table holds {fmt_time(per_step)} of the {fmt_time(true.median_s)} step timed "
                   "without the profiler")
    report.summary.notes.append(
        f"the TorchScript model runs {sum(kinds.values())} {UNSEEN_NOTE} ({named}; torch.jit.freeze and "
        "optimize_for_inference make them, as do TorchScript's fusers): neither the profiler nor the counting pass "
        f"sees them, so their time is in no row and their FLOPs and bytes are not counted{missing}. To see that work, "
        "analyze the model before optimize_for_inference (or the eager module)")
