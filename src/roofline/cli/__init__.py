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

from roofline.errors import RooflineError

_NOT_COMMANDS = {"common", "targets"}


class _Parser(argparse.ArgumentParser):
    """Usage mistakes are one line and exit 2, as every other bad input (argparse prints usage on two)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("roofline").strip()
        raise RooflineError(f"{command + ': ' if command else ''}{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="roofline",
        description="Where does my PyTorch model's time go, and how far is each op from the hardware's roof?",
    )
    from roofline import __version__

    parser.add_argument("--version", action="version", version=f"roofline {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in _NOT_COMMANDS:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Kineto logs profiler start/stop and, on a CUDA build without a GPU, a device-count error to stderr;
    # none of it is for the user. Must be set before torch loads Kineto.
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return int(args.func(args) or 0)
    except RooflineError as exc:
        print(f"roofline: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("roofline: interrupted", file=sys.stderr)
        return 130


def run() -> None:
    sys.exit(main())
