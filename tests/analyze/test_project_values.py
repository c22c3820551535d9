"""project_op's shape rules at their edges and the fallback scaling when the op's formula cannot answer from shapes
(analyze/project.py); expected shapes and ratios worked by hand."""

from __future__ import annotations

import pytest

from roofline.analyze.project import Change, project_op
from roofline.report import OpRecord

F = "float32"


def _op(name: str, ins, outs, flops: float = 100.0, nbytes: float = 800.0, in_dt=None, **kw) -> OpRecord:
    return OpRecord(name=name, dtype=F, flops=flops, bytes=nbytes, input_shapes=ins, output_shapes=outs,
                    input_dtypes=in_dt or [F] * len(ins), output_dtypes=[F] * len(outs), **kw)


def test_a_linear_scales_its_rows_never_its_features_or_weight():
    lin = _op("aten::linear", [[2, 512, 64], [128, 64], [128]], [[2, 512, 128]], flops=2.0 * 1024 * 64 * 128)
    new = project_op(lin, Change(batch=(2, 4), seq=(512, 512)))
    assert new.input_shapes == [[4, 512, 64], [128, 64], [128]] and new.output_shapes == [[4, 512, 128]]
    assert new.flops == pytest.approx(2 * lin.flops)
    # hidden equal to seq on a 2-d activation: its feature (last) dimension stays
    square = _op("aten::linear", [[512, 512], [512, 512], [512]], [[512, 512]])
    new = project_op(square, Change(seq=(512, 2048)))
    assert new.input_shapes == [[2048, 512], [512, 512], [512]] and new.output_shapes == [[2048, 512]]


def test_square_masks_and_scores_scale_both_sequence_dimensions():
    mask = project_op(_op("aten::add", [[512, 512], [512, 512]], [[512, 512]]), Change(seq=(512, 2048)))
    assert mask.output_shapes == [[2048, 2048]]
    scores = project_op(_op("aten::add", [[2, 8, 512, 512]], [[2, 8, 512, 512]]), Change(seq=(512, 2048)))
    assert scores.output_shapes == [[2, 8, 2048, 2048]]


def test_only_a_leading_dimension_equal_to_batch_is_the_batch():
    new = project_op(_op("aten::mul", [[2, 2, 64]], [[2, 2, 64]]), Change(batch=(2, 4)))
    assert new.output_shapes == [[4, 2, 64]]


def test_an_op_its_formula_cannot_count_scales_bytes_with_its_tensors_and_flops_with_its_outputs():
    # tokens 4 x 512 = 2048 rows; the int64 input (7 indices) does not scale
    op = _op("aten::my_custom_op", [[2048, 8], [7]], [[2048, 8]], in_dt=[F, "int64"])
    new = project_op(op, Change(batch=(4, 8), seq=(512, 512)))
    assert new.input_shapes == [[4096, 8], [7]] and new.output_shapes == [[4096, 8]]
    old_b, new_b = 2048 * 8 * 4 * 2 + 7 * 8, 4096 * 8 * 4 * 2 + 7 * 8
    assert new.bytes == pytest.approx(800.0 * new_b / old_b) and new.flops == pytest.approx(200.0)
    half = project_op(op, Change(dtype=(F, "bfloat16")))
    assert half.input_dtypes == ["bfloat16", "int64"] and half.bytes == pytest.approx(
        800.0 * (2048 * 8 * 2 * 2 + 7 * 8) / (2048 * 8 * 4 * 2 + 7 * 8))
    # no elements at all: nothing to scale by
    empty = project_op(_op("aten::my_custom_op", [[0, 512, 8]], [[0, 512, 8]]), Change(seq=(512, 1024)))
    assert empty.output_shapes == [[0, 1024, 8]] and (empty.flops, empty.bytes) == (100.0, 800.0)
    # the formula says no work (a view), the record says some bytes: they scale with the tensors
    view = project_op(_op("aten::view", [[2048, 8]], [[2048, 8]], flops=0.0), Change(batch=(4, 8), seq=(512, 512)))
    assert (view.flops, view.bytes) == (0.0, pytest.approx(1600.0))
