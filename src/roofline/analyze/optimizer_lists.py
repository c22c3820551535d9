"""Tensor lists of an optimizer's _foreach_* ops in a trace that recorded none: the step's parameters.

torch.profiler leaves a long tensor list's "Input Dims" empty, so the _foreach_* ops of a foreach optimizer step
(torch.optim's default AdamW/Adam/SGD on a GPU) would be unmodelled: 22% of a Llama training step's device time on
the H200. The same trace records every parameter that received a gradient: each backward's
``torch::autograd::AccumulateGrad`` event carries its parameter's shape and dtype. A foreach optimizer applies each
op to lists shaped like those parameters (params, grads, moments, their sqrt), so an unrecorded list argument of a
_foreach_* op inside an ``Optimizer.step#`` span that ran device kernels is taken to be that step's parameters, when:
- the profiled step holds exactly one optimizer step (two optimizers split the parameters in a way the trace does
  not record); a trace without ProfilerStep#N marks (profiled without a schedule) is cut at its optimizer steps
  instead, where all are of one optimizer and update the same parameters;
- the parameters share one dtype (foreach groups tensors by dtype: with several, which call got which is unknown);
- the optimizer step's _foreach_* sequence is not one sequence repeated (each parameter group repeats it, over a
  part of the parameters the trace does not record).
Ops that ran no device kernel (the step counters, which live on the host) are never given the parameters.
Otherwise the op stays unmodelled and its note says why. A trace of a step without a backward (gradient
accumulation) takes the parameters of the latest step that had one; a step of several micro-batches, those of its
last backward.

The work on the gradients before the step (phase "gradient": clip_grad_norm_'s _foreach_norm and _foreach_mul_,
GradScaler's _amp_foreach_non_finite_check_and_unscale_, zero_grad's _foreach_zero_) runs over the same lists, the
parameters' gradients: its list ops are given the step's parameters under the same conditions (clipping a part of
the parameters would go unnoticed: torch's clip_grad_norm_ is almost always given model.parameters()).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from roofline.capture.trace_model import CpuOp, Trace, op_columns
from roofline.count.meta import TensorMeta
from roofline.count.trace_args import LIST_TYPES, args_from_trace

ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"
FOREACH_PREFIX = "aten::_foreach_"
# ops that take tensor lists: torch's foreach ops, and AMP's unscale with its inf check
LIST_OP_PREFIXES = (FOREACH_PREFIX, "aten::_amp_foreach_")


class OptimizerLists:
    """Per profiled step: the parameters a foreach optimizer step's unrecorded lists stand for, or why none."""

    def __init__(self, trace: Trace) -> None:
        self._params: dict[tuple[int, int], list[TensorMeta]] = {}
        self._why_not: dict[tuple[int, int], str] = {}
        grads: dict[tuple[int, int], list[CpuOp]] = defaultdict(list)
        optimizer_spans: dict[tuple[int, int], list[CpuOp]] = defaultdict(list)
        sequences: dict[tuple[int, int], list[str]] = defaultdict(list)
        named = _named_ops(trace)
        self._iteration_ends = _unmarked_iteration_ends(named)
        key = self._key
        parameter_of: dict[int, TensorMeta] = {}  # id(AccumulateGrad op) -> the parameter it records
        for kind, op in named:
            if kind == _GRAD:
                args = args_from_trace(op.input_dims, op.input_types, op.input_strides)
                if args and isinstance(args[0], TensorMeta):
                    grads[key(op)].append(op)
                    parameter_of[id(op)] = args[0]
            elif kind == _STEP:
                optimizer_spans[key(op)].append(op)
            elif op.is_optimizer and op.total_kernel_us > 0:
                sequences[key(op)].append(op.name)
        latest: list[TensorMeta] = []
        for step in sorted(set(grads) | set(sequences)):
            if grads.get(step):
                spans = optimizer_spans.get(step, [])
                last = _last_backward(trace, grads[step], spans[0] if len(spans) == 1 else None)
                latest = [parameter_of[id(op)] for op in last]
            if not sequences.get(step):
                continue
            if len(optimizer_spans.get(step, ())) != 1:
                self._why_not[step] = (f"{len(optimizer_spans.get(step, ()))} optimizer steps in the profiled step"
                                       if step[0] >= 0 else "optimizer steps of several optimizers and no "
                                       "ProfilerStep#N marks to tell the iterations apart")
            elif not latest:
                self._why_not[step] = "no AccumulateGrad events record the parameters"
            elif len({t.dtype for t in latest}) > 1:
                self._why_not[step] = "parameters of several dtypes (which list went to which call is unknown)"
            elif _repeats(sequences[step]) > 1:
                self._why_not[step] = (f"{_repeats(sequences[step])} parameter groups (each a part of the "
                                       "parameters the trace does not record)")
            else:
                self._params[step] = latest
        self._unless_one_parameter_list()

    def _key(self, op: CpuOp) -> tuple[int, int]:
        """(profiled step, 0) of an op in one; outside any, (-1, the optimizer step it belongs to): the one it runs
        in, or the next (its backward and gradient work run before it)."""
        if op.step is not None:
            return op.step, 0
        ends = self._iteration_ends
        return -1, min(int(np.searchsorted(ends, op.ts_us, side="right")), max(len(ends) - 1, 0))

    def _unless_one_parameter_list(self) -> None:
        """Optimizer steps outside profiled steps are taken as a training loop's iterations only where each updates
        the same parameters: two optimizers taking turns (a GAN's) would give each the other's backward's."""
        unmarked = [step for step in self._params if step[0] == -1]
        lists = [self._params[step] for step in unmarked]
        if len(unmarked) > 1 and any(params != lists[0] for params in lists):
            for step in unmarked:
                del self._params[step]
                self._why_not[step] = ("optimizer steps over different parameters and no ProfilerStep#N marks to "
                                       "tell iterations from optimizers")

    def for_op(self, op: CpuOp) -> tuple[list[TensorMeta] | None, str]:
        """(the parameters this op's unrecorded lists stand for, "") or (None, why not)."""
        if not op.name.startswith(LIST_OP_PREFIXES) or not (op.is_optimizer or op.is_gradient):
            return None, ""
        if op.total_kernel_us <= 0:
            return None, "ran no device kernel (host-side lists, such as step counters)"
        key = self._key(op)
        params = self._params.get(key)
        return (params, "") if params else (None, self._why_not.get(key, ""))


_GRAD, _STEP, _FOREACH = 1, 2, 3


def _named_ops(trace: Trace) -> list[tuple[int, CpuOp]]:
    """(kind, op) of the ops this module reads (AccumulateGrad, optimizer steps, _foreach_* calls), in trace order:
    each distinct name is tested once, not each of a million events."""
    ops = trace.ops
    read = np.flatnonzero(op_columns(trace).named(_kind_of_name))
    return [(_kind_of_name(ops[i].name), ops[i]) for i in read.tolist()]


def _unmarked_iteration_ends(named: list[tuple[int, CpuOp]]) -> np.ndarray:
    """When the optimizer steps outside any profiled step end, where there are several of one optimizer (a training
    loop profiled without a schedule: its iterations); else none (one step, or optimizers of several names)."""
    spans = [op for kind, op in named if kind == _STEP and op.step is None]
    if len(spans) < 2 or len({op.name for op in spans}) > 1:
        return np.zeros(0)
    return np.sort(np.fromiter((op.ts_us + op.dur_us for op in spans), dtype=np.float64, count=len(spans)))


def _last_backward(trace: Trace, grads: list[CpuOp], optimizer_step: CpuOp | None) -> list[CpuOp]:
    """The AccumulateGrad ops of the last backward among ``grads`` (in time order): those after the last forward op
    that the optimizer step's thread ran between two of them. With gradient accumulation each micro-batch's backward
    records every parameter once more; the optimizer's lists hold each once."""
    if optimizer_step is None or len(grads) < 2:
        return grads
    ts = op_columns(trace).ts_us
    ops = trace.ops
    thread = (optimizer_step.pid, optimizer_step.tid)
    lo, hi = np.searchsorted(ts, [grads[0].ts_us, grads[-1].ts_us], side="right").tolist()
    forward = [op.ts_us for op in ops[lo:hi]
               if (op.pid, op.tid) == thread and not (op.is_backward or op.is_grad_accumulation or op.is_annotation
                                                      or op.is_optimizer or op.is_gradient or op.is_recompute)]
    if not forward:
        return grads
    start = np.searchsorted([op.ts_us for op in grads], forward[-1], side="right")
    return grads[int(start):]


def _kind_of_name(name: str) -> int:
    if name == ACCUMULATE_GRAD:
        return _GRAD
    if name.startswith("Optimizer.step#"):
        return _STEP
    return _FOREACH if name.startswith(FOREACH_PREFIX) else 0


def _repeats(names: list[str]) -> int:
    """How many times the shortest sequence that tiles ``names`` repeats (1: not a repetition)."""
    n = len(names)
    for period in range(1, n):
        if n % period == 0 and names == names[:period] * (n // period):
            return n // period
    return 1


def with_lists(args: list, input_types: list | None, params: list[TensorMeta]) -> list:
    """The op's parsed arguments with each unrecorded tensor list replaced by the parameters."""
    types = list(input_types or ())
    return [params if arg is None and i < len(types) and types[i] in LIST_TYPES else arg
            for i, arg in enumerate(args)]
