import torch

from roofline.capture.op_recorder import record_ops
from roofline.capture.traffic import count_traffic


def _work():
    a = torch.randn(32, 64)
    b = torch.randn(64, 16)
    for _ in range(3):
        c = a @ b
        c = torch.relu(c) + 1
    return c.sum()


def test_traffic_counter_sums_what_the_full_recorder_counts():
    recording = record_ops(_work)
    counter = count_traffic(_work)
    modeled = [op for op in recording.ops if op.cost.modeled]
    assert counter.ops == len(recording.ops)
    assert counter.bytes == sum(op.cost.bytes for op in modeled)
    assert counter.flops == sum(op.cost.flops for op in modeled)
    assert counter.flops >= 3 * 2 * 32 * 64 * 16


def test_traffic_counter_costs_a_repeated_signature_once_but_counts_every_call():
    counter = count_traffic(_work)
    assert len(counter._costs) < counter.ops
    single = count_traffic(lambda: torch.randn(32, 64) @ torch.randn(64, 16))
    assert single.bytes > 0 and single.ops >= 3
