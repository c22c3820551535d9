"""evidence.top_locations sums time per (source, module) pair and writes each location once: the same ranking as
summing per written location, op by op (``location``)."""

from doctor_cases import op
from roofline.doctor.evidence import location, top_locations


def _by_location(ops, limit=5):
    weight = {}
    for o in ops:
        weight[location(o)] = weight.get(location(o), 0.0) + o.time_s
    return [loc for loc, _ in sorted(weight.items(), key=lambda kv: -kv[1])][:limit]


def test_locations_rank_by_summed_time_ties_in_order_of_first_appearance():
    ops = [op("aten::add", [], source="a.py:1", module="m", time=1.0),
           op("aten::mul", [], source="b.py:2", module="m", time=2.0),
           op("aten::add", [], source="a.py:1", module="m", time=1.5),
           op("aten::mm", [], source="c.py:3", module="n", time=2.5),
           op("aten::neg", [], source="", module="", time=0.1)]
    assert top_locations(ops) == ["a.py:1 (m)", "c.py:3 (n)", "b.py:2 (m)", "aten::neg"] == _by_location(ops)
    assert top_locations(iter(ops), limit=2) == ["a.py:1 (m)", "c.py:3 (n)"]


def test_pairs_that_write_one_location_are_summed_as_one():
    """A module alone and an empty source with that module, an op named like a location: one location each."""
    ops = [op("aten::add", [], source="", module="m", time=1.0),
           op("aten::add", [], source=None, module="m", time=1.0),
           op("aten::mul", [], source="x.py:1", module="", time=1.5),
           op("x.py:1", [], source="", module="", time=0.6),
           op("aten::mm", [], source="y.py:1", module="k", time=1.9)]
    assert top_locations(ops) == ["x.py:1", "m", "y.py:1 (k)"] == _by_location(ops)
