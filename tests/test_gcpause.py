"""cyclic_gc_paused: the collector is off inside, and back to what it was on exit, also when the body raises."""

from __future__ import annotations

import gc

import pytest

from roofline.gcpause import cyclic_gc_paused


def test_pauses_and_restores_even_when_the_body_raises():
    assert gc.isenabled()
    with pytest.raises(ValueError):
        with cyclic_gc_paused():
            assert not gc.isenabled()
            raise ValueError("boom")
    assert gc.isenabled()


def test_a_nested_pause_leaves_the_outer_one_in_force():
    with cyclic_gc_paused():
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_resume_false_leaves_it_off_after_a_normal_exit_but_not_after_a_raise():
    try:
        with cyclic_gc_paused(resume=False):
            pass
        assert not gc.isenabled()
        gc.enable()
        with pytest.raises(ValueError):
            with cyclic_gc_paused(resume=False):
                raise ValueError("boom")
        assert gc.isenabled()
    finally:
        gc.enable()
