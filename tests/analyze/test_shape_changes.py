"""A model whose inputs change between the counting pass and the timed steps (a decode step's growing cache): each
op's count must be of the shapes the timed steps ran, and the report must say that they changed."""

from __future__ import annotations

import gzip
import json

import torch

from roofline.analyze.live import analyze_model
from roofline.analyze.shape_changes import recorded_dims, shapes_conflict


class GrowingCache(torch.nn.Module):
    """Each call appends one position's keys to a cache and scores the query against all of them."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.query = torch.nn.Linear(width, width)
        self.key = torch.nn.Linear(width, width)
        self.cache = torch.zeros(1, 0, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.cache = torch.cat([self.cache, self.key(x)], 1)
        return self.query(x) @ self.cache.transpose(1, 2)


def _timed_shapes(trace_path, name: str) -> list[list]:
    """Input dims of every event of ``name`` inside a profiled step of the exported trace."""
    opener = gzip.open if str(trace_path).endswith(".gz") else open
    with opener(trace_path, "rt") as f:
        events = json.load(f)["traceEvents"]
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name", "").startswith("ProfilerStep")]
    return [e["args"]["Input Dims"] for e in events
            if e.get("name") == name and any(a <= e["ts"] <= b for a, b in steps)]


def test_ops_are_counted_at_the_shapes_the_timed_steps_ran(cpu_ceilings, one_thread, tmp_path):
    torch.manual_seed(0)
    model = GrowingCache()
    trace_path = tmp_path / "trace.json"
    report = analyze_model(model, (torch.randn(1, 1, 32),), device="cpu", ceilings=cpu_ceilings, warmup=1, iters=3,
                           trace_path=trace_path)
    timed = _timed_shapes(trace_path, "aten::bmm")
    assert len(timed) == 3 and len({str(d) for d in timed}) == 3  # the cache grew in every timed step
    (bmm,) = [op for op in report.ops if op.name == "aten::bmm"]
    assert bmm.input_shapes in timed, (bmm.input_shapes, timed)
    length = bmm.input_shapes[1][2]
    assert bmm.flops == 2 * 32 * length
    (cat,) = [op for op in report.ops if op.name == "aten::cat"]
    assert cat.input_shapes in [dims[0] for dims in _timed_shapes(trace_path, "aten::cat")]  # a tensor list's shapes
    assert any("other input shapes" in note for note in report.summary.notes), report.summary.notes


class BatchFirstGRU(torch.nn.Module):
    """A batch-first GRU, whose output torch turns in place (transpose_): the recorder reads its shapes after the
    call, the profiler before it."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = torch.nn.GRU(8, 16, batch_first=True)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.gru(x)[0])


def test_a_model_with_fixed_inputs_keeps_its_counts_and_says_nothing(cpu_ceilings, one_thread):
    torch.manual_seed(0)
    report = analyze_model(BatchFirstGRU(), (torch.randn(2, 5, 8),), device="cpu", ceilings=cpu_ceilings, warmup=1,
                           iters=2, backward=True)
    assert not any("other input shapes" in note for note in report.summary.notes), report.summary.notes


def test_shapes_conflict_only_where_both_sides_hold_shapes_the_other_lacks():
    # a Python scalar recorded by the profiler as [] and a 0-dim tensor the recorder saw are not a difference
    assert not shapes_conflict(((24,),), ((24,), ()))
    assert not shapes_conflict(((500,), (), (1, 500)), ((500,), (1, 500)))
    # the profiler leaves a tensor list's shapes out (index's indices): what it recorded is a subsequence
    assert not shapes_conflict(((2, 24), (2, 1, 1, 1), (1, 1, 1, 24)), ((2, 24),))
    # a boolean mask's index: the profiler records the list as [], which a formula rebuilds from nonzero below it
    assert not shapes_conflict(((5824,), (5824,)), recorded_dims([[5824], []]))
    assert recorded_dims([[[1, 5, 32], [1, 1, 32]], [], [2, 3]]) == ((1, 5, 32), (1, 1, 32), (), (2, 3))
    assert shapes_conflict(((1, 1, 32), (1, 32, 7)), ((1, 1, 32), (1, 32, 9)))
    assert shapes_conflict(((4, 8),), ((5, 8),))


class VaryingDepth(torch.nn.Module):
    """Runs 1, 2 or 3 of its layers, call after call: a step whose work changes (as sampling generate's length)."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(16, 16) for _ in range(3))
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        for layer in self.layers[:self.calls % 3 + 1]:
            x = layer(x)
        return x


def test_steps_that_run_different_work_are_said_to(cpu_ceilings, one_thread):
    torch.manual_seed(0)
    report = analyze_model(VaryingDepth(), (torch.randn(4, 16),), device="cpu", ceilings=cpu_ceilings, warmup=1,
                           iters=3)
    (note,) = [note for note in report.summary.notes if "profiled steps ran different numbers of ops" in note]
    counts = [int(n) for n in note.split("(")[1].split(")")[0].split(", ")]
    assert len(counts) == 3 and len(set(counts)) == 3


def test_steps_that_run_the_same_work_say_nothing_of_it(cpu_ceilings, one_thread):
    report = analyze_model(BatchFirstGRU(), (torch.randn(2, 5, 8),), device="cpu", ceilings=cpu_ceilings, warmup=1,
                           iters=3)
    assert not any("ran different numbers of ops" in note for note in report.summary.notes)
