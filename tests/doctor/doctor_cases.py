"""Small hand-built Reports for the doctor's rule tests: each names exactly the evidence a rule reads."""

from __future__ import annotations

from roofline.report import Ceilings, KernelRecord, OpRecord, Report, Summary, SyncSite


def contiguous_strides(shape: list[int]) -> list[int]:
    strides, acc = [], 1
    for size in reversed(shape):
        strides.insert(0, acc)
        acc *= size
    return strides


def op(name: str, inputs: list, *, out: list | None = None, out_dtype: str | None = None, module: str = "model",
       source: str = "model.py:10", time: float = 1e-5, flops: float = 0.0, nbytes: float = 0.0,
       bound: str = "memory", step: int | None = None, kernels: list[str] | None = None, phase: str = "forward",
       start: float | None = None, cpu_time: float = 0.0) -> OpRecord:
    """inputs: (shape, dtype) or (shape, dtype, strides) per tensor input."""
    shapes, dtypes, strides = [], [], []
    for item in inputs:
        shape, dtype = list(item[0]), item[1]
        shapes.append(shape)
        dtypes.append(dtype)
        strides.append(list(item[2]) if len(item) > 2 else contiguous_strides(shape))
    first_float = next((d for d in dtypes if d.startswith(("float", "bfloat"))), dtypes[0] if dtypes else "")
    return OpRecord(
        name=name, module=module, source=source, dtype=first_float, flops=flops, bytes=nbytes, time_s=time,
        bound=bound, phase=phase, input_shapes=shapes, input_dtypes=dtypes, input_strides=strides,
        output_shapes=[list(out)] if out is not None else [], output_dtypes=[out_dtype] if out_dtype else [],
        step=step, kernels=list(kernels or []), start_s=start, cpu_time_s=cpu_time,
    )


def ceilings(*, device: str = "cpu", device_name: str = "test cpu", bandwidth: float = 1e11,
             peaks: dict[str, float] | None = None, launch: float = 5e-6) -> Ceilings:
    return Ceilings(device=device, device_name=device_name, memory_bandwidth_bytes_per_s=bandwidth,
                    peak_flops_per_s=peaks or {"float32": 1e12, "float16": 4e12, "bfloat16": 4e12},
                    launch_overhead_s=launch)


def report(ops: list[OpRecord], *, ceil: Ceilings | None = None, kernels: list[KernelRecord] | None = None,
           syncs: list[SyncSite] | None = None, steps: int = 1, extra: dict | None = None) -> Report:
    for i, o in enumerate(ops):
        o.index = i
    total = sum(o.time_s for o in ops)
    return Report(ceilings=ceil or ceilings(), ops=ops, kernels=list(kernels or []), syncs=list(syncs or []),
                  summary=Summary(total_time_s=total), steps=steps, extra=dict(extra or {}))


def linear(tokens_shape: list[int], *, features: int = 64, out_features: int = 64, dtype: str = "float32",
           module: str = "layers.0.wq", step: int | None = None, time: float = 1e-4,
           source: str = "model.py:20") -> OpRecord:
    """An aten::linear on an activation of this shape with a [out_features, features] weight."""
    rows = 1
    for d in tokens_shape[:-1]:
        rows *= d
    size = 2 if dtype in ("float16", "bfloat16") else 4
    weight_bytes = features * out_features * size
    return op("aten::linear", [(tokens_shape, dtype), ([out_features, features], dtype)],
              out=tokens_shape[:-1] + [out_features], module=module, step=step, time=time, source=source,
              flops=2.0 * rows * features * out_features, bound="memory",
              nbytes=weight_bytes + rows * (features + out_features) * size)


def rules_of(findings) -> list[str]:
    return [f.rule for f in findings]
