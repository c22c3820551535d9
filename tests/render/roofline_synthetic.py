"""Synthetic Reports for renderer tests and the HTML load benchmark, built from roofline.report dataclasses.

Figures are plausible for an H200 running a small LLaMA, not measured: the renderers only need realistic shapes.
"""

from __future__ import annotations

import random

from roofline.report import (
    Ceilings,
    DatasheetEntry,
    Environment,
    Finding,
    KernelRecord,
    LiveTensor,
    MemorySummary,
    OpRecord,
    RankRecord,
    Report,
    Summary,
    SyncSite,
    Timing,
    module_tree,
)

XSS = "</script><script>alert(1)</script>"

BW = 4.0e12
PEAKS = {"bfloat16": 7.5e14, "float16": 7.5e14, "float32": 5.0e13}

_KINDS = [
    ("aten::mm", "compute", 2 * 4096 * 512 * 512, 3 * 4096 * 512 * 2, [[4096, 512], [512, 512]]),
    ("aten::bmm", "compute", 2 * 64 * 512 * 512 * 64, 3 * 64 * 512 * 64 * 2, [[64, 512, 64], [64, 64, 512]]),
    ("aten::add", "memory", 4096 * 512, 3 * 4096 * 512 * 2, [[4096, 512], [4096, 512]]),
    ("aten::mul", "memory", 4096 * 512, 3 * 4096 * 512 * 2, [[4096, 512], [4096, 512]]),
    ("aten::_softmax", "memory", 5 * 64 * 512 * 512, 2 * 64 * 512 * 512 * 2, [[64, 512, 512]]),
    ("aten::silu", "memory", 4 * 4096 * 1376, 2 * 4096 * 1376 * 2, [[4096, 1376]]),
    ("aten::mean", "launch", 4096, 4096 * 4, [[4096, 1]]),
    ("aten::copy_", "unmodeled", 0, 4096 * 512 * 4, [[4096, 512], [4096, 512]]),
]


def make_op(index: int, name: str, module: str, bound: str, flops: float, nbytes: float, shapes, dtype: str = "float16", time_s: float | None = None, phase: str = "forward") -> OpRecord:
    peak = PEAKS.get(dtype, PEAKS["float32"])
    intensity = flops / nbytes if nbytes else 0.0
    attainable = min(peak, intensity * BW) if flops else 0.0
    predicted = max(flops / peak, nbytes / BW, 3e-6)
    if time_s is None:
        time_s = predicted * (1.15 + 0.6 * ((index * 7919) % 100) / 100)
    achieved = flops / time_s if time_s else 0.0
    return OpRecord(
        name=name, module=module, dtype=dtype, flops=flops, bytes=nbytes, time_s=time_s,
        arithmetic_intensity=intensity, achieved_flops_per_s=achieved,
        achieved_bytes_per_s=nbytes / time_s if time_s else 0.0, attainable_flops_per_s=attainable,
        efficiency=achieved / attainable if attainable else 0.0, bound=bound,
        source=f"model.py:{40 + index % 60}", phase=phase, input_shapes=shapes,
        input_dtypes=[dtype] * len(shapes), output_shapes=[shapes[0]], predicted_time_s=predicted,
        modeled=bound != "unmodeled", kernels=[f"kernel_{name.split('::')[-1]}"], index=index,
        external_id=1000 + index, start_s=index * 2e-5,
    )


def make_report(n_ops: int = 60, n_layers: int = 4, seed: int = 0, module_prefix: str = "layers") -> Report:
    rng = random.Random(seed)
    ops = []
    for i in range(n_ops):
        name, bound, flops, nbytes, shapes = _KINDS[i % len(_KINDS)]
        layer = (i // len(_KINDS)) % n_layers
        sub = ["self_attn.q_proj", "self_attn", "mlp.down_proj", "mlp", "input_layernorm"][i % 5]
        module = f"{module_prefix}.{layer}.{sub}"
        ops.append(make_op(i, name, module, bound, float(flops), float(nbytes), shapes, phase="backward" if i % 11 == 10 else "forward"))
    return _assemble(ops, rng)


def _assemble(ops: list[OpRecord], rng: random.Random) -> Report:
    total = sum(op.time_s for op in ops)
    by_bound: dict[str, float] = {}
    for op in ops:
        by_bound[op.bound] = by_bound.get(op.bound, 0.0) + op.time_s
    samples = [total * (1.08 + rng.uniform(-0.01, 0.01)) for _ in range(9)]
    timeline = []
    level = 3.0e8
    for k in range(200):
        level = max(1e8, level + rng.uniform(-1, 1.3) * 4e6)
        timeline.append([k * total / 200, level])
    peak = int(max(b for _, b in timeline))
    return Report(
        kind="analyze",
        workload="llama-tiny fp16 b4 s512",
        environment=Environment(torch_version="2.14.1", device_name="NVIDIA H200", python_version="3.11.2",
                                command_line="roofline analyze --model llama-tiny", timestamp="2026-11-30T08:00:00+00:00",
                                platform="Linux", hostname="h200-box"),
        ceilings=Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=BW,
                          peak_flops_per_s=dict(PEAKS), launch_overhead_s=2.5e-6,
                          datasheet=DatasheetEntry("NVIDIA H200 SXM", 4.8e12, {"bfloat16": 9.89e14, "float16": 9.89e14, "float32": 6.7e13},
                                                   "NVIDIA H200 datasheet (dense)"),
                          source="measured", method="copy kernel 1 GiB, best of 20; cuBLAS matmul 8192^3 per dtype, best of 10"),
        ops=ops,
        kernels=[KernelRecord(name=op.kernels[0], start_s=op.start_s or 0.0, dur_s=op.time_s, stream=7, device=0, op_index=op.index) for op in ops[:200]],
        summary=Summary(total_time_s=total, total_flops=sum(o.flops for o in ops), total_bytes=sum(o.bytes for o in ops),
                        predicted_total_s=sum(o.predicted_time_s for o in ops), time_by_bound_s=by_bound,
                        share_by_bound={b: t / total for b, t in by_bound.items()} if total else {},
                        unmodeled_time_share=by_bound.get("unmodeled", 0.0) / total if total else 0.0,
                        kernel_time_attributed_share=0.993, idle_time_s=total * 0.04, module_tree=module_tree(ops),
                        timing_method="CUDA kernel time from torch.profiler (CUPTI), one representative step"),
        findings=[
            Finding(rule="host-sync", title="3 host syncs per step (.item() in the loop)", category="sync",
                    evidence={"syncs_per_step": 3, "stall_s": 4.1e-4}, locations=["train.py:88"], estimated_savings_s=4.1e-4,
                    savings_method="sum of measured stall time at the sync sites", fix="Keep the value on the GPU; log every N steps."),
            Finding(rule="unfused-elementwise", title="Chains of elementwise ops in mlp", category="memory",
                    evidence={"ops": ["aten::mul", "aten::silu"], "bytes": 1.2e8}, locations=["model.py:52"],
                    estimated_savings_s=total * 0.08, savings_method="bytes of intermediate tensors / measured bandwidth",
                    fix="torch.compile the MLP, or use a fused SwiGLU kernel."),
        ],
        syncs=[SyncSite(kind="item", location="train.py:88", count=6, stall_s=4.1e-4, per_step=3.0)],
        memory=MemorySummary(peak_allocated_bytes=peak, peak_reserved_bytes=int(peak * 1.2), counter="torch.cuda.memory_allocated",
                             timeline=timeline, peak_live_tensors=[LiveTensor(bytes=33554432, shape=[4, 512, 8192], dtype="float16", op="aten::mm", module="lm_head", source="model.py:120")]),
        step_time=Timing.from_samples(samples, "CUDA events around 9 steps, no profiler"),
        steps=2,
    )


def make_big_report(n_ops: int = 100_000, seed: int = 1) -> Report:
    """A report of ``n_ops`` op calls across many modules and shapes, for the 100k-op load benchmark."""
    rng = random.Random(seed)
    ops = []
    for i in range(n_ops):
        name, bound, flops, nbytes, shapes = _KINDS[rng.randrange(len(_KINDS))]
        scale = 2 ** rng.randrange(0, 6)
        module = f"blocks.{rng.randrange(48)}.{rng.choice(['attn.qkv', 'attn.proj', 'mlp.fc1', 'mlp.fc2', 'norm1', 'norm2'])}"
        ops.append(make_op(i, name, module, bound, float(flops * scale), float(nbytes * scale),
                           [[d * scale if j == 0 else d for j, d in enumerate(s)] for s in shapes],
                           dtype=rng.choice(["float16", "bfloat16", "float32"])))
    return _assemble(ops, rng)


def with_ranks(report: Report) -> Report:
    report.ranks = [RankRecord(**row) for row in [
        {"rank": 0, "step_time_s": 0.0101, "compute_time_s": 0.0072, "communication_time_s": 0.0021, "idle_time_s": 0.0008, "hidden_communication_share": 0.6, "straggler": False},
        {"rank": 1, "step_time_s": 0.0139, "compute_time_s": 0.0071, "communication_time_s": 0.0022, "idle_time_s": 0.0046, "hidden_communication_share": 0.55, "straggler": True, "slowest_op": "aten::mm"},
    ]]
    return report
