"""torchvision.ops' custom ops (the torchvision:: namespace): RoI pooling and alignment (plain, position-sensitive,
quantized), non-maximum suppression and deformable convolution, forward and backward. Detection and segmentation
models spend a real share of their time here (roi_align is ~15% of a CPU Faster R-CNN's op time).

FLOPs (torch's FlopCounterMode counts none of these ops):
- roi_align / ps_roi_align: per output element and per sample point of its bin, a bilinear interpolation
  (7, as pooling.py's bilinear upsampling) and its accumulation (1): 8 per sample. A bin holds sampling_ratio^2
  sample points; sampling_ratio <= 0 asks for ceil(roi size / pooled size) per side, which depends on the boxes'
  values (no shape records them): we count ADAPTIVE_SAMPLES (2 x 2, a box twice the pooled size), and say so.
- roi_pool / ps_roi_pool: a max over each bin, whose size depends on the boxes: 1 compare per output element (the
  least a bin holds), said in the note.
- backward of the aligns: the same taps scattered into grad_input, 8 per sample; of the pools: 1 per grad element.
- nms: an upper bound (nms_flops, also for ONNX's NonMaxSuppression): every pair of boxes' IoU (as the CUDA
  kernel computes the full upper triangle; the CPU loops skip suppressed boxes): IOU_FLOPS each, plus the boxes'
  areas (3 each) and the score sort (n log2 n compares).
- deform_conv2d: the convolution's products as conv.py counts them (2 * batch * prod(weight) * output spatial),
  plus the sampled columns: a bilinear interpolation (7) per input channel, kernel tap and output location, and a
  multiply by the modulation mask (1) when use_mask. Backward: twice the products (grad_input and grad_weight,
  as convolution backward) and twice the sampling (the columns' gradient scattered and the offsets' gradient from
  the same taps, as grid_sampler's backward); the bias gradient is a reduction of grad (1 per element).
Bytes: the registry's convention. An align/pool reads the rois and, from the feature map, at most the taps it
gathers (never more than the map, as grid_sample); a pool writes its int32 argmax / channel mapping too. A
backward reads grad and rois (and argmax) and writes the whole zero-filled grad_input.
"""

from __future__ import annotations

from math import log2, prod

from roofline.count.conv import conv_flop_count, conv_output_shape
from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, nbytes, register

BILINEAR_FLOPS = 7
SAMPLE_FLOPS = BILINEAR_FLOPS + 1
ADAPTIVE_SAMPLES = 4
IOU_FLOPS = 13  # 4 min/max for the intersection's corners, 2 clamps at 0, 2 subtracts and a multiply for its
# area, an add and a subtract for the union, the divide and the compare with the threshold
NMS_NOTE = "NMS: every pair of boxes' IoU counted, as if no box were suppressed: an upper bound"


def _samples(sampling_ratio: int) -> tuple[int, str]:
    if sampling_ratio > 0:
        return sampling_ratio * sampling_ratio, ""
    return ADAPTIVE_SAMPLES, f"adaptive sampling counted as {ADAPTIVE_SAMPLES} samples per bin (box-dependent)"


def _gathered(x: TensorMeta, taps: int) -> int:
    return min(x.nbytes, taps * x.itemsize)


def _align(call: Call, position_sensitive: bool, first: int, ratio_index: int) -> OpCost:
    x, rois = call.tensor(0, "input"), call.tensor(1, "rois")
    ph, pw = int(call.arg(first, "pooled_height")), int(call.arg(first + 1, "pooled_width"))
    channels = x.shape[1] // (ph * pw) if position_sensitive else x.shape[1]
    out = TensorMeta((rois.shape[0], channels, ph, pw), x.dtype)
    samples, note = _samples(int(call.arg(ratio_index, "sampling_ratio", -1)))
    mapping = out.numel * 4 if position_sensitive else 0
    written = nbytes(call.outputs) if call.outputs is not None else out.nbytes + mapping
    reads = _gathered(x, 4 * samples * out.numel) + rois.nbytes
    return OpCost(float(SAMPLE_FLOPS * samples * out.numel), float(reads + written), True, note=note)


@register("torchvision::roi_align")
def roi_align(call: Call) -> OpCost:
    """(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned) -> (K, C, ph, pw)."""
    return _align(call, False, 3, 5)


@register("torchvision::ps_roi_align")
def ps_roi_align(call: Call) -> OpCost:
    """(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio) -> output (K, C/(ph*pw), ph, pw)
    and its int32 channel mapping of the same shape."""
    return _align(call, True, 3, 5)


@register("torchvision::qroi_align")
def qroi_align(call: Call) -> OpCost:
    """(input, rois, input_scale, input_zero_point, rois_scale, rois_zero_point, spatial_scale, pooled_height,
    pooled_width, sampling_ratio, aligned): roi_align on a quantized map."""
    return _align(call, False, 7, 9)


@register("torchvision::roi_pool", "torchvision::ps_roi_pool")
def roi_pool(call: Call) -> OpCost:
    """(input, rois, spatial_scale, pooled_height, pooled_width) -> (output, int32 argmax / channel mapping)."""
    x, rois = call.tensor(0, "input"), call.tensor(1, "rois")
    ph, pw = int(call.arg(3, "pooled_height")), int(call.arg(4, "pooled_width"))
    channels = x.shape[1] // (ph * pw) if call.name == "torchvision::ps_roi_pool" else x.shape[1]
    out = TensorMeta((rois.shape[0], channels, ph, pw), x.dtype)
    written = nbytes(call.outputs) if call.outputs is not None else out.nbytes + out.numel * 4
    reads = _gathered(x, out.numel) + rois.nbytes
    return OpCost(float(out.numel), float(reads + written), True, note="one compare per bin (bin sizes are "
                                                                        "box-dependent)")


def _grad_input_bytes(call: Call, grad: TensorMeta, first: int) -> int:
    if call.outputs is not None:
        return nbytes(call.outputs)
    batch, channels, height, width = (int(call.arg(first + i)) for i in range(4))
    return batch * channels * height * width * grad.itemsize


@register("torchvision::_roi_align_backward")
def roi_align_backward(call: Call) -> OpCost:
    """(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size, channels, height, width, sampling_ratio,
    aligned)."""
    grad, rois = call.tensor(0, "grad"), call.tensor(1, "rois")
    samples, note = _samples(int(call.arg(9, "sampling_ratio", -1)))
    written = _grad_input_bytes(call, grad, 5)
    return OpCost(float(SAMPLE_FLOPS * samples * grad.numel), float(grad.nbytes + rois.nbytes + written), True,
                  note=note)


@register("torchvision::_ps_roi_align_backward")
def ps_roi_align_backward(call: Call) -> OpCost:
    """(grad, rois, channel_mapping, spatial_scale, pooled_height, pooled_width, sampling_ratio, batch_size,
    channels, height, width)."""
    grad, rois, mapping = call.tensor(0, "grad"), call.tensor(1, "rois"), call.maybe_tensor(2, "channel_mapping")
    samples, note = _samples(int(call.arg(6, "sampling_ratio", -1)))
    written = _grad_input_bytes(call, grad, 7)
    return OpCost(float(SAMPLE_FLOPS * samples * grad.numel), float(nbytes([grad, rois, mapping]) + written), True,
                  note=note)


@register("torchvision::_roi_pool_backward", "torchvision::_ps_roi_pool_backward")
def roi_pool_backward(call: Call) -> OpCost:
    """(grad, rois, argmax / channel_mapping, spatial_scale, pooled_height, pooled_width, batch_size, channels,
    height, width): each grad element added at its argmax."""
    grad, rois, argmax = call.tensor(0, "grad"), call.tensor(1, "rois"), call.maybe_tensor(2)
    written = _grad_input_bytes(call, grad, 6)
    return OpCost(float(grad.numel), float(nbytes([grad, rois, argmax]) + written), True)


@register("torchvision::nms")
def nms(call: Call) -> OpCost:
    """(dets (N, 4), scores (N,), iou_threshold) -> int64 indices of the kept boxes."""
    dets, scores = call.tensor(0, "dets"), call.tensor(1, "scores")
    n = dets.shape[0] if dets.ndim else 0
    written = nbytes(call.outputs) if call.outputs is not None else n * 8
    return OpCost(nms_flops(n), float(dets.nbytes + scores.nbytes + written), True, note=NMS_NOTE)


def nms_flops(boxes: int, sets: int = 1, score_threshold: bool = False) -> float:
    """Non-maximum suppression of ``sets`` independent sets of ``boxes`` boxes each, as an UPPER bound (the IoU
    tests a run makes depend on the data: how many boxes the threshold and the earlier keeps suppress). Per set:
    the boxes' areas (3 each), the score sort (n log2 n compares), the score threshold when there is one (1 each)
    and every pair's IoU (IOU_FLOPS each), as torchvision's CUDA kernel computes the full upper triangle; the CPU
    loops (torchvision's, ONNX Runtime's) skip suppressed boxes and stop at the output limit, so do at most this.
    torchvision::nms is one set; ONNX's NonMaxSuppression one per batch and class."""
    n = boxes
    per_set = IOU_FLOPS * n * (n - 1) / 2 + 3 * n + (n * log2(n) if n > 1 else 0) + (n if score_threshold else 0)
    return float(sets * per_set)


def _deform_parts(call: Call) -> tuple[TensorMeta, TensorMeta, TensorMeta, TensorMeta | None, TensorMeta | None,
                                       TensorMeta, float, float]:
    """(input, weight, offset, mask, bias, output, product FLOPs, sampling FLOPs) of deform_conv2d's args."""
    x, w, offset = call.tensor(0, "input"), call.tensor(1, "weight"), call.tensor(2, "offset")
    mask, bias = call.maybe_tensor(3, "mask"), call.maybe_tensor(4, "bias")
    use_mask = bool(call.arg(13, "use_mask", False))
    kh, kw = w.shape[2], w.shape[3]
    stride = int(call.arg(5, "stride_h", 1)), int(call.arg(6, "stride_w", 1))
    pad = int(call.arg(7, "pad_h", 0)), int(call.arg(8, "pad_w", 0))
    dilation = int(call.arg(9, "dilation_h", 1)), int(call.arg(10, "dilation_w", 1))
    out = TensorMeta(conv_output_shape(x, w, list(stride), list(pad), list(dilation), False, [0, 0], 1), x.dtype)
    spatial = out.shape[2:]
    products = float(conv_flop_count(x.shape, w.shape, out.shape))
    sampling = float((BILINEAR_FLOPS + (1 if use_mask else 0)) * x.shape[0] * x.shape[1] * kh * kw * prod(spatial))
    used_mask = mask if use_mask else None
    return x, w, offset, used_mask, bias, out, products, sampling


@register("torchvision::deform_conv2d")
def deform_conv2d(call: Call) -> OpCost:
    """(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups,
    offset_groups, use_mask) -> (N, C_out, H_out, W_out)."""
    x, w, offset, mask, bias, out, products, sampling = _deform_parts(call)
    written = nbytes(call.outputs) if call.outputs is not None else out.nbytes
    return OpCost(products + sampling, float(nbytes([x, w, offset, mask, bias]) + written), True)


@register("torchvision::_deform_conv2d_backward")
def deform_conv2d_backward(call: Call) -> OpCost:
    """(grad, input, weight, offset, mask, bias, stride_h, ..., use_mask) -> grads of input, weight, offset, mask,
    bias."""
    grad = call.tensor(0, "grad")
    forward = Call("torchvision::deform_conv2d", call.args[1:], call.kwargs, None)
    x, w, offset, mask, bias, _, products, sampling = _deform_parts(forward)
    written = nbytes(call.outputs) if call.outputs is not None else nbytes([x, w, offset, mask, bias])
    flops = 2 * products + 2 * sampling + (grad.numel if bias is not None else 0)
    return OpCost(flops, float(nbytes([grad, x, w, offset, mask]) + written), True)
