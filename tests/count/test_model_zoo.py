"""The model zoo: every torchvision classification model, Hugging Face architectures from tiny configs, nn
transformers, recurrent and FFT models, detectors and segmenters, torchvision.ops, int8 models, training steps,
autocast and channels_last. Each must leave <= 1% of its ops (and, where it runs on CPU, of its
time) without a formula, and count at least FlopCounterMode's FLOPs (see roofline.models.zoo).
benchmarks/model_zoo.py records the same numbers per model."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("torchvision")
pytest.importorskip("transformers")

from roofline.models.zoo import all_entries, coverage, more_entries, torch_entries  # noqa: E402

pytestmark = [pytest.mark.usefixtures("one_thread"), pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]  # torch.ao points to torchao
MAX_UNMODELED = 0.01
ENTRIES = all_entries()


@pytest.mark.slow
@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_zoo_model_is_counted(entry):
    result = coverage(entry)
    assert result.ops > 0
    assert result.unmodeled_op_share <= MAX_UNMODELED, result.unmodeled_names
    if result.unmodeled_time_share is not None:
        assert result.unmodeled_time_share <= MAX_UNMODELED, result.unmodeled_names
    assert result.flops > 0
    if result.flop_counter_flops is None:  # the reference could not run it (models/zoo.py says when): ours did
        assert "ModuleTracker" in result.flop_counter_error
        return
    assert result.flops_comparable >= result.flop_counter_flops, (result.flops_comparable, result.flop_counter_flops)


def test_the_zoo_holds_what_the_issue_names():
    import torchvision

    names = {e.name for e in ENTRIES}
    assert set(torchvision.models.list_models(module=torchvision.models)) <= names
    assert {"bert", "gpt2", "t5", "llama", "mistral", "mixtral", "vit", "whisper", "clip"} <= names
    assert {"nn.Transformer", "lstm", "gru", "fft"} <= names
    families = {e.family for e in ENTRIES}
    assert {"detection", "segmentation", "quantized", "training", "autocast"} <= families


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lstm (training)", "gru", "fft", "vit_b_16 (cpu, 32px)",
                                  "nn.TransformerEncoder (fast path)", "nn.TransformerEncoder (nested, padding mask)",
                                  "torchvision.ops (training)"])
def test_profiled_reports_have_no_unmodelled_time(name, cpu_ceilings, tmp_path):
    """The same models through the real pipeline: a live analyze (recording joined with a profiled trace), and
    the trace alone (how `roofline trace` sees a user's file)."""
    from roofline.analyze.live import analyze_model
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace

    entry = next(e for e in torch_entries() + more_entries() if e.name == name)
    torch.manual_seed(0)
    model, args, kwargs = entry.build(torch.device("cpu"))
    if kwargs:
        model = _Bound(model, kwargs)
    live = analyze_model(model, args, device="cpu", ceilings=cpu_ceilings, iters=2, warmup=1,
                         backward=entry.backward, loss_fn=(lambda out: out.square().mean()) if entry.backward else None)
    assert live.summary.unmodeled_time_share <= MAX_UNMODELED, [op.name for op in live.ops if not op.modeled]
    model.eval()
    with torch.no_grad(), torch.profiler.profile(record_shapes=True) as prof:
        model(*args)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    report = report_from_trace(load_trace(str(path)), cpu_ceilings)
    # the formulas' coverage of the rows counted whole. A row of an op's own host time beside its children's (its
    # time below its whole duration) is unmodelled where the trace cannot count that op (aten::index with its index
    # list recorded as [], an op on a nested operand) and its children only view or allocate: its work, uncounted
    whole = [op for op in report.ops if op.time_s == op.cpu_time_s]
    unmodelled = sum(op.time_s for op in whole if not op.modeled) / report.summary.total_time_s
    assert unmodelled <= MAX_UNMODELED, [op.name for op in whole if not op.modeled]
    assert report.summary.total_flops > 0


class _Bound(torch.nn.Module):
    """The model with its keyword inputs bound (analyze_model takes positional inputs)."""

    def __init__(self, model: torch.nn.Module, kwargs: dict) -> None:
        super().__init__()
        self.model, self.kwargs = model, kwargs

    def forward(self, *args):
        return self.model(*args, **self.kwargs)
