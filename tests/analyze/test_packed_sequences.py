"""A packed-sequence LSTM (nn.utils.rnn.pack_padded_sequence / pad_packed_sequence), forward and backward: the
packing ops are modelled memory-bound copies, from a real torch.profiler trace (their sizes read from their
children: analyze/packed_sequences.py) and through analyze_model (the counting pass sees their outputs).

Sizes: a (3, 10, 8) fp32 batch of lengths 9, 7, 3: N = 19 kept rows, 9 time steps; LSTM hidden size 16."""

from __future__ import annotations

import pytest

from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.report import Ceilings

torch = pytest.importorskip("torch")

ROOFS = Ceilings(device="cpu", device_name="test CPU", memory_bandwidth_bytes_per_s=1e11,
                 peak_flops_per_s={"float32": 1e12}, launch_overhead_s=5e-6)
B, T, F, H, N, STEPS = 3, 10, 8, 16, 19, 9
PACK = 2 * N * F * 4 + B * 8 + STEPS * 8  # kept rows read and written packed; lengths read, batch sizes written
PAD = N * H * 4 + STEPS * 8 + B * STEPS * H * 4 + B * 8  # packed output read, padded (3, 9, 16) and lengths written
PACK_BACKWARD = N * F * 4 + STEPS * 8 + B * T * F * 4  # packed gradient read, the (3, 10, 8) gradient written
PACKING = {"aten::_pack_padded_sequence": PACK, "aten::_pad_packed_sequence": PAD,
           "aten::_pack_padded_sequence_backward": PACK_BACKWARD}


class PackedLSTM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(F, H, batch_first=True)

    def forward(self, x, lengths):
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        return torch.nn.utils.rnn.pad_packed_sequence(self.rnn(packed)[0], batch_first=True)[0]


def _inputs():
    torch.manual_seed(0)
    return torch.randn(B, T, F, requires_grad=True), torch.tensor([9, 7, 3])


def test_from_a_trace_each_packing_op_is_one_modelled_row_of_its_copy_bytes(tmp_path):
    model, (x, lengths) = PackedLSTM(), _inputs()
    path = tmp_path / "packed.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        model(x, lengths).sum().backward()
    prof.export_chrome_trace(str(path))
    report = report_from_trace(load_trace(path), ROOFS)
    rows = [op for op in report.ops if op.name in PACKING]
    assert sorted(op.name for op in rows) == sorted(PACKING)  # one row each, not their copy_/cat/full children
    for op in rows:
        assert (op.modeled, op.flops, op.bytes) == (True, 0.0, PACKING[op.name]), op.name
        assert op.bound != "unmodeled" and op.time_s > 0
    assert next(op for op in rows if "backward" in op.name).phase == "backward"
    # the only unmodelled rows are the own host time of ops without a formula beside their children (aten::index's
    # gather: torch records its index list as []), not the packing; and, this profile being cold, a first call's
    # set-up (analyze/warmup.py: aten::item's first own time)
    # (the record lists the 16 with the most excess: any more are only counted)
    first_calls = [w for w in report.extra.get("warmup", []) if w["kind"] == "first-calls"]
    listed = {e["row"] for w in first_calls for e in w["ops"]}
    others = [i for i, op in enumerate(report.ops) if not op.modeled and i not in listed
              and op.name not in ("aten::index", "aten::index_select_backward")]
    assert len(others) <= sum(w["calls"] for w in first_calls) - len(listed)


def test_analyze_counts_the_packing_from_its_outputs():
    from roofline.analyze.live import analyze_model

    report = analyze_model(PackedLSTM(), _inputs(), device="cpu", ceilings=ROOFS, backward=True, warmup=1, iters=1)
    pack = [op for op in report.ops if op.name == "aten::_pack_padded_sequence"]
    assert len(pack) == 1 and pack[0].modeled and pack[0].bytes == PACK
    assert pack[0].output_shapes == [[N, F], [STEPS]]
    assert report.summary.unmodeled_time_share == 0.0  # was the packing's share, unmodelled
