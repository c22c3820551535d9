"""What roofline's dispatch modes share: no dynamo wrapper, and one op's counts from its call."""

from __future__ import annotations

from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

from roofline.count.counting import count_op, normalize_op_name, to_meta
from roofline.count.live import read_live_facts
from roofline.count.registry import OpCost


class EagerDispatchMode(TorchDispatchMode):
    """A dispatch mode over eager code whose __torch_dispatch__ torch leaves unwrapped.

    torch wraps it in torch._disable_dynamo by default, which imports torch._dynamo (seconds) on first use and
    adds a call per op; roofline's modes never run under a compiler's trace.
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False


def op_cost(func: Any, args: Any, kwargs: dict, out: Any) -> tuple[list, dict, list, OpCost]:
    """(meta args, meta kwargs, meta outputs, cost) of one dispatched call: the counting passes' one path from a
    live call to its count. The live facts the op's formula declared (count/live.py: cumulative sequence lengths, a
    matrix's norm) are read here from the real tensors, a sync with the device: a counting pass only, never timed.
    Derived facts go to the formula's kwargs, and so into the returned meta kwargs."""
    name = normalize_op_name(func)
    meta_args = to_meta(list(args))
    meta_kwargs = to_meta(dict(kwargs))
    read_live_facts(name, args, kwargs, meta_args, meta_kwargs)
    meta_out = to_meta(list(out) if isinstance(out, (tuple, list)) else [out])
    return meta_args, meta_kwargs, meta_out, count_op(name, meta_args, meta_kwargs, meta_out)
