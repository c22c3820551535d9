"""F.scaled_dot_product_attention fell back to its math backend on a GPU, and why the fused kernels refused.

Evidence: the math backend is a composite op; a report shows its pieces. Its softmax is ``aten::_safe_softmax``,
which only that backend calls (user code's softmax is ``aten::_softmax``), between the Q@K^T bmm and the P@V bmm;
a report that kept ``aten::_scaled_dot_product_attention_math`` itself is read from its inputs. From the pieces:
head dim and lengths (the bmms), heads (the softmax's input), dtype (the inputs before any upcast), a causal mask
built in place (``aten::tril``), an explicit mask (an add of a mask to the scores without it), grouped-query
attention (K/V heads expanded: a 5-D expand/clone or repeat_interleave), dropout.

Why a fused kernel refuses (torch 2.11, aten/src/ATen/native/transformers/cuda/sdp_utils.cpp; math runs only when
flash, memory-efficient and cuDNN all refuse): flash and cuDNN need fp16/bf16; flash needs head dim <= 256 and no
explicit attn_mask, and refuses is_causal when seq_q != seq_k; cuDNN needs head dim <= 128 (256 on sm90 with cuDNN
9.10+) and a multiple of 8; memory-efficient needs head dim a multiple of 8 (fp16/bf16) or 4 (fp32) and has no
grouped-query attention. A disabled backend (sdpa_kernel, torch.backends.cuda.enable_*_sdp(False)), a last
dimension with stride != 1 or a GPU before sm80 leave no trace in a report: when none of the above is seen, the
finding says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from roofline.doctor.evidence import (is_gpu_report, op_kind, op_table, ordered_ops, roofline_time_of, severity_for,
                                      top_locations, torch_device)
from roofline.doctor.registry import register
from roofline.report import Finding, OpRecord, Report

RULE = "sdpa-math-fallback"
HALF = ("float16", "bfloat16")
MATH_OP = "aten::_scaled_dot_product_attention_math"
SOFTMAX = "aten::_safe_softmax"
LOOKBACK = 40


@dataclass
class MathCall:
    """One math-backend attention call as the report shows it."""

    ops: list[OpRecord]
    batch_heads: int = 0
    heads: int = 0
    seq_q: int = 0
    seq_k: int = 0
    head_dim: int = 0
    dtype: str = ""
    causal: bool = False
    explicit_mask: bool = False
    gqa: bool = False
    dropout: bool = False
    reasons: list[str] = field(default_factory=list)

    @property
    def time_s(self) -> float:
        return sum(op.time_s for op in self.ops)


def _same_site(a: OpRecord, b: OpRecord) -> bool:
    return (a.source or "") == (b.source or "") and (a.module or "") == (b.module or "")


def _from_pieces(ops: list[OpRecord], i: int) -> MathCall | None:
    """The call around the _safe_softmax at ``ops[i]``: back to its Q@K^T bmm and the prologue made at the same
    site (scaling, mask, K/V expansion, upcasts), forward to its P@V bmm."""
    softmax = ops[i]
    qk = next((j for j in range(i - 1, max(i - LOOKBACK, -1), -1) if op_kind(ops[j].name) == "bmm"), None)
    pv = next((j for j in range(i + 1, min(i + LOOKBACK, len(ops))) if op_kind(ops[j].name) == "bmm"), None)
    if qk is None or pv is None:
        return None
    start = qk
    while start - 1 >= 0 and qk - (start - 1) < LOOKBACK and _same_site(ops[start - 1], softmax) \
            and op_kind(ops[start - 1].name) not in ("bmm", "_safe_softmax"):
        start -= 1
    group = ops[start:pv + 1]
    call = MathCall(group)
    scores = softmax.input_shapes[0] if softmax.input_shapes else []
    if len(scores) >= 4:
        call.heads = scores[-3]
    qk_op = ops[qk]
    if len(qk_op.input_shapes) >= 2 and len(qk_op.input_shapes[0]) == 3:
        call.batch_heads, call.seq_q, call.head_dim = qk_op.input_shapes[0]
        call.seq_k = qk_op.input_shapes[1][-1]
    dtypes = [d for op in group for d in op.input_dtypes if d.startswith(("float", "bfloat"))]
    call.dtype = next((d for d in dtypes if d in HALF), dtypes[0] if dtypes else "")
    names = [op_kind(op.name) for op in group]
    call.causal = "tril" in names or "triu" in names
    masked = any(n in ("add", "add_", "masked_fill", "masked_fill_") and len(op.input_shapes) >= 2
                 and op.input_shapes[1] for n, op in zip(names, group))
    call.explicit_mask = masked and not call.causal
    call.gqa = "repeat_interleave" in names or any(
        n in ("expand", "clone") and op.input_shapes and len(op.input_shapes[0]) == 5
        and call.heads and op.input_shapes[0][1] < call.heads for n, op in zip(names, group))
    call.dropout = any("dropout" in n for n in names)
    return call


def _from_math_op(op: OpRecord) -> MathCall | None:
    """A report that kept the math op itself: q, k, v (and attn_mask) are its inputs."""
    shapes = op.input_shapes
    if len(shapes) < 3 or len(shapes[0]) < 4 or len(shapes[1]) < 4:
        return None
    q, k = shapes[0], shapes[1]
    call = MathCall([op], heads=q[-3], seq_q=q[-2], seq_k=k[-2], head_dim=q[-1], dtype=op.input_dtypes[0]
                    if op.input_dtypes else "")
    call.explicit_mask = len(shapes) > 3 and bool(shapes[3])
    call.gqa = k[-3] < q[-3]
    return call


def refusals(call: MathCall) -> list[str]:
    """Why each fused backend refused this call, as far as the report shows (torch 2.11's rules)."""
    reasons = []
    d = call.head_dim
    if call.dtype and call.dtype not in HALF:
        reasons.append(f"{call.dtype} inputs: flash and cuDNN take only fp16/bf16")
    if d > 256:
        reasons.append(f"head dim {d} > 256: flash and cuDNN refuse it")
    elif d > 128:
        reasons.append(f"head dim {d} > 128: cuDNN refuses it (except sm90 with cuDNN 9.10+)")
    align = 8 if call.dtype in HALF else 4
    if d and d % align:
        reasons.append(f"head dim {d} not a multiple of {align}: the memory-efficient kernel refuses it")
    if d and d % 8 and call.dtype in HALF:
        reasons.append(f"head dim {d} not a multiple of 8: cuDNN refuses it")
    if call.explicit_mask:
        reasons.append("an explicit attn_mask: flash refuses any mask (pass is_causal=True for a causal one)")
    if call.causal and call.seq_q and call.seq_k and call.seq_q != call.seq_k:
        reasons.append(f"is_causal with seq_q {call.seq_q} != seq_k {call.seq_k}: flash refuses it")
    if call.gqa:
        reasons.append("grouped-query attention (K/V with fewer heads, enable_gqa): the memory-efficient kernel "
                       "has none")
    return reasons


def math_calls(report: Report) -> list[MathCall]:
    if not any(op.name.split(".")[0] in (SOFTMAX, MATH_OP) for op in op_table(report).calls):
        return []
    ops = ordered_ops(report)
    calls = []
    for i, op in enumerate(ops):
        name = op.name.split(".")[0]
        call = None
        if name == SOFTMAX:
            call = _from_pieces(ops, i)
        elif name == MATH_OP:
            call = _from_math_op(op)
        if call is not None:
            call.reasons = refusals(call)
            calls.append(call)
    return calls


def _fused_time(report: Report, call: MathCall) -> float:
    """The roofline time of the same attention as one fused kernel: roofline's SDPA count (4*B*H*s_q*s_k*d,
    halved when causal) over Q, K, V and O read or written once."""
    if not (call.heads and call.seq_q and call.seq_k and call.head_dim):
        return 0.0
    batch = max(call.batch_heads // call.heads, 1) if call.batch_heads else 1
    flops = 4.0 * batch * call.heads * call.seq_q * call.seq_k * call.head_dim * (0.5 if call.causal else 1.0)
    size = 2 if call.dtype in HALF else 4
    moved = size * batch * call.heads * call.head_dim * (2 * call.seq_q + 2 * call.seq_k)
    return roofline_time_of(report, flops, moved, call.dtype or "float32", call.ops[0] if call.ops else None)


@register(RULE, "scaled_dot_product_attention fell back to the math backend on a GPU")
def check(report: Report) -> list[Finding]:
    if not is_gpu_report(report):
        return []
    calls = math_calls(report)
    if not calls:
        return []
    time = sum(c.time_s for c in calls)
    savings = sum(max(c.time_s - _fused_time(report, c), 0.0) for c in calls)
    reasons = list(dict.fromkeys(r for c in calls for r in c.reasons))
    first = calls[0]
    shapes = sorted({(c.heads, c.seq_q, c.seq_k, c.head_dim, c.dtype) for c in calls})[:4]
    if not reasons:
        reasons = [("none visible in the report: a fused backend disabled (sdpa_kernel, "
                    "torch.backends.cuda.enable_flash_sdp(False) and the like), a last dimension with stride != 1, "
                    "or a GPU older than sm80") if torch_device(report) == "cuda" else
                   ("none visible in the report: a fused backend disabled (torch.nn.attention.sdpa_kernel), a last "
                    f"dimension with stride != 1, or inputs this {torch_device(report).upper()} build's fused "
                    "kernels do not take")]
    fix = ("run the attention in fp16/bf16 (autocast)" if first.dtype and first.dtype not in HALF else
           "keep head dim <= 256 and a multiple of 8") if any("inputs" in r or "head dim" in r for r in reasons) else ""
    steps = [fix] if fix else []
    if any("attn_mask" in r for r in reasons):
        steps.append("pass is_causal=True instead of a causal attn_mask")
    if any("grouped-query" in r for r in reasons):
        steps.append("with fp32 GQA, expand K/V to the query heads (repeat_interleave) so the memory-efficient "
                     "kernel can run, or use fp16/bf16 where flash takes enable_gqa")
    steps.append("confirm with `with torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION):` around the call: "
                 "torch then raises and warns the reasons")
    return [Finding(
        rule=RULE, category="attention",
        title=f"{len(calls)} scaled_dot_product_attention calls ran the math backend (the s x s score matrix "
              "materialised) instead of a fused kernel",
        evidence={"calls": len(calls), "time_s": time, "reasons": reasons,
                  "shapes_heads_sq_sk_d_dtype": [list(s) for s in shapes],
                  "causal": any(c.causal for c in calls), "explicit_mask": any(c.explicit_mask for c in calls),
                  "gqa": any(c.gqa for c in calls), "dropout": any(c.dropout for c in calls)},
        locations=top_locations([op for c in calls for op in c.ops]), estimated_savings_s=savings,
        savings_method=("upper bound: the math pieces' time above the roofline time of one fused kernel doing "
                        "roofline's SDPA count over the minimum bytes (Q, K, V read once, O written once)"),
        fix="; ".join(steps), severity=severity_for(report, savings),
    )]
