"""What the *_rules.py tests share: one op's (FLOPs, bytes), asserting it is modeled."""

from __future__ import annotations

from roofline.count import count_op


def cost(name, *args, kwargs=None, outputs=None):
    c = count_op(name, args, kwargs, outputs)
    assert c.modeled, c.note
    return c.flops, c.bytes
