"""The formula registry, the OpCost a formula returns, and the Call a formula reads.

A formula is ``f(call: Call) -> OpCost`` registered for one or more op packets (overload-agnostic):
``@register("aten::mm")``. ``call.args`` are the op's positional args in aten schema order, tensors as
TensorMeta; a trace file gives every argument positionally (keyword-only ones included, in schema order),
a live recording may pass keyword-only ones in ``call.kwargs``: ``call.arg(i, name)`` reads either.
``call.outputs`` is a flat list of TensorMeta, or None when the outputs are unknown (trace files): a formula
then infers the output shape from its inputs.

Shared byte convention (every family module restates its FLOP convention):
- bytes = each input view read once (its nbytes, not its storage's) + each output written once;
- views and metadata ops move nothing (0 bytes, 0 FLOPs, is_view=True);
- broadcast inputs are read at their own, smaller size;
- in-place ops read their inputs (self included, unless the op only writes it: fill_, zero_, copy_, RNG)
  and write self once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roofline.count.meta import TensorMeta

if TYPE_CHECKING:
    from roofline.count.live import LiveFact


@dataclass(slots=True)
class OpCost:
    """``keep_whole``: unmodelled, yet the op is one row of a trace's report: its children would count its work
    no better (a sparse product from a trace: an addmm over the same sparse operand and the tensor's metadata
    calls), so the op choice (analyze/join.py) does not descend to them."""

    flops: float
    bytes: float
    modeled: bool
    is_view: bool = False
    note: str = ""
    keep_whole: bool = False


Formula = Callable[["Call"], OpCost]

FORMULAS: dict[str, Formula] = {}
VIEW_OPS: set[str] = set()
COMPOSITE_OPS: set[str] = set()
SPARSE_AWARE_OPS: set[str] = set()  # formulas that count a sparse operand by its stored elements
NESTED_AWARE_OPS: set[str] = set()  # formulas that count a nested operand per component (TensorMeta.components)
LIVE_FACTS: dict[str, tuple[LiveFact, ...]] = {}  # op -> what its formula reads from a live call's values (live.py)
PREFIX_FORMULAS: list[tuple[str, Formula]] = []  # names made up at run time (Inductor's triton_* kernels)


def register(*names: str, view: bool = False, composite: bool = False,
             sparse_aware: bool = False, nested_aware: bool = False,
             live: LiveFact | tuple[LiveFact, ...] = ()) -> Callable[[Formula], Formula]:
    """Register ``formula`` for the op packets ``names`` ("aten::mm"; overloads share the formula).

    ``composite`` marks ops that usually run by calling other aten ops (linear -> addmm): in a trace their
    children appear too, so a caller summing a trace must not add both. ``sparse_aware``: the formula counts a
    sparse operand's work by its stored elements; any other formula's FLOPs on one are refused (count_op).
    ``nested_aware``: the formula counts a nested operand per component; a matrix product's, convolution's or
    attention's FLOPs on one whose components differ beyond their first dim are refused otherwise (count_op).
    ``live``: what the formula reads from the op's tensor values rather than its shapes (live.py: an argument's
    elements, ``ArgValues``, or a fact computed from the tensors, ``Derived``): a live counting pass reads them for
    these ops only (a sync, never in a timed pass); from a trace they are absent and the formula must say what it
    assumed instead.
    """

    facts = live if isinstance(live, tuple) else (live,)

    def decorate(formula: Formula) -> Formula:
        for name in names:
            if name in FORMULAS:
                raise RuntimeError(f"two formulas registered for {name}")
            FORMULAS[name] = formula
            if view:
                VIEW_OPS.add(name)
            if composite:
                COMPOSITE_OPS.add(name)
            if sparse_aware:
                SPARSE_AWARE_OPS.add(name)
            if nested_aware:
                NESTED_AWARE_OPS.add(name)
            if facts:
                LIVE_FACTS[name] = facts
        return formula

    return decorate


def register_prefix(prefix: str) -> Callable[[Formula], Formula]:
    """Register ``formula`` for every op name starting with ``prefix`` that has no exact formula."""

    def decorate(formula: Formula) -> Formula:
        PREFIX_FORMULAS.append((prefix, formula))
        return formula

    return decorate


def flatten_metas(obj: Any) -> list[TensorMeta]:
    """Every TensorMeta in ``obj`` (nested lists, tuples and dict values), in order."""
    out: list[TensorMeta] = []
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, TensorMeta):
            out.append(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
    return out


_OUT_KWARGS = frozenset({"grad_input", "output", "total_weight", "save_mean", "save_invstd", "values", "indices"})


class Call:
    """One op invocation as the formulas see it."""

    __slots__ = ("name", "args", "kwargs", "outputs")

    def __init__(self, name: str, args: Sequence[Any], kwargs: Mapping[str, Any] | None,
                 outputs: list[TensorMeta] | None) -> None:
        self.name = name
        self.args = args
        self.kwargs = kwargs or {}
        self.outputs = outputs

    def arg(self, index: int, name: str = "", default: Any = None) -> Any:
        """Positional arg ``index`` or keyword ``name``; ``default`` when absent or None."""
        value = self.args[index] if index < len(self.args) else self.kwargs.get(name)
        return default if value is None else value

    def tensor(self, index: int, name: str = "") -> TensorMeta:
        """The TensorMeta at ``index``; raises (count_op turns that into modeled=False) when it is missing."""
        value = self.arg(index, name)
        if not isinstance(value, TensorMeta):
            raise ValueError(f"argument {index} ({name or '?'}) is not a recorded tensor")
        return value

    def maybe_tensor(self, index: int, name: str = "") -> TensorMeta | None:
        value = self.arg(index, name)
        return value if isinstance(value, TensorMeta) else None

    def input_metas(self) -> list[TensorMeta]:
        found = flatten_metas(self.args)
        if self.kwargs:
            inputs = [v for k, v in self.kwargs.items() if k not in _OUT_KWARGS and not k.startswith("out")]
            found.extend(flatten_metas(inputs))
        return found

    @property
    def inplace(self) -> bool:
        base = self.name.rsplit("::", 1)[-1]
        return base.endswith("_") and not base.endswith("__")


def nbytes(metas: Iterable[TensorMeta | None]) -> int:
    return sum(m.nbytes for m in metas if m is not None)


def unmodeled(note: str, keep_whole: bool = False) -> OpCost:
    return OpCost(0.0, 0.0, False, False, note, keep_whole)


def zero_cost(note: str = "", view: bool = False) -> OpCost:
    return OpCost(0.0, 0.0, True, view, note)
