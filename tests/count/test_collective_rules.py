"""Collectives' cost (count/collectives.py): no FLOPs, their message as bytes, unmodelled and kept whole (the
analysis classes them communication: tests/analyze/test_collectives_in_op_table.py)."""

from __future__ import annotations

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T


def test_a_collective_costs_its_message_and_is_kept_whole():
    grads = [T((136,), "float32")]
    cost = count_op("c10d::allreduce_", [grads, None, None, None, True, -1])
    assert (cost.modeled, cost.keep_whole, cost.flops, cost.bytes) == (False, True, 0, 544)
    shard, full = T((1024,), "bfloat16"), T((4096,), "bfloat16")
    assert count_op("c10d::_allgather_base_", [full, shard, None]).bytes == 8192  # the gathered output
    assert count_op("c10d::_reduce_scatter_base_", [shard, full, None]).bytes == 8192  # the scattered input
    assert count_op("_c10d_functional::all_gather_into_tensor", [shard, 4, "0"]).bytes == 8192
    assert count_op("c10d::barrier", [T((1,), "uint8"), None]).bytes == 0
