"""Total FLOPs and minimum bytes of everything a callable runs, without recording each op.

The case study counts the traffic of whole generation runs: hundreds of thousands of ops on a 1B model. The
full recorder (op_recorder) keeps module paths and source lines per op; this counter keeps two sums, and
remembers each (op, signature of its arguments and outputs) it has costed, since a decode loop repeats the same shapes.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from roofline.capture.dispatch import EagerDispatchMode, op_cost
from roofline.count.counting import normalize_op_name
from roofline.count.registry import LIVE_FACTS


def _signature(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), value.dtype, value.stride() if value.layout == torch.strided else None)
    if isinstance(value, (list, tuple)):
        return tuple(_signature(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _signature(v)) for k, v in value.items()))
    return value


class TrafficCounter(EagerDispatchMode):
    """A dispatch mode summing roofline's per-op counts: ``flops``, ``bytes``, ``ops``, ``unmodeled`` and
    ``kernels`` (the ops that are not views: on a GPU each launches at least one kernel, in eager mode)."""

    def __init__(self) -> None:
        super().__init__()
        self.flops = 0.0
        self.bytes = 0.0
        self.ops = 0
        self.unmodeled = 0
        self.kernels = 0
        self._views: dict[Any, bool] = {}
        self._reads_values: dict[Any, bool] = {}
        self._costs: dict[Any, tuple[float, float] | None] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.ops += 1
        if not self._is_view(func):
            self.kernels += 1
        if self._value_dependent(func):  # its count reads argument values that the signature does not hold
            cost = self._cost(None, func, args, kwargs, out)
        else:
            try:
                key = (func, _signature(args), _signature(kwargs), _signature(out))
                cost = self._costs[key] if key in self._costs else self._cost(key, func, args, kwargs, out)
            except TypeError:  # an argument that cannot be hashed: cost this call alone
                cost = self._cost(None, func, args, kwargs, out)
        if cost is None:
            self.unmodeled += 1
        else:
            self.flops += cost[0]
            self.bytes += cost[1]
        return out

    def _is_view(self, func) -> bool:
        """An op whose outputs alias its inputs without writing them (view, transpose, slice...): no kernel."""
        if func not in self._views:
            returns = func._schema.returns
            self._views[func] = bool(returns) and all(
                r.alias_info is not None and not r.alias_info.is_write for r in returns)
        return self._views[func]

    def _value_dependent(self, func) -> bool:
        if func not in self._reads_values:
            self._reads_values[func] = normalize_op_name(func) in LIVE_FACTS
        return self._reads_values[func]

    def _cost(self, key, func, args, kwargs, out) -> tuple[float, float] | None:
        cost = op_cost(func, args, kwargs, out)[3]
        result = (cost.flops, cost.bytes) if cost.modeled else None
        if key is not None:
            self._costs[key] = result
        return result


def count_traffic(run: Callable[[], Any]) -> TrafficCounter:
    """Run ``run()`` under a TrafficCounter and return the counter."""
    with TrafficCounter() as counter:
        run()
    return counter
