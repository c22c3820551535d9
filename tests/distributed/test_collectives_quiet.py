"""`roofline ceilings --collectives` keeps torch's deprecation warning and torchrun's OMP_NUM_THREADS banner off the
user's stderr: the ranks call the current collective names, and the job is given its thread count."""

from __future__ import annotations

import json
import socket
import warnings

import pytest
import torch
import torch.distributed as dist

from roofline.distributed import collectives


@pytest.fixture
def gloo_world_of_one(monkeypatch):
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("MASTER_PORT", str(port))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_each_collective_is_timed_without_a_deprecation_warning(gloo_world_of_one):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        times = [collectives._time_one(dist, torch, kind, 4096, 1, torch.device("cpu"), 2) for kind in collectives.KINDS]
    assert all(t is not None and t > 0 for t in times)
    assert [str(w.message) for w in caught if issubclass(w.category, FutureWarning)] == []


def test_the_job_is_told_its_thread_count(monkeypatch, tmp_path):
    seen = {}

    def fake_torchrun(nproc, words, *, module, timeout_s, env):
        seen.update(env)
        out = words[words.index("--out") + 1]
        with open(out, "w") as f:
            json.dump({"backend": "gloo", "world_size": nproc, "device_name": "test cpu", "results": {}}, f)
        return 0

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr("roofline.distributed.launch.run_torchrun", fake_torchrun)
    monkeypatch.setattr(collectives, "cache_file", lambda *a: tmp_path / "collectives.json")
    collectives.measure_collectives(device="cpu")
    assert seen["OMP_NUM_THREADS"] == "1"
