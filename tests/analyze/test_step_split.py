"""A big trace of several steps has its rows chosen by a forked child, step by step, while this process builds them
(pipeline._emit_choices through forked.Streamed), then works out the sync sites and memory summary: the report must be
the one a single loop gives, byte for byte, also when the child stops part way (this process does the rest)."""

from pathlib import Path

import pytest

from roofline import forked
from roofline.analyze import pipeline
from roofline.analyze.trace_file import analyze_trace
from roofline.capture.kineto import load_trace

DATA = Path(__file__).resolve().parents[1] / "data"
TRACES = ["h200/llama_tiny_train_fp16_b2_s256.json.gz", "h200/bert_base_fwd_fp32_b16_s128.json.gz",
          "devtraces/torch2.7.1_cpu_mlp_train_rank0.pt.trace.json.gz",
          "devtraces/torch2.1.2_cpu_ddp_gloo_rank0.pt.trace.json.gz",
          "devtraces/triton_kernel_in_module_h200.json.gz"]


def _report_bytes(path: Path) -> bytes:
    return analyze_trace(load_trace(path)).json_bytes()


def _stops_after_one_step(trace, steps, roots, children, is_row, side_of, emit):
    pipeline._emit_choices(trace, steps[:1], roots, children, is_row, None, emit)
    raise RuntimeError("the child dies after its first step, before the sync sites and memory summary")


@pytest.mark.parametrize("name", TRACES)
@pytest.mark.parametrize("child", ["whole", "stops early"])
def test_rows_chosen_by_a_child_give_the_same_report(name, child, monkeypatch):
    path = DATA / name
    # a thread another test left running makes fork unsafe for the pipeline: the child here runs no lock-taking code
    monkeypatch.setattr(pipeline, "can_fork", lambda: True)
    monkeypatch.setattr(pipeline, "STEP_SPLIT_MIN_EVENTS", 1 << 40)
    whole = _report_bytes(path)
    monkeypatch.setattr(pipeline, "STEP_SPLIT_MIN_EVENTS", 0)
    if child == "stops early":
        monkeypatch.setattr(pipeline, "_emit_choices", _stops_after_one_step)
    streams = []

    class Recorded(forked.Streamed):
        def __iter__(self):
            streams.append(self)
            return super().__iter__()

    monkeypatch.setattr(pipeline, "Streamed", Recorded)
    assert _report_bytes(path) == whole
    assert len(streams) == 1 and streams[0].complete == (child == "whole")


def test_small_traces_and_single_steps_are_chosen_here(monkeypatch):
    trace = load_trace(DATA / "h200/llama_tiny_train_fp16_b2_s256.json.gz")
    steps = pipeline._step_list(trace)
    monkeypatch.setattr(pipeline, "can_fork", lambda: True)
    assert len(steps) == 2 and not pipeline._choose_elsewhere(trace, steps)  # 11,746 events
    monkeypatch.setattr(pipeline, "STEP_SPLIT_MIN_EVENTS", 0)
    assert pipeline._choose_elsewhere(trace, steps)
    assert not pipeline._choose_elsewhere(trace, steps[:1])
    monkeypatch.setattr(pipeline, "can_fork", lambda: False)
    assert not pipeline._choose_elsewhere(trace, steps)


def _emit_three(fail, emit):
    for i in range(3):
        emit({"item": i, "shared": "x" * 1000})
    if fail:
        raise ValueError("stops")


@pytest.mark.parametrize("fail", [False, True])
def test_streamed_items_arrive_in_order(fail):
    stream = forked.Streamed(_emit_three, fail)
    items = list(stream)
    assert [item["item"] for item in items] == [0, 1, 2]
    assert items[0]["shared"] is items[2]["shared"]  # one pickler: sent once
    assert stream.complete is not fail


def test_leaving_a_stream_early_stops_its_child():
    stream = forked.Streamed(lambda emit: [emit(b"x" * (1 << 20)) for _ in range(64)])
    for _ in stream:
        break
    assert not stream.complete  # and the child, which had 63 MB more to write, was reaped
