"""One rank of a torchrun job: who it is (from torchrun's environment), where its files go, its metadata.

torchrun sets RANK, WORLD_SIZE and LOCAL_RANK in every worker; a process without them is not a rank. Each rank
writes into ``RUN_DIR/rank{r}/`` so ranks never write the same file, and the merge finds them by that name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline.errors import RooflineError

RANK_DIR = re.compile(r"^rank(\d+)$")

# NVLink multicast (NVLS) stays off in every process we start: the lent GPU machines forbid it, and a job that
# does not use it loses only the last few percent of all-reduce bandwidth. ROOFLINE_ALLOW_NVLS=1 leaves it alone.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


@dataclass(frozen=True)
class RankInfo:
    rank: int
    world_size: int
    local_rank: int


def current_rank(environ: dict[str, str] | None = None) -> RankInfo | None:
    """This process's rank in a torchrun job, or None outside one."""
    env = os.environ if environ is None else environ
    if "RANK" not in env or "WORLD_SIZE" not in env:
        return None
    try:
        rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
        local = int(env.get("LOCAL_RANK", rank))
    except ValueError:
        return None
    return RankInfo(rank, world, local)


def multicast_off_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment with NVLink multicast switched off (unless ROOFLINE_ALLOW_NVLS=1)."""
    env = dict(os.environ if environ is None else environ)
    if env.get("ROOFLINE_ALLOW_NVLS", "") != "1":
        env.update(MULTICAST_OFF)
    return env


def rank_dir(run_dir: str | os.PathLike[str], rank: int) -> Path:
    return Path(run_dir) / f"rank{rank}"


def find_rank_dirs(run_dir: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """``(rank, RUN_DIR/rank{r})`` for every rank directory holding a report.json, by rank."""
    root = Path(run_dir)
    if not root.is_dir():
        raise RooflineError(f"run directory not found: {root}")
    found = []
    for child in root.iterdir():
        match = RANK_DIR.match(child.name)
        if match and child.is_dir() and (child / "report.json").is_file():
            found.append((int(match.group(1)), child))
    return sorted(found)


def prepare_rank(args: Any, info: RankInfo | None = None) -> RankInfo | None:
    """Inside a torchrun job: point ``args.output`` at RUN_DIR/rank{r} and this rank at its own GPU.

    A rank that profiled on cuda:0 beside rank 0 would share its GPU, so a plain ``cuda`` (or no device) becomes
    ``cuda:LOCAL_RANK``, made current before the user's script runs. Outside a job nothing changes.
    """
    info = info or current_rank()
    if info is None:
        return None
    args.output = str(rank_dir(args.output, info.rank))
    import torch

    if torch.cuda.is_available() and getattr(args, "device", None) in (None, "cuda"):
        index = info.local_rank % max(torch.cuda.device_count(), 1)
        args.device = f"cuda:{index}"
        torch.cuda.set_device(index)
    return info


def backend_in_use() -> str | None:
    """The default process group's backend, if the job has initialised one."""
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return str(dist.get_backend())
    except (RuntimeError, ValueError):
        return None
    return None


def stamp_rank(report: Any, info: RankInfo | None = None) -> None:
    """Write rank, world size and backend into the report's Environment (no-op outside a job)."""
    info = info or current_rank()
    if info is None:
        return
    env = report.environment
    env.rank, env.world_size = info.rank, info.world_size
    env.backend = backend_in_use() or env.backend
    report.extra["rank"] = {"rank": info.rank, "world_size": info.world_size, "local_rank": info.local_rank,
                            "backend": env.backend}
