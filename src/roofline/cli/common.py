"""Options shared by several subcommands, typed once."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

DTYPE_CHOICES = ("float32", "float16", "bfloat16", "fp32", "fp16", "bf16")


def add_device_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--device", default=None, help="cpu, cuda or cuda:N (default: cuda when present, else cpu)"
    )


def add_workload_options(parser: argparse.ArgumentParser) -> None:
    """--batch/--seq/--dtype/--device/--backward, as `analyze`, `profile` and `doctor` take them."""
    parser.add_argument("--batch", type=int, default=None, help="batch size (default: per workload)")
    parser.add_argument("--seq", type=int, default=None, help="sequence length or matrix size (default: per workload)")
    parser.add_argument("--dtype", default="float32", choices=DTYPE_CHOICES, help="model dtype (default float32)")
    add_device_option(parser)
    parser.add_argument("--backward", action="store_true", help="also run and measure the backward pass")


def add_output_option(parser: argparse.ArgumentParser, default: str | None = "roofline-out") -> None:
    parser.add_argument("-o", "--output", default=default, help=f"output directory (default: {default})")


def normalize_dtype(name: str) -> str:
    return {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}.get(name, name)


def add_ceilings_option(parser: argparse.ArgumentParser) -> None:
    """--ceilings FILE, the same for every command that places ops on a roofline."""
    parser.add_argument(
        "--ceilings", metavar="FILE", default=None,
        help="ceilings JSON (from `roofline ceilings --json FILE`) to measure against (default: this machine's "
             "cached ceilings, measured once on first use and shared by every command)",
    )


@contextlib.contextmanager
def progress_reporter(first: str) -> Iterator[Callable[[str], None]]:
    """A progress callback: a spinner showing `first` on a terminal; elsewhere (a log) one timestamped line on stderr
    per step reported, and nothing when no step is (a cache hit stays quiet)."""
    if sys.stderr.isatty():
        from rich.console import Console

        with Console(stderr=True).status(first) as status:
            yield status.update
        return
    began = time.perf_counter()

    def line(message: str) -> None:
        print(f"roofline: [{time.perf_counter() - began:5.1f}s] {message}", file=sys.stderr, flush=True)

    yield line


def run_ceilings(device: Any, ceilings_file: str | None) -> Any:
    """The Ceilings a run on `device` measures against (device/ceilings.py: ceilings_for_run), showing the
    measurement's progress when the cache has none yet."""
    from roofline.device.ceilings import ceilings_for_run

    if ceilings_file:
        return ceilings_for_run(device, ceilings_file)
    with progress_reporter("ceilings: reading the cache (measured once on first use)") as progress:
        return ceilings_for_run(device, progress=lambda m: progress(f"ceilings: {m}"))
