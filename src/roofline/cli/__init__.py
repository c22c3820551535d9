"""The `roofline` command line: one module per subcommand in this package, each a thin call into the layers.

A subcommand module defines ``register(subparsers)``, which adds its parser and sets ``func`` to a callable
taking the parsed namespace and returning an exit code. Adding a command is adding a module.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import warnings

from roofline.errors import RooflineError

_NOT_COMMANDS = {"common", "targets"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roofline",
        description="Where does my PyTorch model's time go, and how far is each op from the hardware's roof?",
    )
    from roofline import __version__

    parser.add_argument("--version", action="version", version=f"roofline {__version__}")
    parser.add_argument("--verbose", action="store_true",
                        help="let Kineto's log lines and third-party warnings through to stderr (default: kept off)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in _NOT_COMMANDS:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.verbose:
        quiet_third_party()
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except RooflineError as exc:
        print(f"roofline: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("roofline: interrupted", file=sys.stderr)
        return 130


def quiet_third_party() -> None:
    """Keep Kineto's log lines (USDT profiler_start/stop; on a CUDA build without a GPU, a device-count error) and
    torch's warnings about its own internals off the user's stderr. The Kineto level must be set before torch
    loads Kineto; 6 is above its highest level (USDT, 5)."""
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    warnings.filterwarnings("ignore", module=r"torch(\.|$)")
    warnings.filterwarnings("ignore", message=r".*(allocator|profiler|Profiler).*")


def run() -> None:
    sys.exit(main())
