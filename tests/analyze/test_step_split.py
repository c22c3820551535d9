"""A big trace of several steps has the ops of its last steps built by a forked child (pipeline._steps_split): the
report must be the one a single loop gives, byte for byte, whether the child ran or its work fell back in-process."""

from pathlib import Path

import pytest

from roofline.analyze import pipeline
from roofline.analyze.trace_file import analyze_trace
from roofline.capture.kineto import load_trace
from roofline.capture.trace_model import op_columns
from roofline.forked import InProcess

DATA = Path(__file__).resolve().parents[1] / "data"
TRACES = ["h200/llama_tiny_train_fp16_b2_s256.json.gz", "h200/bert_base_fwd_fp32_b16_s128.json.gz",
          "devtraces/torch2.7.1_cpu_mlp_train_rank0.pt.trace.json.gz",
          "devtraces/torch2.1.2_cpu_ddp_gloo_rank0.pt.trace.json.gz",
          "devtraces/triton_kernel_in_module_h200.json.gz"]


def _report_bytes(path: Path) -> bytes:
    return analyze_trace(load_trace(path)).json_bytes()


@pytest.mark.parametrize("name", TRACES)
@pytest.mark.parametrize("fork", [True, False])
def test_split_steps_give_the_same_report(name, fork, monkeypatch):
    path = DATA / name
    monkeypatch.setattr(pipeline, "STEP_SPLIT_MIN_EVENTS", 1 << 40)
    whole = _report_bytes(path)
    monkeypatch.setattr(pipeline, "STEP_SPLIT_MIN_EVENTS", 0)
    monkeypatch.setattr(pipeline, "STEP_SPLIT_HERE_SHARE", 0.3)
    if not fork:
        monkeypatch.setattr(pipeline, "meanwhile", lambda work, *args: InProcess(work, *args))
    split_seen = []
    real_split = pipeline._steps_split
    monkeypatch.setattr(pipeline, "_steps_split", lambda *a: split_seen.append(real_split(*a)) or split_seen[-1])
    assert _report_bytes(path) == whole
    here, elsewhere = split_seen[0]
    assert here and elsewhere  # the child had steps to build


def test_the_split_keeps_the_first_steps_here_and_leaves_small_traces_whole(monkeypatch):
    trace = load_trace(DATA / "h200/llama_tiny_train_fp16_b2_s256.json.gz")
    steps = pipeline._step_list(trace)
    assert pipeline._steps_split(trace, steps) == (steps, [])  # 11,746 events: under the threshold
    monkeypatch.setattr(pipeline, "STEP_SPLIT_MIN_EVENTS", 0)
    per_step = [int((op_columns(trace).step == s).sum()) for s in steps]
    here, elsewhere = pipeline._steps_split(trace, steps)
    assert here + elsewhere == steps
    share = sum(per_step[: len(here)]) / sum(per_step)
    assert share >= pipeline.STEP_SPLIT_HERE_SHARE or not elsewhere
    assert pipeline._steps_split(trace, steps[:1]) == (steps[:1], [])
