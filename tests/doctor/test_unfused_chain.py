import pytest

from doctor_cases import op, report
from roofline.doctor import diagnose

X = [4, 64, 256]
R = [4, 64, 1]


def _rms_norm_chain(dtype: str = "float32"):
    return [
        op("aten::pow", [(X, dtype)], out=X, module="norm", time=2e-5),
        op("aten::mean", [(X, dtype)], out=R, module="norm", time=2e-5),
        op("aten::add", [(R, dtype)], out=R, module="norm", time=1e-5),
        op("aten::rsqrt", [(R, dtype)], out=R, module="norm", time=1e-5),
        op("aten::mul", [(X, dtype), (R, dtype)], out=X, module="norm", time=2e-5),
        op("aten::mul", [(X, dtype), ([256], dtype)], out=X, module="norm", time=2e-5),
    ]


def test_unfused_norm_chain_is_found_with_the_bytes_fusion_saves():
    r = report(_rms_norm_chain())
    findings = diagnose(r, rules=["unfused-chain"])
    assert len(findings) == 1
    f = findings[0]
    assert f.evidence["ops"] == ["pow", "mean", "add", "rsqrt", "mul", "mul"]
    x_bytes = 4 * 64 * 256 * 4
    # x read once (later reads of that shape count as the chain's own), the weight, the last output written once
    assert f.evidence["bytes_fused"] == pytest.approx(x_bytes + 256 * 4 + x_bytes)
    expected = 1e-4 - f.evidence["bytes_fused"] / r.ceilings.memory_bandwidth_bytes_per_s
    assert f.estimated_savings_s == pytest.approx(expected)
    assert f.evidence["bytes_saved"] > 0


def test_one_fused_norm_op_is_silent():
    r = report([op("aten::rms_norm", [(X, "float32"), ([256], "float32")], out=X, time=2e-5)])
    assert diagnose(r, rules=["unfused-chain"]) == []


def test_chain_broken_by_matmuls_is_silent():
    ops = []
    for _ in range(3):
        ops.append(op("aten::mul", [(X, "float32"), (X, "float32")], out=X))
        ops.append(op("aten::mm", [([256, 256], "float32"), ([256, 256], "float32")], out=[256, 256],
                      bound="compute", flops=2 * 256**3))
    assert diagnose(report(ops), rules=["unfused-chain"]) == []


def test_to_that_returned_its_input_is_no_chain():
    """bad-syncs on a CPU: `.cpu().to(device)` of a CPU tensor returns it (counted 0 bytes); ten iterations made
    a chain of 20 `to` ops with 20 MiB of invented traffic, the doctor's top finding."""
    ops = [op("aten::to", [(X, "float32")], out=X, time=4e-4, bound="launch") for _ in range(20)]
    assert diagnose(report(ops), rules=["unfused-chain"]) == []
    # a `to` that converted (bytes counted) still chains
    casts = [op("aten::to", [(X, "float32")], out=X, out_dtype="float16", nbytes=6 * 65536, time=4e-4)
             for _ in range(3)]
    assert diagnose(report(casts), rules=["unfused-chain"])


def test_a_to_that_returned_its_input_drops_out_of_a_chain_like_a_view():
    chain = _rms_norm_chain()
    chain.insert(1, op("aten::to", [(X, "float32")], out=X, module="norm", time=2e-5))
    findings = diagnose(report(chain), rules=["unfused-chain"])
    assert [f.evidence["ops"] for f in findings] == [["pow", "mean", "add", "rsqrt", "mul", "mul"]]


def test_a_disabled_dropout_is_no_link_of_a_chain():
    """diffusers' blocks hold Dropout(p=0.0), which returns its input (counted 0 bytes) even in train mode: the
    chain was titled 'dropout > div > add > native_layer_norm' (sweep 4, a UNet denoising loop)."""
    import torch

    from roofline.count import count_op, to_meta

    x = torch.randn(*X)
    assert torch.nn.functional.dropout(x, p=0.0, training=True) is x  # what torch runs: nothing
    assert count_op("aten::dropout", (to_meta(x), 0.0, True)).bytes == 0
    chain = _rms_norm_chain()
    chain.insert(0, op("aten::dropout", [(X, "float32")], out=X, module="norm", time=2e-6, bound="launch"))
    findings = diagnose(report(chain), rules=["unfused-chain"])
    assert [f.evidence["ops"] for f in findings] == [["pow", "mean", "add", "rsqrt", "mul", "mul"]]
    # a dropout that ran (its mask and scale counted) is still a link
    chain[0] = op("aten::dropout", [(X, "float32")], out=X, module="norm", time=2e-5, nbytes=2 * 4 * 64 * 256 * 4)
    assert [f.evidence["ops"] for f in diagnose(report(chain), rules=["unfused-chain"])] == [
        ["dropout", "pow", "mean", "add", "rsqrt", "mul", "mul"]]


def _optimizer_step_report(tmp_path, **adamw):
    import torch

    from doctor_cases import ceilings
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace

    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(4)])
    opt = torch.optim.AdamW(model.parameters(), **adamw)
    model(torch.randn(8, 64)).sum().backward()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        opt.step()
    prof.export_chrome_trace(str(tmp_path / "step.json"))
    return report_from_trace(load_trace(tmp_path / "step.json"), ceilings())


def test_a_chain_of_the_optimizer_s_step_says_how_to_fuse_an_optimizer(tmp_path):
    """AdamW on CPU tensors updates each parameter op by op; the finding told the user to torch.compile 'the
    module' at '(top level)', which a compiled model's run still showed (sweep 4, a compiled timm ViT)."""
    findings = diagnose(_optimizer_step_report(tmp_path, foreach=False), rules=["unfused-chain"])
    # the step counter's increment (a 0-d add) reads nothing the chain makes: the chain starts at weight decay
    assert {tuple(f.evidence["ops"]) for f in findings} == {("sqrt", "div", "add", "addcdiv"),
                                                            ("mul", "lerp", "mul", "addcmul")}
    for f in findings:
        assert "in the optimizer's step:" in f.title and f.evidence["chains"] == 8  # 4 weights + 4 biases
        assert "fused=True" in f.fix and "compile the module" not in f.fix
    # what the fix says, done: one fused kernel per group, no chain left
    assert diagnose(_optimizer_step_report(tmp_path, fused=True), rules=["unfused-chain"]) == []


def test_a_chain_is_named_after_the_module_holding_most_of_its_time():
    """A Llama's backward chain began with the gradient add of an MLP Linear and went on through 17 ops of
    RMSNorm's backward: it was named after the Linear (gpu_sweep, hf_llama_sdpa_train on the H200)."""
    from roofline.doctor.rules.unfused_chain import _main_module
    from roofline.report import OpRecord

    linear, norm = "Llama.Layer.MLP.Linear", "Llama.Layer.RMSNorm"
    chain = [OpRecord(name="aten::add", module=linear, time_s=2e-6)] + [
        OpRecord(name="aten::mul", module=norm, time_s=1e-6) for _ in range(3)]
    assert _main_module(chain) == norm
    tie = [OpRecord(name="aten::add", module=linear, time_s=1e-6), OpRecord(name="aten::mul", module=norm, time_s=1e-6)]
    assert _main_module(tie) == linear
    assert _main_module([OpRecord(name="aten::add", module=linear), OpRecord(name="aten::mul", module=norm)]) == linear


def test_a_chain_never_joins_two_phases():
    """The loss's backward (div > pow > mul > mul) and the LayerNorm a checkpoint recomputes next are adjacent and
    share a shape: they were one chain 'in Block.LayerNorm' (gpu_sweep, checkpoint_train on the H200)."""
    loss_backward = [op(f"aten::{name}", [(X, "float32")], out=X, module="", phase="backward", time=1e-5)
                     for name in ("div", "pow", "mul", "mul")]
    recomputed = [op("aten::native_layer_norm", [(X, "float32"), ([256], "float32")], out=X,
                     module="Net.Block.LayerNorm", phase="recompute", time=4e-5)]
    findings = diagnose(report(loss_backward + recomputed), rules=["unfused-chain"])
    assert [(f.evidence["ops"], f.title.split(": ")[0]) for f in findings] == [
        (["div", "pow", "mul", "mul"], "unfused chain of 4 memory-bound ops x1 in (top level)")]


def test_the_saving_s_method_names_the_cpu_on_a_cpu_run_and_the_gpu_on_a_gpu_run():
    """sweep 5: every CPU profile's chain findings said their saving came from "measured bandwidth of the chain's
    GPU" on a machine with no GPU."""
    from doctor_cases import ceilings
    (cpu,) = diagnose(report(_rms_norm_chain()), rules=["unfused-chain"])
    assert cpu.savings_method.endswith("/ the CPU's measured memory bandwidth")
    (gpu,) = diagnose(report(_rms_norm_chain(), ceil=ceilings(device="cuda:0", device_name="NVIDIA H200")),
                      rules=["unfused-chain"])
    assert gpu.savings_method.endswith("/ measured bandwidth of the chain's GPU")


def test_ops_without_recorded_shapes_make_no_chain():
    """A trace recorded without shapes: its elementwise ops are unmodelled (no bytes), so a fused pass's time is
    unknown; a chain of them claimed its whole time as the saving (HTA's df_index_resolver trace: 51.6 ms)."""
    blind = []
    for chained in _rms_norm_chain():
        chained.input_shapes, chained.input_dtypes, chained.input_strides, chained.output_shapes = [], [], [], []
        chained.modeled, chained.bound = False, "unmodeled"
        blind.append(chained)
    assert diagnose(report(blind), rules=["unfused-chain"]) == []
    assert len(diagnose(report(_rms_norm_chain()), rules=["unfused-chain"])) == 1


def test_a_gpu_whose_activity_was_not_recorded_gets_no_chain_from_host_launch_times():
    """Op times of a GPU trace without kernels (analyze/unused_gpu.py say_device_not_recorded) are the host's
    launches: no memory traffic for fusion to remove. The same chain on a GPU with its kernels is found."""
    from doctor_cases import ceilings

    gpu = ceilings(device="cuda", device_name="GPU (model not named)", bandwidth=0.0, peaks={})
    assert len(diagnose(report(_rms_norm_chain(), ceil=gpu), rules=["unfused-chain"])) == 1
    unrecorded = report(_rms_norm_chain(), ceil=gpu, extra={"device_not_recorded": "nccl backend"})
    assert diagnose(unrecorded, rules=["unfused-chain"]) == []


def _autocast_accumulation_report(tmp_path):
    """Two Linears with biases and an op-by-op SiLU (x * sigmoid(x)) between them, under autocast to bfloat16 on
    the CPU, two micro-batches accumulated: the second backward adds each gradient into its .grad (AccumulateGrad),
    after autograd's cast of the bfloat16 gradient back to the fp32 parameter's dtype."""
    import torch

    from doctor_cases import ceilings
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up, self.down = torch.nn.Linear(64, 256), torch.nn.Linear(256, 10)

        def forward(self, x):
            h = self.up(x)
            return self.down(h * torch.sigmoid(h) * 0.5)

    torch.manual_seed(0)
    model, x = Net(), torch.randn(32, 64)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(2):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(x).float().sum()
            loss.backward()
    prof.export_chrome_trace(str(tmp_path / "accumulate.json"))
    return report_from_trace(load_trace(tmp_path / "accumulate.json"), ceilings())


def test_autograd_s_gradient_accumulation_joins_no_chain(tmp_path):
    """train_amp_accum (sweep 6): 'unfused chain of 3 memory-bound ops x18 in Sequential.Linear: sum > _to_copy >
    add' (warning): a bias gradient's reduction, autocast's cast of a gradient back to fp32 and AccumulateGrad's
    add into .grad, autograd's own steps after the backward graph that compiling the module would fuse. The
    forward's op-by-op SiLU is still a chain of the user's module."""
    from roofline.doctor.rules.unfused_chain import find_chains

    r = _autocast_accumulation_report(tmp_path)
    accumulated = [o for o in r.ops if o.grad_accumulation]
    assert {o.name for o in accumulated} >= {"aten::add_"} and {o.phase for o in accumulated} == {"backward"}
    assert not any(o.grad_accumulation for o in r.ops if o.phase == "forward")
    assert not [c for c in find_chains(r) if any(o.grad_accumulation for o in c)]
    # the SiLU's forward and its backward's muls; before, also ('sum', '_to_copy', 'add')
    assert {tuple(f.evidence["ops"]) for f in diagnose(r, rules=["unfused-chain"])} == {
        ("sigmoid", "mul", "mul"), ("mul", "mul", "mul")}


def _traced(chain):
    """The ops as a trace gives them: no output recorded."""
    for o in chain:
        o.output_shapes = []
    return chain


def test_a_traced_reduction_links_to_the_op_that_reads_its_result():
    """Traces record no outputs: the RMSNorm chain still links through mean's (4, 64, 1) result, a keepdim
    reduction of the (4, 64, 256) it reduced."""
    findings = diagnose(report(_traced(_rms_norm_chain())), rules=["unfused-chain"])
    assert [f.evidence["ops"] for f in findings] == [["pow", "mean", "add", "rsqrt", "mul", "mul"]]


def test_traced_reductions_of_different_tensors_are_no_chain():
    """A reduction's output shape is unknown in a trace; an op after it used to join the chain whatever it read:
    sums over unrelated tensors one after another (an MTIA inference trace: 'sum > sum > sum > sum' x16) were
    reported as a chain to fuse."""
    ops = _traced([op("aten::sum", [([64 * (i + 1), 128], "float32")], time=1e-5) for i in range(5)])
    assert diagnose(report(ops), rules=["unfused-chain"]) == []


def test_an_op_after_a_traced_softmax_joins_only_if_it_reads_the_softmax_s_shape():
    softmax = op("aten::_softmax", [(X, "float32")], time=2e-5)
    reads_it = op("aten::mul", [(X, "float32"), ([1], "float32")], time=2e-5)
    unrelated = op("aten::add", [([7, 9], "float32"), ([7, 9], "float32")], time=2e-5)
    then = op("aten::mul", [([7, 9], "float32"), ([7, 9], "float32")], time=2e-5)
    assert [f.evidence["ops"] for f in diagnose(report(_traced([softmax, reads_it, op(
        "aten::add", [(X, "float32"), (X, "float32")], time=2e-5)])), rules=["unfused-chain"])] == [
        ["_softmax", "mul", "add"]]
    assert diagnose(report(_traced([softmax, unrelated, then])), rules=["unfused-chain"]) == []


def test_the_listed_reductions_of_a_shape_are_the_shapes_matched_one_by_one():
    """chain_positions asks a set of every shape a reduction may give (_reductions_of); _reduction_of_any, the
    match it lists, must agree on every shape of up to the source's rank."""
    import itertools

    from roofline.doctor.rules.unfused_chain import _reduction_of_any, _reductions_of

    for source in [(4, 64, 256), (1, 4, 1), (2, 2), (3,), (2, 1, 3, 1)]:
        listed = _reductions_of(source)
        for rank in range(len(source) + 1):
            for shape in itertools.product((1, 2, 3, 4, 64, 256), repeat=rank):
                assert (shape in listed) == _reduction_of_any(shape, [source]), (source, shape)


def test_a_chain_links_through_a_reduction_of_more_dims_than_are_listed():
    """A reduction of more than MAX_LISTED_RANK dims is matched shape by shape, as before it was listed."""
    from roofline.doctor.rules.unfused_chain import MAX_LISTED_RANK

    wide = [2] * (MAX_LISTED_RANK + 1)
    kept = [2] * MAX_LISTED_RANK + [1]
    chain = _traced([op("aten::pow", [(wide, "float32")], time=2e-5), op("aten::sum", [(wide, "float32")], time=2e-5),
                     op("aten::rsqrt", [(kept, "float32")], time=2e-5),
                     op("aten::mul", [(kept, "float32")], time=2e-5)])
    assert [f.evidence["ops"] for f in diagnose(report(chain), rules=["unfused-chain"])] == [
        ["pow", "sum", "rsqrt", "mul"]]
