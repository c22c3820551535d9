"""analyze/pipeline.py: a big trace's later steps have their ops' events chosen apart (by a forked child where it can
fork, else in-process when collected); the report is the same as when every step is chosen in turn here.
tests/render/test_background_png.py runs the forked child (in a fresh interpreter)."""

from pathlib import Path

import msgspec
import pytest

import roofline.analyze.pipeline as pipeline
from roofline.analyze.trace_file import analyze_trace_file
from roofline.forked import InProcess

TRAIN = Path(__file__).resolve().parents[1] / "data" / "h200" / "llama_tiny_train_fp16_b2_s256.json.gz"


@pytest.mark.parametrize("here", [0, 1])
def test_choosing_the_later_steps_apart_gives_the_same_report(monkeypatch, here):
    whole = analyze_trace_file(TRAIN)
    later = []
    monkeypatch.setattr(pipeline, "_steps_chosen_here", lambda steps, events: here)
    monkeypatch.setattr(pipeline, "meanwhile", lambda work, *args, fork=True: (later.append((work, args[1])),
                                                                               InProcess(work, *args))[1])
    split = analyze_trace_file(TRAIN)
    assert (pipeline._choices_of, [0, 1][here:]) in later
    assert split.steps == 2 and {op.step for op in split.ops} == {0, 1} and len(split.ops) > 1000
    assert msgspec.json.encode(split) == msgspec.json.encode(whole)
