"""Losses: nll_loss (forward/backward, 1d and 2d), cross_entropy_loss, mse, l1/smooth_l1/huber, binary
cross-entropy, multi-margin, CTC.

FLOPs: nll_loss 1 per target element (gather + accumulate); cross_entropy_loss = log_softmax (5 per input
element) + nll; mse 3 per element (subtract, square, add), l1/smooth_l1/huber 3, bce_with_logits 8,
bce 10 (two logs at 4); multi_margin_loss 4 per input element (margin - x[y] + x[i], the clamp, the optional
square or class weight, the sum). Backward: nll 1 per target element; mse/l1 3, bce 5, multi-margin 4 per element.
Bytes: nll_loss reads the target and only the gathered log-probabilities (and class weights), writes the
loss (one element when reduced) and total_weight; its backward writes a zero-filled grad_input of the
input's full size and reads grad_output, target and total_weight.
CTC walks an alignment grid of N * T * (2S + 1) states (S the longest target): forward 16 FLOPs a state (a
log-space sum of up to three predecessors, 5 each as logsumexp, and the emission's add), reading one gathered
log-probability a state (at most all of them) and writing log_alpha; backward 22 a state (the same walk for
log_beta, alpha + beta, and its log-space sum into the state's class) and 4 per gradient element (two exps, the
subtract, the scale), reading log_probs and log_alpha whole and writing log_beta and the gradient.
NB: states past a sample's own input or target length are counted as if visited.
"""

from __future__ import annotations

from math import ceil

from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, nbytes, register

_REDUCTION_NONE = 0


@register("aten::nll_loss_forward", "aten::nll_loss2d_forward")
def nll_loss_forward(call: Call) -> OpCost:
    """(self, target, weight, reduction, ignore_index) -> (output, total_weight)."""
    self_, target = call.tensor(0, "self"), call.tensor(1, "target")
    weight = call.maybe_tensor(2, "weight")
    reduction = call.arg(3, "reduction", 1)
    gathered = target.numel * self_.itemsize + (target.numel * weight.itemsize if weight is not None else 0)
    if call.outputs is not None:
        written = nbytes(call.outputs)
    else:
        loss_elements = target.numel if reduction == _REDUCTION_NONE else 1
        written = (loss_elements + 1) * self_.itemsize
    return OpCost(float(target.numel), float(target.nbytes + gathered + written), True)


@register("aten::nll_loss", "aten::nll_loss_nd", "aten::nll_loss2d", composite=True)
def nll_loss(call: Call) -> OpCost:
    """Composite (-> nll_loss_forward)."""
    return nll_loss_forward(call)


@register("aten::nll_loss_backward", "aten::nll_loss2d_backward")
def nll_loss_backward(call: Call) -> OpCost:
    """(grad_output, self, target, weight, reduction, ignore_index, total_weight)."""
    grad, self_, target = call.tensor(0, "grad_output"), call.tensor(1, "self"), call.tensor(2, "target")
    weight, total = call.maybe_tensor(3, "weight"), call.maybe_tensor(6, "total_weight")
    written = nbytes(call.outputs) if call.outputs is not None else self_.nbytes
    weights_read = target.numel * weight.itemsize if weight is not None else 0
    return OpCost(float(target.numel), float(nbytes([grad, target, total]) + weights_read + written), True)


@register("aten::cross_entropy_loss", composite=True)
def cross_entropy_loss(call: Call) -> OpCost:
    """Composite (-> log_softmax + nll_loss): the sum of the two. (self, target, weight, reduction,
    ignore_index, label_smoothing). Probability targets (same shape as self) count as a full product."""
    self_, target = call.tensor(0, "self"), call.tensor(1, "target")
    log_softmax_bytes = 2 * self_.nbytes
    if target.shape == self_.shape and target.dtype not in ("int64", "int32"):
        return OpCost(float(7 * self_.numel), float(log_softmax_bytes + target.nbytes + self_.itemsize), True)
    nll = nll_loss_forward(call)
    return OpCost(float(5 * self_.numel) + nll.flops, float(log_softmax_bytes) + nll.bytes, True)


_POINTWISE_LOSSES = {"aten::mse_loss": 3, "aten::l1_loss": 3, "aten::smooth_l1_loss": 3, "aten::huber_loss": 3,
                     "aten::binary_cross_entropy_with_logits": 8, "aten::binary_cross_entropy": 10,
                     "aten::soft_margin_loss": 8}


@register(*_POINTWISE_LOSSES)
def pointwise_loss(call: Call) -> OpCost:
    """(self, target, [weight, pos_weight,] reduction): reduction is the last int argument."""
    self_ = call.tensor(0, "self")
    reduction = next((a for a in reversed(call.args) if isinstance(a, int) and not isinstance(a, bool)), 1)
    if call.outputs is not None:
        written = nbytes(call.outputs)
    else:
        written = self_.nbytes if reduction == _REDUCTION_NONE else self_.itemsize
    flops = _POINTWISE_LOSSES[call.name] * self_.numel
    return OpCost(float(flops), float(nbytes(call.input_metas()) + written), True)


_POINTWISE_LOSS_BACKWARDS = {"aten::mse_loss_backward": 3, "aten::l1_loss_backward": 3,
                             "aten::smooth_l1_loss_backward": 3, "aten::huber_loss_backward": 3,
                             "aten::binary_cross_entropy_backward": 5, "aten::soft_margin_loss_backward": 5}


@register(*_POINTWISE_LOSS_BACKWARDS)
def pointwise_loss_backward(call: Call) -> OpCost:
    """(grad_output, self, target, ...): grad_input (self's shape) written."""
    self_ = call.tensor(1, "self")
    written = nbytes(call.outputs) if call.outputs is not None else self_.nbytes
    flops = _POINTWISE_LOSS_BACKWARDS[call.name] * self_.numel
    return OpCost(float(flops), float(nbytes(call.input_metas()) + written), True)



@register("aten::multi_margin_loss", "aten::multi_margin_loss_backward")
def multi_margin_loss(call: Call) -> OpCost:
    """(self (N, C), target (N), p, margin, weight, reduction); the backward (grad_output, self, target, p, margin,
    weight, reduction) writes grad_input (self's shape)."""
    backward = call.name.endswith("_backward")
    self_ = call.tensor(1 if backward else 0, "self")
    if call.outputs is not None:
        written = nbytes(call.outputs)
    elif backward:
        written = self_.nbytes
    else:
        reduction = call.arg(5, "reduction", 1)
        written = self_.shape[0] * self_.itemsize if reduction == _REDUCTION_NONE and self_.ndim > 1 else self_.itemsize
    return OpCost(float(4 * self_.numel), float(nbytes(call.input_metas()) + written), True)


def _ctc_states(log_probs: TensorMeta, targets: TensorMeta, target_lengths: object) -> int:
    """N * T * (2S + 1): S is padded targets' second dim, else the longest of target_lengths (a list), else (a
    trace's tensor of lengths) the concatenated targets' mean length."""
    steps, batch = log_probs.shape[0], (log_probs.shape[1] if log_probs.ndim == 3 else 1)
    if targets.ndim == 2:
        longest = targets.shape[1]
    elif isinstance(target_lengths, (list, tuple)) and target_lengths:
        longest = max(int(n) for n in target_lengths)
    else:
        longest = ceil(targets.numel / batch)
    return batch * steps * (2 * longest + 1)


@register("aten::_ctc_loss")
def ctc_loss(call: Call) -> OpCost:
    """(log_probs (T, N, C), targets, input_lengths, target_lengths, blank, zero_infinity) -> (nll, log_alpha)."""
    return _ctc_loss(call, call.outputs)


def _ctc_loss(call: Call, outputs: list | None) -> OpCost:
    """``outputs``: (nll, log_alpha) where recorded; else both are sized from the alignment grid."""
    log_probs, targets = call.tensor(0, "log_probs"), call.tensor(1, "targets")
    states = _ctc_states(log_probs, targets, call.arg(3, "target_lengths"))
    batch = log_probs.shape[1] if log_probs.ndim == 3 else 1
    written = nbytes(outputs) if outputs is not None else (states + batch) * log_probs.itemsize
    lengths = nbytes([call.maybe_tensor(2, "input_lengths"), call.maybe_tensor(3, "target_lengths")])
    gathered = min(states, log_probs.numel) * log_probs.itemsize
    return OpCost(float(16 * states), float(gathered + targets.nbytes + lengths + written), True)


@register("aten::ctc_loss", composite=True)
def ctc_loss_composite(call: Call) -> OpCost:
    """Composite (-> _ctc_loss, then its reduction): its recorded output is the reduced loss, not _ctc_loss's
    (nll, log_alpha), which it writes all the same."""
    return _ctc_loss(call, None)


@register("aten::_ctc_loss_backward")
def ctc_loss_backward(call: Call) -> OpCost:
    """(grad, log_probs, targets, input_lengths, target_lengths, neg_log_likelihood, log_alpha, blank, ...)."""
    log_probs, alpha = call.tensor(1, "log_probs"), call.tensor(6, "log_alpha")
    written = nbytes(call.outputs) if call.outputs is not None else log_probs.nbytes
    flops = 22 * alpha.numel + 4 * log_probs.numel
    return OpCost(float(flops), float(nbytes(call.input_metas()) + alpha.nbytes + written), True)

