"""The live path's pieces with tiny modules: which output becomes the loss, what a step does, the timings'
methods and sample counts, the report's live fields, and the refusal of a model that runs no op."""

from __future__ import annotations

import pytest
import torch

from roofline.analyze.live import _main_tensor, analyze_model, call_model, default_loss, make_step, profile_steps, \
    time_steps
from roofline.errors import RooflineError


class Out:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def test_main_tensor_preference_order():
    w = torch.ones(3, requires_grad=True)
    a, b = w * 2, w * 3
    assert _main_tensor(a) is a
    assert _main_tensor(Out(last_hidden_state=a, logits=b)) is b
    assert _main_tensor(Out(pooler_output=a)) is a
    assert _main_tensor({"prediction_logits": a, "x": b}) is a
    assert _main_tensor({"x": torch.ones(2), "y": [a]}) is a
    assert _main_tensor([torch.ones(2, dtype=torch.long), (b,)]) is b
    assert _main_tensor(torch.ones(2)) is None and _main_tensor(Out()) is None and _main_tensor(3) is None
    loss = (w * 2).sum()
    assert default_loss(Out(loss=loss, logits=a)) is loss
    assert torch.equal(default_loss(Out(loss=torch.ones(1), logits=a)), a.float().mean())  # no grad: not a loss
    assert torch.equal(default_loss(Out(loss=(w * 1), logits=a)), a.float().mean())  # not a scalar
    with pytest.raises(RooflineError, match="cannot make a loss from the model's output \\(Out\\)"):
        default_loss(Out(x=1))


def test_steps_and_calls(one_thread):
    lin = torch.nn.Linear(3, 2)
    x = torch.ones(4, 3)
    assert torch.equal(call_model(lin, (x,)), lin(x))
    assert call_model(lambda input: input * 2, {"input": x}).sum() == 24
    out = make_step(lin, (x,))()
    assert not out.requires_grad
    seen = []
    loss = make_step(lin, (x,), backward=True, loss_fn=lambda o: seen.append(o) or o.sum())()
    assert len(seen) == 1 and lin.weight.grad is not None and loss.item() == pytest.approx(lin(x).sum().item())
    grad = lin.weight.grad.clone()
    make_step(lin, (x,), backward=True, loss_fn=lambda o: o.sum())()
    assert torch.equal(lin.weight.grad, grad)  # zeroed each step, not accumulated


def test_timings_and_the_live_report(tmp_path, cpu_ceilings, one_thread):
    lin = torch.nn.Linear(8, 8)
    step = make_step(lin, (torch.ones(4, 8),))
    t = time_steps(step, torch.device("cpu"), 3)
    assert t.n == 3 and t.method == "perf_counter around each step, no profiler; median of 3 after warm-up"
    p = profile_steps(step, torch.device("cpu"), 2, tmp_path / "trace.json")
    assert p.n == 2 and (tmp_path / "trace.json").exists() and "under torch.profiler" in p.method
    report = analyze_model(lin, (torch.ones(4, 8),), device="cpu", ceilings=cpu_ceilings, warmup=1, iters=2,
                           workload="tiny", trace_path=tmp_path / "kept.json", backward=True)
    assert report.kind == "analyze" and report.workload == "tiny" and report.extra["backward"] is True
    assert report.step_time.n == 2 and report.profiled_step_time.n == 2 and (tmp_path / "kept.json").exists()
    assert {op.phase for op in report.ops} >= {"forward", "backward"}
    with pytest.raises(RooflineError, match="^Identity ran no torch operation in a step"):
        analyze_model(torch.nn.Identity(), (torch.ones(2),), device="cpu", ceilings=cpu_ceilings, warmup=0, iters=1)


def test_the_warmup_runs_that_many_steps_before_anything_is_timed(cpu_ceilings, one_thread):
    class Counting(torch.nn.Linear):
        calls = 0

        def forward(self, x):
            Counting.calls += 1
            return super().forward(x)

    def calls(**kw) -> int:
        Counting.calls = 0
        analyze_model(Counting(4, 4), (torch.ones(2, 4),), device="cpu", ceilings=cpu_ceilings, iters=1, **kw)
        return Counting.calls

    assert calls() - calls(warmup=0) == 2  # the default warm-up: two steps
    assert calls(warmup=3) - calls(warmup=0) == 3
