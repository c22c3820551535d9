"""Live facts: what a formula reads from an op's tensor VALUES rather than its shapes, declared with
``register(..., live=...)``, and the one place that reads them (``read_live_facts``).

Most counts follow from shapes alone. A few do not: a variable-length attention's work is per sequence (its
cumulative-length arguments' elements), matrix_exp's number of products follows each matrix's 1-norm. Reading a
device tensor's values synchronises with the device, so these facts are read
- only in a counting pass (capture/dispatch.op_cost, the one caller), never in a timed one, where the sync would be
  timed;
- only for the ops whose formula declared a fact, and only the facts it declared (every other op: one dict lookup).
A trace records no values: there a formula gets none of its facts (TensorMeta.values None, a derived key absent)
and must say what it assumed instead.

Two kinds of fact, one declaration:
- ``ArgValues(slots)``: the elements of small integer tensor arguments (cumulative lengths), as each argument's
  TensorMeta.values;
- ``Derived(key, compute)``: ``compute(args, kwargs)`` of the live call (real tensors), given to the formula as
  ``call.kwargs[key]``; ``compute`` returns None where the fact cannot be known (a meta tensor, a nan).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, MutableSequence, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from roofline.count.meta import TensorMeta
from roofline.count.registry import LIVE_FACTS

_MAX_VALUES = 1 << 16  # a cumulative-length tensor has batch + 1 elements; anything larger is not one


class LiveFact(Protocol):
    def fill(self, args: Sequence[Any], kwargs: Mapping[str, Any], meta_args: MutableSequence[Any],
             meta_kwargs: MutableMapping[str, Any]) -> None:
        """Put this fact of the live call (``args``, ``kwargs``) into its metas (``to_meta`` of them)."""


@dataclass(frozen=True, slots=True)
class ArgValues:
    """The (index, keyword) of each small integer tensor argument whose elements the formula reads."""

    slots: tuple[tuple[int, str], ...]

    def fill(self, args: Sequence[Any], kwargs: Mapping[str, Any], meta_args: MutableSequence[Any],
             meta_kwargs: MutableMapping[str, Any]) -> None:
        for index, key in self.slots:
            if index < len(args):
                live, metas, slot = args[index], meta_args, index
            elif key in kwargs:
                live, metas, slot = kwargs[key], meta_kwargs, key
            else:
                continue
            meta = metas[slot]
            if type(meta) is not TensorMeta or meta.numel > _MAX_VALUES or not meta.dtype.startswith(("int", "uint")):
                continue
            try:
                values = tuple(int(v) for v in live.reshape(-1).tolist())
            except Exception:  # noqa: BLE001 - a meta or fake tensor has no values: the formula says what it assumed
                continue
            metas[slot] = replace(meta, values=values)


@dataclass(frozen=True, slots=True)
class Derived:
    """``compute(args, kwargs)`` of the live call, handed to the formula as ``call.kwargs[key]`` (None: unknown)."""

    key: str
    compute: Callable[[Sequence[Any], Mapping[str, Any]], Any]

    def fill(self, args: Sequence[Any], kwargs: Mapping[str, Any], meta_args: MutableSequence[Any],
             meta_kwargs: MutableMapping[str, Any]) -> None:
        value = self.compute(args, kwargs)
        if value is not None:
            meta_kwargs[self.key] = value


def read_live_facts(op: str, args: Sequence[Any], kwargs: Mapping[str, Any], meta_args: MutableSequence[Any],
                    meta_kwargs: MutableMapping[str, Any]) -> None:
    """Fill, in ``meta_args``/``meta_kwargs`` (``to_meta`` of the live ``args``/``kwargs``), the live facts ``op``'s
    formula declared; every other op returns at once. Synchronises with the device: a counting pass only, and
    never while the stream captures a CUDA graph (a read there would end the user's capture with an error; the
    formula gets no facts, as from a trace)."""
    facts = LIVE_FACTS.get(op, ())
    if facts and not _capturing():
        for fact in facts:
            fact.fill(args, kwargs, meta_args, meta_kwargs)


def _capturing() -> bool:
    import torch

    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()
