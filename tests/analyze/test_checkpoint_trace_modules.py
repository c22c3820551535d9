"""Activation checkpointing read from a torch.profiler trace with Python stacks (what `roofline profile SCRIPT` and
`roofline trace` read): a recomputed op is named by the module path of the forward op it reruns, and no doctor chain
joins ops of two phases. Both torch.utils.checkpoint flavours, on a real CPU run.

In the backward the profiler's stack holds only the checkpointed module (the modules that called checkpoint() have
returned): recomputed ops were "Block_1.Sequential_1.Linear_2" while their forward twins were
"Net_0.Block_1.Sequential_1.Linear_2", and a reentrant checkpoint's backward ops borrowed the short name (gpu_sweep,
checkpoint_train on the H200)."""

from __future__ import annotations

import json

import warnings

import pytest
import torch
from torch.utils.checkpoint import checkpoint

from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.doctor.rules.unfused_chain import find_chains

D = 32


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.n = torch.nn.LayerNorm(D)
        self.f = torch.nn.Sequential(torch.nn.Linear(D, 4 * D), torch.nn.GELU(), torch.nn.Linear(4 * D, D))

    def forward(self, x):
        return x + self.f(self.n(x))


class Net(torch.nn.Module):
    def __init__(self, reentrant: bool) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(2))
        self.reentrant = reentrant

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=self.reentrant)
        return x


@pytest.fixture(scope="module", params=[False, True], ids=["non-reentrant", "reentrant"])
def checkpointed_file(request, tmp_path_factory):
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        model = Net(request.param)
        x = torch.randn(8, D, requires_grad=request.param)
        path = tmp_path_factory.mktemp("ckpt") / "trace.json"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                        with_stack=True) as prof:
                model(x).square().mean().backward()
        prof.export_chrome_trace(str(path))
    finally:
        torch.set_num_threads(previous)
    return path


@pytest.fixture(scope="module")
def checkpointed_trace(checkpointed_file):
    return load_trace(checkpointed_file)


def _phase(op) -> str:
    return "recompute" if op.is_recompute else "backward" if op.is_backward else "forward"


def test_recomputed_ops_carry_their_forward_twins_module_paths(checkpointed_trace):
    named = [(op.name, _phase(op), op.module) for op in checkpointed_trace.ops
             if op.name in ("aten::native_layer_norm", "aten::addmm")]
    forward = [(name, module) for name, phase, module in named if phase == "forward"]
    recomputed = [(name, module) for name, phase, module in named if phase == "recompute"]
    assert len(forward) == 6 and all(module.startswith("Net_0.Block_") for _, module in forward), forward
    # the backward reruns the blocks last first, each as its forward ran (non-reentrant stops after what the
    # backward needs, but the profiler still records the op it aborts)
    twins = [op for block in ("Block_1", "Block_0") for op in forward if f".{block}." in op[1]]
    assert recomputed == twins
    # a reentrant checkpoint's backward ops take their module from the recomputed op that made their node
    grads = {op.module for op in checkpointed_trace.ops if op.name == "aten::mm" and op.is_backward}
    assert grads == {module for name, module in forward if name == "aten::addmm"}


def test_no_chain_joins_two_phases(checkpointed_trace, cpu_ceilings):
    report = report_from_trace(checkpointed_trace, cpu_ceilings)
    chains = find_chains(report)
    assert [sorted({op.phase for op in chain}) for chain in chains if len({op.phase for op in chain}) > 1] == []
    # the loss's backward (square, mean) is a chain of its own, ahead of the LayerNorm recomputed next
    assert any(op.phase == "backward" and not op.module for chain in chains for op in chain)
    recomputed = {op.module for op in report.ops if op.phase == "recompute"}
    assert recomputed and recomputed <= {op.module for op in report.ops if op.phase == "forward"}


def test_the_op_non_reentrant_recomputation_aborts_carries_no_flops(checkpointed_trace, cpu_ceilings, request):
    # non-reentrant checkpointing stops its rerun by raising in the saved-tensor hook of the last op whose inputs the
    # backward needs, before that op's kernel runs: the profiler records the op anyway, and a trace counted it as a
    # full recomputed product (a script's recompute FLOPs were 2x what ran; the live join already gave it none)
    reentrant = request.node.callspec.params["checkpointed_file"]
    report = report_from_trace(checkpointed_trace, cpu_ceilings)
    product = 2 * 8 * D * 4 * D
    flops = [op.flops for op in report.ops if op.phase == "recompute" and op.name == "aten::addmm"]
    assert flops == ([product] * 4 if reentrant else [product, 0, product, 0])
    aborted = [op for op in report.ops if op.phase == "recompute" and op.name == "aten::addmm" and op.flops == 0]
    # known to do nothing: modelled, so its host time is not blamed on a missing formula
    assert len(aborted) == (0 if reentrant else 2) and all(op.bytes == 0 and op.modeled for op in aborted)


def test_an_aborted_op_that_launched_a_kernel_is_counted(checkpointed_trace, cpu_ceilings, request):
    # on a GPU a kernel under the op says it ran: its hook saved an output, or the checkpoint does not stop early
    if request.node.callspec.params["checkpointed_file"]:
        pytest.skip("a reentrant checkpoint aborts nothing")
    marked = [op for op in checkpointed_trace.ops if op.is_aborted and op.name == "aten::addmm"]
    assert marked
    for op in marked:
        op.total_kernel_us = 3.0
    report = report_from_trace(checkpointed_trace, cpu_ceilings)
    flops = [op.flops for op in report.ops if op.phase == "recompute" and op.name == "aten::addmm"]
    assert flops == [2 * 8 * D * 4 * D] * 4


def test_hf_gradient_checkpointing_names_recomputed_layers_like_their_forward(tmp_path):
    """transformers' gradient_checkpointing_enable(): each decoder layer is the checkpointed module."""
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        model = transformers.LlamaForCausalLM(config)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.gradient_checkpointing_enable()
            model.train()
            ids = torch.randint(0, 64, (2, 8))
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                        with_stack=True) as prof:
                model(input_ids=ids, labels=ids, use_cache=False).loss.backward()
        prof.export_chrome_trace(str(tmp_path / "trace.json"))
    finally:
        torch.set_num_threads(previous)
    ops = load_trace(tmp_path / "trace.json").ops
    linears = {phase: [op.module for op in ops if op.name == "aten::mm" and _phase(op) == phase]
               for phase in ("forward", "recompute")}
    assert len(linears["recompute"]) == 14  # q, k, v, o, gate, up, down of both layers
    assert set(linears["recompute"]) == {m for m in linears["forward"] if ".LlamaDecoderLayer_" in m}
    assert all(m.startswith("LlamaForCausalLM_0.LlamaModel_0.LlamaDecoderLayer_") for m in linears["recompute"])


def test_the_aborted_op_is_found_without_the_hooks_detach_below_it(checkpointed_file, cpu_ceilings, request,
                                                                    tmp_path):
    """The rerun's last recorded op is the aborted one itself where the hook's detaches are not recorded below it:
    that op, not the one before it (the transpose's as_strided), carries no FLOPs."""
    if request.node.callspec.params["checkpointed_file"]:
        pytest.skip("a reentrant checkpoint aborts nothing")
    data = json.loads(checkpointed_file.read_text())
    events = data["traceEvents"]
    aborted = [op for op in load_trace(checkpointed_file).ops if op.is_aborted and op.name == "aten::addmm"]
    spans = [(op.ts_us, op.ts_us + op.dur_us) for op in aborted]
    data["traceEvents"] = [e for e in events if not (e.get("name") in ("aten::detach", "detach") and any(
        lo <= e["ts"] <= hi for lo, hi in spans))]
    assert len(data["traceEvents"]) < len(events)
    path = tmp_path / "no_detach.json"
    path.write_text(json.dumps(data))
    report = report_from_trace(load_trace(path), cpu_ceilings)
    flops = [op.flops for op in report.ops if op.phase == "recompute" and op.name == "aten::addmm"]
    assert flops == [2 * 8 * D * 4 * D, 0] * 2


def test_an_op_starting_as_the_rerun_ends_is_not_taken_for_its_aborted_op(checkpointed_file, cpu_ceilings, request,
                                                                           tmp_path):
    """The backward op that starts the very microsecond the saved-tensor hook's rerun ends is past the rerun: every
    op keeps the count it has when the rerun ends earlier."""
    if request.node.callspec.params["checkpointed_file"]:
        pytest.skip("a reentrant checkpoint aborts nothing")
    data = json.loads(checkpointed_file.read_text())
    timed = [e for e in data["traceEvents"] if e.get("ph") == "X"]
    hooks = [e for e in timed if str(e.get("name", "")).endswith(": unpack_hook")]
    ops = sorted((e for e in timed if e.get("cat") == "cpu_op"), key=lambda e: e["ts"])
    assert hooks
    for hook in hooks:
        end = hook["ts"] + hook["dur"]
        after = next(e for e in ops if e["tid"] == hook["tid"] and e["ts"] > end)
        hook["dur"] = after["ts"] - hook["ts"]  # the hook's frame now ends as that op starts
        assert hook["ts"] + hook["dur"] == after["ts"]
    path = tmp_path / "touching.json"
    path.write_text(json.dumps(data))
    before = report_from_trace(load_trace(checkpointed_file), cpu_ceilings)
    touching = report_from_trace(load_trace(path), cpu_ceilings)
    assert [(op.name, op.phase, op.flops) for op in touching.ops] == [(op.name, op.phase, op.flops)
                                                                       for op in before.ops]
