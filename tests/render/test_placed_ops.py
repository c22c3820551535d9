"""render/placed_ops.py: report.json's op list and report.html's op table, worked out by one forked child when the
ops are placed, give the same bytes as made in-process; a child that fails to write the op list, or dies, leaves
the parent to make them itself."""

import os

import pytest

import roofline.render.placed_ops as placed_ops
from roofline.render.html import html_chunks, ops_parts
from roofline.render.outputs import HtmlRenderer, JsonRenderer, prepare
from roofline.render.placed_ops import PlacedOpsWork
from roofline_synthetic import make_report

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")


def _page(report, parts) -> str:
    return "".join(html_chunks(report, parts))


def _json(report, work=None) -> bytes:
    return b"".join(report.json_chunks(op_records=None if work is None else work.op_records()))


def test_the_childs_op_list_and_op_table_are_the_same_bytes():
    report = make_report(n_ops=300)
    work = PlacedOpsWork(report.ops, html=True)
    records = work.op_records()
    assert records is not None  # the child's, not the parent's fallback
    assert b"".join(report.json_chunks(op_records=records)) == report.json_bytes()
    assert _page(report, work.html_parts()) == _page(report, ops_parts(report.ops))


def test_the_renderers_take_the_childs_work_through_prepare():
    report = make_report(n_ops=120)
    work = PlacedOpsWork(report.ops, html=True)
    json_renderer, html_renderer = JsonRenderer(), HtmlRenderer()
    prepare([json_renderer, html_renderer], report, work)
    assert b"".join(json_renderer.render(report)) == report.json_bytes()
    fresh = HtmlRenderer()
    fresh.prepare(report)
    assert b"".join(html_renderer.render(report)) == b"".join(fresh.render(report))


def test_an_op_list_the_child_cannot_write_is_encoded_in_the_parent(monkeypatch):
    report = make_report(n_ops=80)
    parent = os.getpid()
    real = placed_ops.ops_json_records

    def fails_in_child(ops, *args):
        if os.getpid() != parent:
            raise OSError(28, "No space left on device")
        return real(ops, *args)

    monkeypatch.setattr(placed_ops, "ops_json_records", fails_in_child)
    work = PlacedOpsWork(report.ops, html=True)
    assert work.op_records() is None
    assert _page(report, work.html_parts()) == _page(report, ops_parts(report.ops))  # the child still sent the op table


def test_a_child_that_dies_leaves_both_to_the_parent(monkeypatch):
    report = make_report(n_ops=80)
    parent = os.getpid()
    real = placed_ops._write_records

    def dies_in_child(ops, fd):
        if os.getpid() != parent:
            os._exit(3)
        return real(ops, fd)

    monkeypatch.setattr(placed_ops, "_write_records", dies_in_child)
    work = PlacedOpsWork(report.ops, html=True)
    assert _json(report, work) == report.json_bytes()
    assert _page(report, work.html_parts()) == _page(report, ops_parts(report.ops))


def test_without_report_html_the_child_sends_only_the_op_list():
    report = make_report(n_ops=50)
    work = PlacedOpsWork(report.ops, html=False)
    assert _json(report, work) == report.json_bytes()
    assert _page(report, work.html_parts()) == _page(report, ops_parts(report.ops))  # asked anyway: built here
