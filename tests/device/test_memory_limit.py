"""A container's or job's memory cgroup limit caps the memory roofline sizes its buffers and models by."""

from __future__ import annotations

import pytest
import torch

from roofline.device import measure
from roofline.device.memory_limit import cgroup_headroom_bytes
from roofline.errors import RooflineError
from roofline.models import workloads

GIB = 2**30
V1_NO_LIMIT = "9223372036854771712"


def _write(directory, **files):
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name.replace("__", ".")).write_text(text)


def _proc(tmp_path, text):
    path = tmp_path / "cgroup"
    path.write_text(text)
    return path


def test_v2_namespaced_container_reads_the_mount_root(tmp_path):
    mount = tmp_path / "fs"
    _write(mount, memory__max=f"{4 * GIB}\n", memory__current=f"{3 * GIB}\n",
           memory__stat=f"anon 123\ninactive_file {GIB // 2}\nactive_file 7\n")
    assert cgroup_headroom_bytes(_proc(tmp_path, "0::/\n"), mount) == 4 * GIB - (3 * GIB - GIB // 2)


def test_v2_parent_limit_binds_a_child_without_one(tmp_path):
    mount = tmp_path / "fs"
    _write(mount, memory__max="max\n", memory__current="1\n")
    _write(mount / "kubepods" / "pod1", memory__max=f"{8 * GIB}\n", memory__current=f"{GIB}\n")
    _write(mount / "kubepods" / "pod1" / "ctr", memory__max="max\n", memory__current=f"{GIB}\n")
    headroom = cgroup_headroom_bytes(_proc(tmp_path, "0::/kubepods/pod1/ctr\n"), mount)
    assert headroom == 7 * GIB


def test_v1_host_path_missing_inside_container_falls_back_to_root(tmp_path):
    mount = tmp_path / "fs"
    _write(mount / "memory", memory__limit_in_bytes=f"{2 * GIB}\n", memory__usage_in_bytes=f"{GIB}\n",
           memory__stat="cache 5\ntotal_inactive_file 0\n")
    proc = _proc(tmp_path, "12:pids:/docker/abc\n4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n")
    assert cgroup_headroom_bytes(proc, mount) == GIB


def test_the_tightest_level_wins_and_use_past_the_limit_is_zero(tmp_path):
    mount = tmp_path / "fs"
    _write(mount / "memory", memory__limit_in_bytes=V1_NO_LIMIT, memory__usage_in_bytes="1\n")
    _write(mount / "memory" / "job", memory__limit_in_bytes=f"{GIB}\n", memory__usage_in_bytes=f"{2 * GIB}\n")
    _write(mount, memory__max=f"{16 * GIB}\n", memory__current="0\n")
    proc = _proc(tmp_path, "0::/\n5:memory:/job\n")
    assert cgroup_headroom_bytes(proc, mount) == 0


@pytest.mark.parametrize("proc_text", ["0::/\n", "4:memory:/\n", "garbage\n", ""])
def test_no_limit_is_none(tmp_path, proc_text):
    mount = tmp_path / "fs"
    _write(mount, memory__max="max\n", memory__current="5\n")
    _write(mount / "memory", memory__limit_in_bytes=V1_NO_LIMIT, memory__usage_in_bytes="5\n")
    assert cgroup_headroom_bytes(_proc(tmp_path, proc_text), mount) is None


def test_unreadable_files_are_no_limit(tmp_path):
    assert cgroup_headroom_bytes(tmp_path / "missing", tmp_path) is None
    mount = tmp_path / "fs"
    _write(mount, memory__max="not a number\n", memory__current="5\n")
    assert cgroup_headroom_bytes(_proc(tmp_path, "0::/\n"), mount) is None


def test_available_memory_is_capped_by_the_limit(monkeypatch):
    monkeypatch.setattr(measure, "_host_available_bytes", lambda: 20 * GIB)
    monkeypatch.setattr(measure, "cgroup_headroom_bytes", lambda: 3 * GIB)
    assert measure.memory_available() == (3 * GIB, True)
    assert measure.available_memory_bytes() == 3 * GIB
    assert measure.cpu_buffer_budget_bytes() <= 3 * GIB // 8
    monkeypatch.setattr(measure, "cgroup_headroom_bytes", lambda: 40 * GIB)
    assert measure.memory_available() == (20 * GIB, False)
    monkeypatch.setattr(measure, "cgroup_headroom_bytes", lambda: None)
    assert measure.available_memory_bytes() == 20 * GIB


def test_a_model_past_the_limit_is_refused_naming_the_limit(monkeypatch):
    monkeypatch.setattr(measure, "_host_available_bytes", lambda: 200 * GIB)
    monkeypatch.setattr(measure, "cgroup_headroom_bytes", lambda: 2 * GIB)
    with pytest.raises(RooflineError, match=r"more than the 2\.0 GiB left under this process's memory limit"):
        workloads._check_fits("llama-1b", 4 * GIB, torch.device("cpu"))
    workloads._check_fits("llama-tiny", GIB, torch.device("cpu"))
