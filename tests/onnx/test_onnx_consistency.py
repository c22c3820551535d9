"""The ONNX roofline agrees with the PyTorch one for models exported from PyTorch (benchmarks/onnx_consistency.py
records the full-size figures): total FLOPs and bytes within 2%, no unmodelled node on either side, where the two
graphs match node by node. Small and fast: ResNet-18 at 64x64 without its BatchNorms (the TorchScript exporter, 1 s,
folds BatchNorm into Conv; the benchmark keeps them with the dynamo exporter's optimize=False) run unoptimised, and a
2-layer BERT from transformers (the dynamo exporter: the TorchScript one fails on transformers 5's BertModel) at
ORT's level all, whose Gemm-with-bias is PyTorch's addmm."""

from __future__ import annotations

import warnings

import pytest

from benchmark_scripts import BENCHMARKS, load_benchmark

pytestmark = pytest.mark.slow
CASES = {"resnet18": "disable", "bert_base": "all"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_onnx_totals_match_pytorch(name, tmp_path, monkeypatch, cpu_ceilings, one_thread):
    import torch

    from roofline.analyze.live import analyze_model
    from roofline.analyze.onnx_session import analyze_ort_model

    bench = load_benchmark("onnx_consistency")
    for key, value in bench.SMALL_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import onnx_models

    if name == "resnet18":
        import torchvision

        model, inputs = torchvision.models.resnet18(norm_layer=lambda _: torch.nn.Identity()).eval(), \
            onnx_models.resnet18()[1]
    else:
        model, inputs = onnx_models.bert_base()
    path = tmp_path / "model.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, inputs, str(path), dynamo=name != "resnet18", verbose=False)
    level = CASES[name]
    ours = analyze_ort_model(str(path), opt_level=level, warmup=0, iters=1, threads=1)
    theirs = analyze_model(model, inputs, device=torch.device("cpu"), ceilings=cpu_ceilings, warmup=0, iters=1)
    assert all(op.modeled for op in ours.ops), [op.name for op in ours.ops if not op.modeled]
    assert theirs.summary.unmodeled_time_share == 0
    assert ours.summary.total_flops == pytest.approx(theirs.summary.total_flops, rel=0.02)
    assert ours.summary.total_bytes == pytest.approx(theirs.summary.total_bytes, rel=0.02)


def test_the_benchmark_says_when_the_cuda_provider_is_missing(tmp_path, capsys):
    import onnxruntime
    import torch

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers() or torch.cuda.is_available():
        pytest.skip("a CUDA provider or GPU is here: the message is for machines without one")
    bench = load_benchmark("onnx_consistency")
    with pytest.raises(SystemExit, match="CUDAExecutionProvider missing: onnxruntime .* install onnxruntime-gpu"):
        bench.main([str(tmp_path), "--provider", "cuda"])


def test_the_benchmark_table_says_which_times_are_device_times():
    bench = load_benchmark("onnx_consistency")
    torch_row = {"flops": 2e9, "bytes": 1e8, "time_s": 2.8e-3, "ops": 100, "unmodelled_ops": 0, "device_time_s": 2.8e-3,
                 "host_time_s": 0.0}
    deployed = {**torch_row, "time_s": 3.0e-3, "device_time_s": 2.6e-3, "host_time_s": 0.4e-3, "flops_ratio": 1.0,
                "bytes_ratio": 0.9, "within_2pct": {"flops": True, "bytes": False}, "host_timed_gpu_nodes": 12,
                "device_attribution": {"attributed_share": 0.97, "kernel_time_per_run_s": 2.7e-3,
                                       "offset_from": "clocks", "anchor_residual_us": 3.0}}
    exported = {**deployed, "device_time_s": 0.0, "host_time_s": 4.8e-3, "device_attribution": None}
    meta = {"date": "d", "device": "NVIDIA H200", "torch": "2", "onnxruntime": "1.31.1",
            "provider": "CUDAExecutionProvider", "command": "c"}
    text = bench.markdown(meta, {"bert_base": {"torch": torch_row, "deployed": deployed, "as exported": exported}})
    assert "| bert_base | torch | 2e+09 | 1e+08 | - | - | 100 | 0 | 2.8 ms device |" in text
    assert "| 3 ms (2.6 device + 0.4 host) |" in text and "| 4.8 ms host |" in text
    assert ("- bert_base deployed: CUPTI saw 2.7 ms of GPU kernels and copies per run; 97.0% attributed to nodes "
            "(clock offset from clocks, anchor residual 3.0 us); 12 GPU node(s)") in text
