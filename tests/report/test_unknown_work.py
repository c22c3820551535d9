"""An unmodelled op's FLOPs and bytes are unknown, never zero: null in JSON, "?" on the console and in HTML."""

from __future__ import annotations

import json

from roofline.report import Ceilings, OpRecord, Report, Summary


def _report() -> Report:
    ops = [OpRecord(name="aten::mm", flops=100.0, bytes=10.0, time_s=1e-3, bound="compute"),
           OpRecord(name="aten::mystery", time_s=2e-3, modeled=False, bound="unmodeled")]
    return Report(kind="trace", ceilings=Ceilings(device_name="cpu", memory_bandwidth_bytes_per_s=1e10,
                                                  peak_flops_per_s={"float32": 1e11}),
                  ops=ops, summary=Summary(total_time_s=3e-3))


def test_json_writes_null_and_reads_back(tmp_path):
    report = _report()
    data = json.loads(report.to_json())
    mystery = data["ops"][1]
    assert mystery["flops"] is None and mystery["bytes"] is None
    assert data["ops"][0]["flops"] == 100.0
    assert report.to_dict()["ops"][1]["bytes"] is None
    path = report.save(tmp_path / "r.json")
    back = Report.load(path)
    assert back.ops[1].flops == 0.0 and not back.ops[1].modeled and back.ops[0].flops == 100.0


def test_console_shows_a_question_mark():
    from rich.console import Console

    from roofline.render.console import ops_table

    console = Console(width=250, record=True)
    console.print(ops_table(_report()))
    row = next(line for line in console.export_text().splitlines() if "mystery" in line)
    cells = [c.strip() for c in row.split("│")]
    assert "?" in cells and "0" not in cells and "0 B" not in cells


def test_a_collectives_bytes_are_its_message_zero_for_a_barrier_and_null_when_unrecorded():
    """An all-gather whose trace recorded no size moved an unknown message, not none: null, even on a row counted as
    modelled; a barrier sends nothing (0); a recorded message is kept. Written whole or in chunks alike, and read
    back as unknown again."""
    from roofline.analyze.communication import message_unrecorded

    comm = {"bound": "communication", "time_s": 1e-3, "modeled": False}
    ops = [OpRecord(name="c10d::_allgather_base_", **comm),
           OpRecord(name="nccl:_all_gather_base", bound="communication", time_s=1e-3),  # modelled, size unknown
           OpRecord(name="c10d::barrier", **comm),
           OpRecord(name="c10d::allreduce_", bytes=4096.0, **comm),
           OpRecord(name="aten::relu", bytes=0.0, time_s=1e-6, bound="launch")]
    report = Report(kind="trace", ops=ops, summary=Summary(total_time_s=4e-3))
    for data in (json.loads(report.json_bytes()), json.loads(b"".join(report.json_chunks(records_per_chunk=2))),
                 report.to_dict()):
        assert [o["bytes"] for o in data["ops"]] == [None, None, 0.0, 4096.0, 0.0]
        assert [o["flops"] for o in data["ops"]] == [None, 0.0, None, None, 0.0]
    back = Report.from_json(report.json_bytes())
    assert [message_unrecorded(op) for op in back.ops] == [True, True, False, False, False]


def test_a_big_report_with_unknown_work_is_written_in_chunks_with_the_same_bytes():
    """One unmodelled op once turned the whole report into plain data before writing it (a 127,620-op report's
    JSON 0.27 -> 2.25 s, +215 MB): now only the chunks holding such ops are, and the bytes are what writing the
    whole report as plain data gives, at every chunk size."""
    import msgspec

    from roofline.report import _null_unknown_work

    ops = [OpRecord(name="aten::mm", flops=100.0 + i, bytes=10.0, time_s=1e-3, bound="compute") for i in range(40)]
    ops[7] = OpRecord(name="aten::mystery", time_s=2e-3, modeled=False, bound="unmodeled")
    ops[31] = OpRecord(name="c10d::_allgather_base_", bound="communication", time_s=1e-3)
    report = Report(kind="trace", ops=ops, summary=Summary(total_time_s=3e-3))
    whole = msgspec.json.encode(_null_unknown_work(msgspec.to_builtins(report)))
    assert report.json_bytes() == whole
    for per_chunk in (1, 3, 8, 40, 4096):
        chunks = list(report.json_chunks(records_per_chunk=per_chunk))
        assert b"".join(chunks) == whole
        assert len(chunks) > 40 // per_chunk  # written as it comes, not as one piece
