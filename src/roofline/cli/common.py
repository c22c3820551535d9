"""Options shared by several subcommands, typed once."""

from __future__ import annotations

import argparse

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
