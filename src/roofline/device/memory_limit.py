"""The memory a container or job scheduler still lets this process take: its memory cgroup's limit less its use.

/proc/meminfo speaks for the whole host: in a Docker container or a Kubernetes pod limited to 4 GB on a 256 GB
machine, MemAvailable says ~250 GB, and a buffer or model sized by it is killed by the kernel's OOM killer with no
message. The cgroup's own files say what is left. Both hierarchies are read: cgroup v2 (one unified tree,
``memory.max`` / ``memory.current``) and v1 (``memory/memory.limit_in_bytes`` / ``memory.usage_in_bytes``). Every
level from the process's cgroup up to the mount's root counts, since a parent's limit binds its children; a
container that sees the host's path (``/docker/ID``) but has its own cgroup mounted at the root is read at the root.
Inactive file cache is counted as free: the kernel reclaims it before it kills anything.
"""

from __future__ import annotations

from pathlib import Path

PROC_CGROUP = Path("/proc/self/cgroup")
CGROUP_MOUNT = Path("/sys/fs/cgroup")

# cgroup v1 writes "no limit" as the largest page-aligned signed 64-bit number; anything past an exabyte is no limit
_NO_LIMIT_FROM = 1 << 60

_V2 = ("memory.max", "memory.current", "inactive_file")
_V1 = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")


def cgroup_headroom_bytes(proc_cgroup: Path = PROC_CGROUP, mount: Path = CGROUP_MOUNT) -> int | None:
    """Bytes the tightest memory cgroup limit over this process still allows, or None where no level sets one
    (or the files cannot be read: not Linux, no cgroup mounted)."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    headrooms = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and controllers == "":
            headrooms += _headrooms(mount, path, _V2)
        elif "memory" in controllers.split(","):
            headrooms += _headrooms(mount / "memory", path, _V1)
    return min(headrooms) if headrooms else None


def _headrooms(root: Path, path: str, files: tuple[str, str, str]) -> list[int]:
    """Limit less unreclaimable use at each level of ``path`` under ``root`` that sets a limit."""
    found = []
    for level in _levels(root, path):
        limit = _read_int(level / files[0])
        if limit is None or limit >= _NO_LIMIT_FROM:
            continue
        used = _read_int(level / files[1])
        if used is None:
            continue
        reclaimable = _stat(level / "memory.stat", files[2])
        found.append(max(0, limit - max(0, used - reclaimable)))
    return found


def _levels(root: Path, path: str) -> list[Path]:
    """The cgroup directories from the process's own up to the root, those that exist (the root always counts)."""
    levels = []
    parts = [p for p in path.strip().split("/") if p and p not in (".", "..")]
    while parts:
        level = root.joinpath(*parts)
        if level.is_dir():
            levels.append(level)
        parts.pop()
    levels.append(root)
    return levels


def _read_int(path: Path) -> int | None:
    """The file's number; "max" (cgroup v2's no limit) and anything unreadable are None."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _stat(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except OSError:
        pass
    return 0
