"""Multi-tensor ops: _foreach_* (what torch.optim's foreach implementations run) and the fused optimizers.

FLOPs per element: as the matching single-tensor op in elementwise.py (add/mul/div/sqrt 1, addcmul/
addcdiv 2, lerp 3, exp/log 4, ...); _foreach_norm 2 (square, add), _foreach_max 1. Fused AdamW 14 per
parameter element (moment updates 7, denominator 3, update 3, decoupled weight decay 1), Adam 13 (+2 for
L2 weight decay folded in), SGD 3 (with momentum 5).
Bytes: every tensor of every input list (and tensor operands) read once, self's list written once (in place)
or a new list of the same shapes written (out of place); zero_ writes only, copy_ reads src, writes self.
A trace records no shapes for long tensor lists: such an op is unmodeled (its note says why).
"""

from __future__ import annotations

from roofline.count.elementwise import FLOPS_PER_ELEMENT, ONE_FLOP_BOOL
from roofline.count.meta import TensorMeta, unknown_dtype_note
from roofline.count.registry import Call, OpCost, flatten_metas, nbytes, register

_PER_ELEMENT: dict[str, float] = {k: v for k, v in FLOPS_PER_ELEMENT.items() if k not in ONE_FLOP_BOOL}
_PER_ELEMENT.update({"pow": 4, "norm": 2, "max": 1, "copy": 0, "zero": 0})

_UNRECORDED = "tensor list shapes not recorded (the profiler leaves long lists empty)"


def _self_list(call: Call) -> list[TensorMeta]:
    first = call.arg(0, "self")
    if not isinstance(first, (list, tuple)) or not first or not all(isinstance(t, TensorMeta) for t in first):
        raise ValueError(_UNRECORDED)
    return list(first)


def foreach_cost(call: Call) -> OpCost:
    base = call.name[len("aten::_foreach_"):].rstrip("_")
    per_element = _PER_ELEMENT.get(base)
    if per_element is None:
        raise ValueError(f"no per-element count for _foreach_{base}")
    if base == "pow" and isinstance(call.arg(1), (int, float)) and float(call.arg(1)).is_integer():
        per_element = 1
    targets = _self_list(call)
    elements = sum(t.numel for t in targets)
    if base == "zero":
        return OpCost(0.0, float(nbytes(targets)), True, note=unknown_dtype_note(targets))
    if base == "copy":
        sources = flatten_metas(call.arg(1, "src"))
        return OpCost(0.0, float(nbytes(sources) + nbytes(targets)), True, note=unknown_dtype_note(targets))
    reads = nbytes(call.input_metas())
    if base in ("norm", "max"):
        written = nbytes(call.outputs) if call.outputs is not None else len(targets) * targets[0].itemsize
    elif call.outputs is not None and not call.inplace:
        written = nbytes(call.outputs)
    else:
        written = nbytes(targets)
    return OpCost(float(per_element * elements), float(reads + written), True, note=unknown_dtype_note(targets))


_FOREACH_BASES = sorted(b for b in _PER_ELEMENT if not b.startswith("_") and not b.endswith("backward"))
register(*(f"aten::_foreach_{b}" for b in _FOREACH_BASES),
         *(f"aten::_foreach_{b}_" for b in _FOREACH_BASES if b not in ("norm", "max")))(foreach_cost)


@register("aten::_fused_adamw_", "aten::_fused_adam_", "aten::_fused_adamw", "aten::_fused_adam",
          "aten::_fused_sgd_", "aten::_fused_sgd", "aten::_fused_adagrad_")
def fused_optimizer(call: Call) -> OpCost:
    """(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, ...): params and states read
    and written once, grads read once."""
    params = _self_list(call)
    elements = sum(t.numel for t in params)
    lists = [flatten_metas(call.arg(i)) for i in range(1, 5)]
    if "sgd" in call.name:
        momentum = call.arg(4, "momentum", 0.0)
        states = lists[1]
        per_element = 5 if momentum else 3
    else:
        states = lists[1] + lists[2] + (lists[3] if call.arg(9, "amsgrad", False) else [])
        per_element = 14 if "adamw" in call.name else 13
    grads = lists[0]
    traffic = nbytes(params) * 2 + nbytes(grads) + nbytes(states) * 2
    return OpCost(float(per_element * elements), float(traffic), True, note=unknown_dtype_note(params))


@register("aten::_amp_foreach_non_finite_check_and_unscale_")
def amp_unscale(call: Call) -> OpCost:
    """(self list, found_inf, inv_scale): each gradient read, checked and multiplied in place: 2 FLOPs/elt."""
    grads = _self_list(call)
    scalars = nbytes([call.maybe_tensor(1, "found_inf"), call.maybe_tensor(2, "inv_scale")])
    return OpCost(2.0 * sum(t.numel for t in grads), float(2 * nbytes(grads) + scalars), True, note=unknown_dtype_note(grads))


@register("aten::_amp_update_scale_")
def amp_update_scale(call: Call) -> OpCost:
    """(self, growth_tracker, found_inf, ...): a few scalars read and written."""
    scalars = call.input_metas()
    return OpCost(float(len(scalars)), float(2 * nbytes(scalars)), True)
