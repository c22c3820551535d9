"""The case study's extension studies (`roofline lab --study NAME`): one module per study, found by name.

Each module has ``run(options: StudyOptions, out_dir: Path, progress: Progress) -> StudyResult``: it measures,
writes its files (json, md, png) under ``out_dir`` atomically and returns what it wrote and a short table for the
terminal. Modules are imported only when their study runs (a CUDA-only dependency never loads for another).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from roofline.errors import RooflineError

Progress = Callable[[str], None]

# name -> module (under roofline.lab.studies) with the study's run().
STUDIES: dict[str, str] = {
    "attention": "attention",
    "fp8": "fp8",
    "batching": "batching",
}


@dataclass
class StudyOptions:
    """What `roofline lab` passes to a study; a study ignores what it does not use and says so in its notes."""

    model: str = "llama-tiny"
    device: str = "cpu"
    dtype: str | None = None
    quick: bool = False
    data: str | None = None
    ceilings: str | None = None
    budget_s: float | None = None
    graphs: bool = True  # batching: CUDA-graphed decode steps on CUDA (False: eager, --no-graphs)


@dataclass
class StudyResult:
    study: str
    table: str
    files: list[Path] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)


def run_study(name: str, options: StudyOptions, out_dir: Path, progress: Progress = lambda _: None) -> StudyResult:
    if name not in STUDIES:
        raise RooflineError(f"unknown study {name!r}; choose one of: {', '.join(STUDIES)}")
    try:
        module = importlib.import_module(f"{__name__}.{STUDIES[name]}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{STUDIES[name]}":
            raise
        raise RooflineError(f"study {name!r} is not built in this version of roofline") from None
    return module.run(options, Path(out_dir), progress)


__all__ = ["STUDIES", "Progress", "StudyOptions", "StudyResult", "run_study"]
