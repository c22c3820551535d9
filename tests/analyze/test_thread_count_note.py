"""A CPU run on another number of threads than its roofs were measured with says so (a model sweep on
OMP_NUM_THREADS=1 against 2-thread roofs read up to 2x low on % of roof, with nothing in the report saying why)."""

from __future__ import annotations

import msgspec
import torch

from roofline.analyze.live import analyze_model
from roofline.analyze.stale import thread_count_note
from roofline.report import Ceilings, Environment


def _analyze(ceilings: Ceilings):
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU())
    return analyze_model(model, (torch.randn(8, 64),), device="cpu", ceilings=ceilings, warmup=1, iters=2)


def test_a_live_cpu_run_on_other_threads_than_its_roofs_says_so(cpu_ceilings):
    threads = torch.get_num_threads()
    other = msgspec.structs.replace(cpu_ceilings, threads=threads + 1)
    report = _analyze(other)
    assert report.environment.threads == threads
    (note,) = [n for n in report.summary.notes if n.startswith("threads:")]
    assert f"used {threads} CPU thread(s), the CPU roofs were measured with {threads + 1}" in note
    assert f"OMP_NUM_THREADS={threads} roofline ceilings --device cpu --remeasure --json FILE" in note
    same = _analyze(msgspec.structs.replace(cpu_ceilings, threads=threads))
    assert not [n for n in same.summary.notes if n.startswith("threads:")]


def test_no_thread_note_for_a_gpu_a_trace_or_roofs_without_a_thread_count():
    cpu = Ceilings(device="cpu", threads=2)
    assert thread_count_note(Environment(threads=1), cpu) is not None
    assert thread_count_note(None, cpu) is None  # a trace: its run's threads are not known
    assert thread_count_note(Environment(threads=None), cpu) is None
    assert thread_count_note(Environment(threads=1), Ceilings(device="cpu")) is None  # datasheet: no count
    assert thread_count_note(Environment(threads=1), Ceilings(device="cuda", threads=2)) is None
