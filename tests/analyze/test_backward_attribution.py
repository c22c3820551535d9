"""Backward ops: the module and source line of the forward op whose autograd node they run, and the timing join
pairing each counted op with the trace event of the same op (not a same-named one elsewhere)."""

from __future__ import annotations

import inspect

import pytest
import torch

from roofline.analyze import join
from roofline.analyze.live import make_step
from roofline.analyze.pipeline import _shape_key, _step_list, _TraceCounter, _ensure_attributed
from roofline.capture.kineto import load_trace
from roofline.capture.op_recorder import record_ops


class WithIdentities(torch.nn.Module):
    """Linear -> eval Dropout -> Identity -> relu -> Linear: the two middle modules return their input."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(16, 16)
        self.drop = torch.nn.Dropout(0.1)
        self.ident = torch.nn.Identity()
        self.b = torch.nn.Linear(16, 16)

    def forward(self, x):
        x = self.drop(self.a(x))
        x = self.ident(x)
        x = torch.relu(x)
        return self.b(x)


def _line(text: str) -> str:
    lines, start = inspect.getsourcelines(WithIdentities.forward)
    return f"{next(start + i for i, line in enumerate(lines) if text in line)}"


def _model():
    torch.manual_seed(0)
    return WithIdentities().eval(), torch.randn(4, 16)


def test_live_backward_ops_take_their_forward_ops_module_and_line(one_thread):
    model, x = _model()
    recording = record_ops(make_step(model, (x,), backward=True), root=model)
    backward = [op for op in recording.ops if op.phase == "backward"]
    assert backward
    assert not [op for op in backward if op.module in ("drop", "ident")], "an identity module claimed backward ops"
    mm = [op for op in backward if op.name == "aten::mm"]
    assert {op.module for op in mm} == {"a", "b"}
    for op in mm:
        assert op.source is not None and op.source.endswith(_line("self.a(x)") if op.module == "a" else _line("self.b(x)"))
    (relu_grad,) = [op for op in backward if op.name == "aten::threshold_backward"]
    assert relu_grad.source.endswith(_line("torch.relu")) and relu_grad.module == ""


def test_trace_backward_ops_take_their_forward_ops_module_and_line(tmp_path, one_thread):
    model, x = _model()
    step = make_step(model, (x,), backward=True)
    step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                with_stack=True) as prof:
        step()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = load_trace(path)
    backward = [op for op in trace.ops if op.is_backward and op.name.startswith("aten::")]
    (relu_grad,) = [op for op in backward if op.name == "aten::threshold_backward"]
    relu = [op for op in trace.ops if op.name == "aten::relu" and not op.is_backward][0]
    assert relu_grad.module == relu.module and "Dropout" not in (relu_grad.module or "")
    assert relu_grad.source == relu.source and relu.source.startswith("tests/analyze/test_backward_attribution.py:")
    assert not [op for op in backward if op.source and "/bin/" in op.source]


@pytest.mark.slow
def test_join_pairs_each_counted_op_with_the_event_of_the_same_shapes_in_a_repeated_layer_model(tmp_path, one_thread):
    """GPT-2's blocks repeat every op name; one op the recorder sees and the trace does not used to shift every
    later pairing of that name (a quarter of the ops carried another op's counts)."""
    transformers = pytest.importorskip("transformers")
    from roofline.analyze.live import profile_steps

    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=3, n_head=2, n_embd=64, vocab_size=512,
                                                                  n_positions=64))
    ids = torch.randint(0, 512, (2, 16))
    step = make_step(model, {"input_ids": ids, "labels": ids}, backward=True)
    step()
    recording = record_ops(step, root=model)
    profile_steps(step, torch.device("cpu"), 1, tmp_path / "trace.json")
    trace = load_trace(tmp_path / "trace.json")
    _ensure_attributed(trace)
    counter = _TraceCounter()
    index = join.RecordedIndex.build(trace, [r.name for r in recording.ops], [r.phase for r in recording.ops],
                                     [_shape_key(r.input_tensors) for r in recording.ops])
    roots = join.roots_by_step(trace)
    (step_index,) = _step_list(trace)
    chosen, _ = join.choose_with_recording(trace, roots[step_index], join.children_index(trace), index,
                                           lambda op: True, shapes_of=lambda op: tuple(map(tuple, counter(op).input_shapes)))
    paired = [c for c in chosen if c.recorded is not None]
    assert len(paired) > 300
    wrong = [c for c in paired if recording.ops[c.recorded].phase != ("backward" if trace.ops[c.event].is_backward
                                                                     else "forward")
             or _shape_key(recording.ops[c.recorded].input_tensors)[:1] != tuple(map(tuple, counter(trace.ops[c.event]).input_shapes))[:1]]
    assert len(wrong) <= 0.01 * len(paired), [(recording.ops[c.recorded].name, trace.ops[c.event].name) for c in wrong]


class GradientPenalty(torch.nn.Module):
    """A forward that takes a gradient itself (WGAN-GP, physics-informed losses) through a submodule."""

    def __init__(self) -> None:
        super().__init__()
        self.critic = torch.nn.Linear(8, 1)

    def forward(self, x):
        x = x.detach().requires_grad_()
        (g,) = torch.autograd.grad(self.critic(x).sum(), x, create_graph=True)
        return g.pow(2).sum()


def test_a_forward_calling_autograd_grad_is_recorded_with_its_modules(one_thread):
    """torch's ModuleTracker hooked every module's inputs for backward, which made autograd.grad of a leaf raise
    ("A leaf node was passed to _will_engine_execute_node"): analyze of such a model exited 2."""
    model = GradientPenalty()
    recording = record_ops(make_step(model, (torch.randn(4, 8),), backward=True), root=model)
    forward_mm = [op for op in recording.ops if op.phase == "forward" and op.module == "critic"]
    assert [op.name for op in forward_mm if op.name in ("aten::addmm", "aten::mm")] == ["aten::addmm"]
    # its inner backward runs inside the module's forward, under create_graph: backward, not a recomputation
    assert {op.phase for op in recording.ops} == {"forward", "backward"}
