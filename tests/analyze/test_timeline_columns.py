"""The report's kernel timeline and each op's idle time before its first kernel, worked out on columns
(pipeline._timeline), match a kernel-by-kernel walk: kernels of two GPUs and of none, ops with kernels on both, an op
whose first kernel opens its GPU's timeline (no gap there, so its next kernel's gap counts), kernels under a chosen
op's children, and kernels outside the steps asked for."""

import random

from kineto_events import write_trace, x

from roofline.analyze import pipeline
from roofline.analyze.join import children_index
from roofline.capture.kineto import load_trace
from roofline.capture.trace_syncs import int_or_none
from roofline.report import KernelRecord


def _walked(trace, steps, event_to_report):
    """The kernel-by-kernel walk the columns replace."""
    wanted = set(steps)
    kernels = [k for k in trace.kernels if k.op >= 0 and (None in wanted or trace.ops[k.op].step in wanted)]
    kernels.sort(key=lambda k: k.ts_us)
    origin = kernels[0].ts_us if kernels else 0.0
    records, idle_before, prev_end = [], {}, {}
    several = len({d for d in (int_or_none(k.device) for k in kernels) if d is not None}) > 1
    for k in kernels:
        event, op_index = k.op, None
        while event >= 0:
            if event in event_to_report:
                op_index = event_to_report[event]
                break
            event = trace.ops[event].parent
        device = int_or_none(k.device)
        records.append(KernelRecord(k.name, (k.ts_us - origin) / 1e6, k.dur_us / 1e6, int_or_none(k.stream), device,
                                    k.category, op_index))
        lane = device if several else None
        before = prev_end.get(lane)
        if op_index is not None and op_index not in idle_before and before is not None:
            idle_before[op_index] = max(0.0, (k.ts_us - before) / 1e6)
        prev_end[lane] = k.end_us if before is None else max(before, k.end_us)
    return records, idle_before


def _trace(tmp_path, seed):
    rng = random.Random(seed)
    events, t, corr = [], 0.0, 1
    for step in range(3):
        step_start = t
        for i in range(12):
            start = t + rng.uniform(0, 3)
            events.append(x("cpu_op", f"aten::op{i % 4}", start, 8.0, **{"External id": corr}))
            events.append(x("cpu_op", "aten::inner", start + 1, 3.0))
            for j in range(rng.randint(0, 3)):
                launch = start + 1.5 + j * 0.5 if j == 0 else start + 5 + j
                events.append(x("cuda_runtime", "cudaLaunchKernel", launch, 0.2, correlation=corr))
                device = rng.choice([0, 1, None])
                args = {"correlation": corr, "stream": 7}
                if device is not None:
                    args["device"] = device
                events.append(x("kernel", f"k{corr}", start + rng.uniform(0, 20), rng.choice([0.0, 2.0, 9.0]),
                                pid=device if device is not None else 0, tid=7, **args))
                corr += 1
            t = start + 9
        events.append(x("user_annotation", f"ProfilerStep#{step}", step_start, t - step_start + 0.5))
        t += 1
    return load_trace(write_trace(tmp_path, events))


def test_timeline_on_columns_is_the_walk(tmp_path):
    for seed in range(6):
        trace = _trace(tmp_path, seed)
        pipeline._ensure_attributed(trace)
        children = children_index(trace)
        outer = [op.index for op in trace.ops if op.name.startswith("aten::op")]
        inner = [op.index for op in trace.ops if op.name == "aten::inner"]
        chosen = outer[::2] + inner[1::2]  # some kernels reach their row from an inner event, some from its parent
        event_to_report = {event: row for row, event in enumerate(chosen)}
        assert children  # the inner ops nest
        for steps in ([None], [0, 2], [1]):
            assert pipeline._timeline(trace, steps, event_to_report, []) == _walked(trace, steps, event_to_report), \
                (seed, steps)
