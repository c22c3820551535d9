"""The live pipeline on a CUDA GPU (skipped by `make test`; run with `PYTHONPATH=src python3 -m pytest -m cuda`)."""

import pytest
import torch

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.fixture(scope="module")
def gpu_ceilings():
    from roofline.device import get_ceilings

    return get_ceilings("cuda", quick=True)


def test_bf16_matmul_is_compute_bound_and_fully_attributed(gpu_ceilings):
    from roofline.analyze.live import analyze_model
    from roofline.models import get_workload

    w = get_workload("matmul", seq=4096, dtype="bfloat16", device="cuda")
    report = analyze_model(w.model, w.inputs, device="cuda", ceilings=gpu_ceilings, iters=3)
    mm = [op for op in report.ops if op.name == "aten::mm"]
    assert len(mm) == 1 and mm[0].bound == "compute" and mm[0].kernels
    assert report.summary.kernel_time_attributed_share >= 0.98
    assert 0.3 < mm[0].efficiency <= 1.2


def test_layernorm_fp16_is_memory_bound(gpu_ceilings):
    from roofline.analyze.live import analyze_model
    from roofline.models import get_workload

    w = get_workload("layernorm", dtype="float16", device="cuda")
    report = analyze_model(w.model, w.inputs, device="cuda", ceilings=gpu_ceilings, iters=3)
    norms = [op for op in report.ops if "layer_norm" in op.name]
    assert norms and norms[0].bound == "memory"


def test_llama_tiny_backward_on_gpu_has_no_unmodeled_time(gpu_ceilings):
    from roofline.analyze.live import analyze_model
    from roofline.models import get_workload

    w = get_workload("llama-tiny", batch=2, seq=128, dtype="float16", device="cuda", backward=True)
    report = analyze_model(w.model, w.inputs, device="cuda", ceilings=gpu_ceilings, iters=2, backward=True,
                           loss_fn=w.loss_fn)
    assert {op.phase for op in report.ops} >= {"forward", "backward"}
    assert report.summary.unmodeled_time_share < 0.02
    assert report.summary.kernel_time_attributed_share >= 0.98
