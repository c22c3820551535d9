"""Variable-length (packed, jagged) attention: a batch of sequences of different lengths packed into
(total_tokens, heads, dim) tensors and split by cumulative-length tensors of batch + 1 elements (flash:
cum_seq_q/k; efficient: cu_seqlens_q/k). SDPA on a jagged nested tensor runs these on a GPU.

The work is per sequence: the sum over sequences of s_q_i * s_k_i score entries (causal: of each sequence's own
kept part), never total_tokens^2 / batch unless the lengths are equal. Where the op is seen live its formula reads
the cumulative lengths' values (TensorMeta.values, declared with ``register(live=ArgValues(...))``, count/live.py)
and counts each sequence. A trace records no tensor's values: only the totals T (the tensors' first dim), the batch
B (the cumulative tensor's length - 1) and, as concrete inputs, the longest sequences M (max_q, max_k). With each
sequence's queries as long as its keys (self-attention, the packed case), those bound the sum of squares:
  fewest: one sequence of M tokens, the other B - 1 as equal as integers go (all equal, about T^2/B, M unknown);
  most: as many sequences of M as T holds and the remainder in one (T^2, M unknown).
There we count the fewest (the work the totals certainly imply) and the note gives the range. The same extremes
bound any per-sequence count convex in the length and 0 at 0: a causal sequence's s*(s+1)/2 entries, a sliding
window's (flash-attn's window_size).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from math import isqrt
from typing import Any

from roofline.count.causal_mask import causal_fraction, causal_kept, window_kept
from roofline.count.meta import TensorMeta

NOTE_PREFIX = "variable-length batch"  # how every note of this module's counts begins


def _lengths(cumulative: TensorMeta | None, tokens: int) -> tuple[int, ...] | None:
    """Each sequence's length from cumulative lengths' values; None when unknown or not cumulative lengths of
    at most ``tokens`` tokens."""
    if cumulative is None or cumulative.values is None or len(cumulative.values) < 2:
        return None
    values = cumulative.values
    lengths = tuple(b - a for a, b in zip(values, values[1:]))
    if min(lengths) < 0 or values[0] < 0 or values[-1] > tokens:
        return None
    return lengths


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _square(length: int) -> int:
    return length * length


def squares_range(tokens: int, batch: int, longest: int | None,
                  entries: Callable[[int], int] = _square) -> tuple[int, int]:
    """Fewest and most sum of s_i^2 over ``batch`` lengths s_i >= 0 summing to ``tokens``, the longest
    ``longest`` (ignored when unknown or inconsistent with the totals). ``entries``: the sum of entries(s_i) instead,
    for any count convex in s and 0 at 0 (a causal or windowed square's kept entries), whose extremes are the same
    splits."""
    batch = max(batch, 1)
    if longest is not None and not (longest <= tokens <= longest * batch and (batch > 1 or longest == tokens)):
        longest = None
    if longest is None:
        even, extra = divmod(tokens, batch)
        return extra * entries(even + 1) + (batch - extra) * entries(even), entries(tokens)
    fewest = entries(longest)
    if batch > 1:
        even, extra = divmod(tokens - longest, batch - 1)
        fewest += extra * entries(even + 1) + (batch - 1 - extra) * entries(even)
    full, remainder = divmod(tokens, longest)
    return fewest, full * entries(longest) + entries(remainder)


@dataclass(frozen=True, slots=True)
class Varlen:
    """One variable-length call: its totals, the longest sequences (if recorded) and, seen live, each
    sequence's query and key lengths."""

    batch: int
    tokens_q: int
    tokens_k: int
    max_q: int | None
    max_k: int | None
    lengths_q: tuple[int, ...] | None
    lengths_k: tuple[int, ...] | None

    @classmethod
    def of(cls, call: Any, dims: Any, args: Sequence[tuple[int, str]]) -> "Varlen | None":
        """``args``: the (index, keyword) of cum_seq_q, cum_seq_k, max_q, max_k in the op's schema; ``dims`` the
        call as one sequence of all its tokens (its seq_q and seq_k are the totals). None: not variable-length."""
        (cq, cq_name), (ck, ck_name), (mq, mq_name), (mk, mk_name) = args
        cum_q, cum_k = call.maybe_tensor(cq, cq_name), call.maybe_tensor(ck, ck_name)
        if cum_q is None:
            return None
        lengths_q, lengths_k = _lengths(cum_q, dims.seq_q), _lengths(cum_k, dims.seq_k)
        if lengths_q is None or lengths_k is None or len(lengths_q) != len(lengths_k):
            lengths_q = lengths_k = None
        return cls(max(cum_q.numel - 1, 1), dims.seq_q, dims.seq_k,
                   _positive_int(call.arg(mq, mq_name)), _positive_int(call.arg(mk, mk_name)), lengths_q, lengths_k)

    def flops(self, of_dims: Callable[[Any], int], dims: Any, causal: bool, bottom_right: bool,
              notes: list[str], window: tuple[int, int] | None = None) -> float:
        """``of_dims`` (forward_flops or backward_flops, linear in the score entries) summed over the sequences;
        what was assumed goes to ``notes``. ``window``: a sliding window's (left, right) (causal_mask.window_kept),
        which then stands for ``causal``."""
        per_entry = of_dims(replace(dims, batch=1, seq_q=1, seq_k=1))
        if self.lengths_q is not None and self.lengths_k is not None:
            return float(per_entry * self._counted(causal, bottom_right, notes, window))
        fewest, most, note = self._estimated(causal, bottom_right, window)
        notes.append(note.format(fewest=per_entry * fewest, most=per_entry * most))
        return float(per_entry * fewest)

    def _counted(self, causal: bool, bottom_right: bool, notes: list[str], window: tuple[int, int] | None) -> int:
        pairs = list(zip(self.lengths_q or (), self.lengths_k or ()))
        full = sum(q * k for q, k in pairs)
        notes.append(f"{NOTE_PREFIX}: {len(pairs)} sequences counted one by one")
        if window is not None:
            kept = sum(window_kept(q, k, *window) for q, k in pairs)
            notes.append(f"{window_note(window)}: only {kept / max(full, 1):.3f} of the sequences' score entries are "
                         "computed, each sequence's own window")
            return kept
        if not causal:
            return full
        kept = sum(causal_kept(q, k, bottom_right) for q, k in pairs)
        notes.append(f"causal: only {kept / max(full, 1):.3f} of the sequences' score entries are computed, each "
                     "sequence's own causal part; FlopCounterMode counts them all")
        return kept

    def _estimated(self, causal: bool, bottom_right: bool,
                   window: tuple[int, int] | None) -> tuple[float, float, str]:
        """(fewest, most score entries the trace's totals allow, the note with {fewest} and {most} FLOPs): one
        clause, no semicolon (a summary note quotes it whole)."""
        batch, tokens, longest = self.batch, self.tokens_q, self.max_q
        told = f"{batch} sequences, {tokens} tokens in all" + (f", the longest {longest}" if longest else "")
        head = f"{NOTE_PREFIX} ({told}) from a trace, which records no sequence lengths: "
        if self.tokens_q == self.tokens_k and self.max_q == self.max_k:
            if window is not None:
                fewest, most = squares_range(tokens, batch, longest, lambda s: window_kept(s, s, *window))
            else:
                fewest, most = squares_range(tokens, batch, longest)
                if causal:  # each square sequence keeps s*(s+1)/2 of s*s, top-left or bottom-right alike
                    fewest, most = (fewest + tokens) // 2, (most + tokens) // 2
            if fewest == most:
                return fewest, most, head + "those totals fix the count"
            assumed = "one sequence of the longest, the others equal" if longest else "equal lengths"
            causal_part = (f", {window_note(window)} per sequence" if window is not None
                           else ", causal per sequence" if causal else "")
            return fewest, most, (head + f"counted as the fewest FLOPs those allow ({assumed}, each with as many "
                                  f"queries as keys), the true count lying between {{fewest:,}} and {{most:,}} "
                                  f"FLOPs{causal_part}")
        seq_q, seq_k = max(round(tokens / batch), 1), max(round(self.tokens_k / batch), 1)
        if window is not None:
            share = window_kept(seq_q, seq_k, *window) / (seq_q * seq_k)
        else:
            share = causal_fraction(seq_q, seq_k, bottom_right) if causal else 1.0
        equal = self.tokens_q * self.tokens_k / batch * share
        most_q = squares_range(self.tokens_q, batch, self.max_q)[1]
        most_k = squares_range(self.tokens_k, batch, self.max_k)[1]
        most = float(isqrt(most_q * most_k) + 1)  # Cauchy-Schwarz: sum(q_i k_i) <= sqrt(sum q_i^2 * sum k_i^2)
        return equal, max(most, equal), (head + f"equal lengths assumed ({seq_q} queries, {seq_k} keys each), the "
                                         "true count at most {most:,.0f} FLOPs")


def window_note(window: tuple[int, int]) -> str:
    """'sliding window (256 keys back, 0 ahead)': how a note names flash-attn's window_size (-1: unbounded)."""
    left, right = window
    return (f"sliding window ({left if left >= 0 else 'all'} keys back, "
            f"{right if right >= 0 else 'all'} ahead)")
