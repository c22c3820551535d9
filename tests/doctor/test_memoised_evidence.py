"""Evidence several rules ask for is computed once per diagnose() and never outlives it."""

from roofline.doctor.evidence import memoised, once_per_diagnose, ordered_ops
from roofline.report import OpRecord, Report


def _report(n: int) -> Report:
    return Report(kind="trace", ops=[OpRecord(name="aten::add", index=i, step=0) for i in range(n)])


def test_once_per_diagnose_runs_once_inside_and_every_time_outside():
    calls = []

    @once_per_diagnose
    def view(report):
        calls.append(report)
        return len(report.ops)

    a, b = _report(2), _report(3)
    with memoised():
        assert (view(a), view(a), view(b), view(b)) == (2, 2, 3, 3)
    assert calls == [a, b]
    assert view(a) == 2 and view(a) == 2
    assert calls == [a, b, a, a]


def test_ordered_ops_is_a_new_list_each_time_and_sees_reordered_ops():
    report = _report(3)
    with memoised():
        first = ordered_ops(report)
        first.clear()
        assert [op.index for op in ordered_ops(report)] == [0, 1, 2]
    report.ops.reverse()
    with memoised():
        assert [op.index for op in ordered_ops(report)] == [0, 1, 2]
        report.ops.append(OpRecord(name="aten::mul", index=3, step=0))
        assert [op.index for op in ordered_ops(report)] == [0, 1, 2, 3]
