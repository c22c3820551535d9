"""The work of a CUDA graph replay's row, from the aten ops roofline saw dispatched when the graph was captured.

A replay launches the kernels its capture recorded with no aten op around them: the trace holds no shapes for
them. While roofline records a run, capture/cuda_graphs.py records each capture's dispatched ops (counted by the
counting registry) and labels each replay with the graph's capture number ("CUDA graph replay #3"); here that row
gets the captured ops' summed FLOPs and bytes, and the dtype of most of its work. For a graph captured from eager
code the sum is exact: the replay runs the very kernels the eager ops launched during the capture. One row per
replay, not one per captured op: the trace times the replay's kernels, and giving each to the op that launched it
during the capture is not something the trace records.

A replay with no capture seen stays unmodelled, with a note saying why (the graph was captured before roofline
began recording, or the trace is a file roofline did not record) and what to do.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping

from roofline.capture.recording import CapturedGraph
from roofline.capture.trace_model import GRAPH_REPLAY_OP, graph_replay_number
from roofline.count.registry import OpCost
from roofline.report import OpRecord

_CAPTURE_UNDER_ROOFLINE = (
    "let roofline see the capture: capture the graph while roofline records (`roofline profile SCRIPT.py` or a "
    "ProfilingContext entered before the capture, or `roofline analyze`, whose warm-up steps run a capture the "
    "model makes on its first calls), and each replay's row gets the FLOPs and bytes of the ops the capture ran")
GRAPH_REPLAY_NOTE = ("a CUDA graph replayed under no op: its ops ran when the graph was captured, not when it "
                     "replays, so the trace holds no shapes for its kernels and their FLOPs and bytes are unknown; "
                     + _CAPTURE_UNDER_ROOFLINE)
CAPTURED_BEFORE_NOTE = ("a CUDA graph replayed under no op, captured before roofline began recording (or by a class "
                        "other than torch.cuda.CUDAGraph): its FLOPs and bytes are unknown; " + _CAPTURE_UNDER_ROOFLINE)
CAPTURE_NOT_GIVEN_NOTE = ("a CUDA graph replay roofline labelled while recording a run, but the ops of its capture "
                          "are not in this trace file (they live in the run's report): its FLOPs and bytes are "
                          "unknown here; analyse the run itself (`roofline profile` or `roofline analyze`)")
INDUCTOR_CAPTURE = ("captured from torch.compile's generated code (CUDA graph trees): the ops it dispatched (extern "
                    "matmuls, copies) are counted exactly, its Triton kernels by their names and buffers, as a "
                    "trace's triton_* events are (estimates: bytes each buffer once, FLOPs from the fused op names)")
INDUCTOR_NO_KERNELS = ("captured from torch.compile's generated code (CUDA graph trees), but none of its Triton "
                       "kernels was seen launched (they launch without the dispatcher): only the ops it dispatched "
                       "(extern matmuls, copies) are counted, a lower bound")
MAX_LISTED = 6


def replay_cost(name: str, graphs: Mapping[int, CapturedGraph] | None) -> tuple[OpCost, str]:
    """(cost, dtype) of a replay row named ``name``: its graph's captured ops summed, or unmodelled with why.
    ``graphs``: the captures roofline saw during the run (None: a trace file, no run seen)."""
    number = graph_replay_number(name)
    if number is None:
        note = GRAPH_REPLAY_NOTE if graphs is None or name != GRAPH_REPLAY_OP else CAPTURED_BEFORE_NOTE
        return OpCost(0.0, 0.0, False, note=note, keep_whole=True), ""
    graph = graphs.get(number) if graphs is not None else None
    if graph is None:
        return OpCost(0.0, 0.0, False, note=CAPTURE_NOT_GIVEN_NOTE, keep_whole=True), ""
    flops, moved = graph.flops, graph.bytes
    if not (flops or moved):
        return OpCost(0.0, 0.0, False, note=f"CUDA graph #{number}: {_captured(graph)}, none of them counted "
                                             "(no formula, or no work)", keep_whole=True), ""
    note = f"CUDA graph #{number}: {_captured(graph)}, summed" + (f"; {_inductor_note(graph)}" if graph.inductor else "")
    return OpCost(flops, moved, True, note=note, keep_whole=True), dominant_dtype(graph)


def _inductor_note(graph: CapturedGraph) -> str:
    return INDUCTOR_CAPTURE if any(op.name.startswith("triton_") for op in graph.ops) else INDUCTOR_NO_KERNELS


def dominant_dtype(graph: CapturedGraph) -> str:
    """The dtype of most of a graph's FLOPs (of its bytes, when it has none)."""
    work: dict[str, float] = defaultdict(float)
    any_flops = any(op.cost.flops for op in graph.ops if op.cost.modeled)
    for op in graph.ops:
        if op.cost.modeled and op.dtype:
            work[op.dtype] += op.cost.flops if any_flops else op.cost.bytes
    return max(work, key=work.__getitem__) if work else ""


def _captured(graph: CapturedGraph) -> str:
    kinds = Counter(op.name.removeprefix("aten::") for op in graph.ops)
    listed = ", ".join(f"{name} x{n}" for name, n in kinds.most_common(MAX_LISTED)) + (
        ", ..." if len(kinds) > MAX_LISTED else "")
    if all(op.name.startswith("aten::") for op in graph.ops):
        return f"the {len(graph.ops)} aten op(s) its capture dispatched ({listed})"
    return f"the {len(graph.ops)} op(s) its capture ran ({listed})"


def graph_summaries(graphs: Mapping[int, CapturedGraph]) -> dict[str, dict]:
    """report.extra["cuda_graphs"]: each graph seen captured, by capture number, with what its capture ran."""
    return {str(number): {"ops": len(graph.ops),
                          "flops": graph.flops, "bytes": graph.bytes,
                          "dtype": dominant_dtype(graph), "inductor": graph.inductor,
                          "unmodelled_ops": sum(not op.cost.modeled for op in graph.ops)}
            for number, graph in sorted(graphs.items())}


def leave_to_recording(ops: list[OpRecord], rows: list[int], graphs: Mapping[int, CapturedGraph] | None) -> list[int]:
    """Of a live run's replay rows that took no recorded op's work (compiled_graphs.py), those of a graph CUDA graph
    trees captured (torch.compile's code) lose their captured count: the counting pass ran the compiled model eagerly,
    so every op of that graph is a recorded row already, which keeps its work (at 0 s) where it could not be given to
    the replay. Counted from the capture as well, the graph's work was counted twice. Returns the rows changed."""
    changed = []
    for row in rows:
        number = graph_replay_number(ops[row].name)
        graph = graphs.get(number) if graphs is not None and number is not None else None
        if graph is not None and graph.inductor:
            ops[row].flops = ops[row].bytes = 0.0
            ops[row].modeled = False
            changed.append(row)
    return changed


def replay_notes(ops: list[OpRecord], graphs: Mapping[int, CapturedGraph] | None,
                 moved_from_recording: set[int] = frozenset(), left_to_recording: list[int] = ()) -> list[str]:
    """How the modelled replay rows were counted (the unmodelled ones say why in the kept-whole notes).
    ``moved_from_recording``: rows that took the work of a compiled graph's recorded ops instead
    (compiled_graphs.py says how); ``left_to_recording``: rows whose work the recorded ops keep
    (``leave_to_recording``)."""
    if not graphs:
        return []
    lines = []
    if left_to_recording:
        names = sorted({ops[row].name for row in left_to_recording})
        lines.append(f"{len(left_to_recording)} CUDA graph replay row(s) of torch.compile's CUDA graph trees "
                     f"({', '.join(names)}) hold their kernels' time unmodelled: the counting pass ran the compiled "
                     "model eagerly and its ops keep their work in rows of their own (at 0 s), which could not be "
                     "matched to one graph call; counted on the replay too, the work would count twice")
    rows: dict[int, list[OpRecord]] = defaultdict(list)
    for i, op in enumerate(ops):
        number = graph_replay_number(op.name)
        if number is not None and number in graphs and op.modeled and i not in moved_from_recording:
            rows[number].append(op)
    for number, replayed in sorted(rows.items()):
        graph = graphs[number]
        unmodelled = Counter(op.name.removeprefix("aten::") for op in graph.ops if not op.cost.modeled)
        line = (f"CUDA graph #{number} ({len(replayed)} replay row(s), {replayed[0].flops:.4g} FLOP and "
                f"{replayed[0].bytes:.4g} B each): each replay's row carries {_captured(graph)} while roofline "
                f"recorded, summed (dtype {dominant_dtype(graph) or 'unknown'}, that of most of its work); a replay "
                "runs the kernels its capture recorded, so for a graph captured from eager ops this is exact")
        if unmodelled:
            line += (f"; {sum(unmodelled.values())} captured op(s) have no formula and add nothing "
                     f"({', '.join(unmodelled)}): a lower bound")
        if graph.inductor:
            line += "; " + _inductor_note(graph)
        lines.append(line)
    return lines
