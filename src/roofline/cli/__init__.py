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

from roofline import quickexit
from roofline.errors import RooflineError
from roofline.io import defer_tree_removals

_NOT_COMMANDS = {"common", "targets"}


class _Parser(argparse.ArgumentParser):
    """Usage mistakes are one line and exit 2, as every other bad input (argparse prints usage on two)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("roofline").strip()
        raise RooflineError(f"{command + ': ' if command else ''}{message} (see `{self.prog} --help`)")

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        """As argparse's, but an option the subcommand does not know points at that subcommand's --help (argparse
        reports it from the top-level parser, which knows none of them)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = getattr(parsed, "command", None)
            prog = f"{self.prog} {command}" if command else self.prog
            raise RooflineError(f"{command + ': ' if command else ''}unrecognized arguments: {' '.join(extras)} "
                                f"(see `{prog} --help`)")
        return parsed


class DefaultsFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the help already states it: a flag's is "off", an
    option left unset "not set"; a required option says it is required."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (action.default is argparse.SUPPRESS or "default" in text.lower() or not action.option_strings
                or text is argparse.SUPPRESS or isinstance(action, (argparse._HelpAction, argparse._VersionAction))):
            return text
        if action.required:
            return f"{text} (required)"
        if action.default is False or action.nargs == 0:
            return f"{text} (default: off)"
        if action.default is None:
            return f"{text} (default: not set)"
        return f"{text} (default: %(default)s)"


class _SubcommandParser(_Parser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="roofline",
        description="Where does my PyTorch model's time go, and how far is each op from the hardware's roof?",
    )
    from roofline import __version__

    parser.add_argument("--version", action="version", version=f"roofline {__version__}")
    parser.add_argument("--verbose", action="store_true",
                        help="let Kineto's log lines and third-party warnings through to stderr (default: kept off)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_SubcommandParser)
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in _NOT_COMMANDS:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    _replace_unencodable_output()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not args.verbose:
            quiet_third_party()
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return int(args.func(args) or 0)
    except RooflineError as exc:
        # one write, the newline included: the ranks of a `profile --nproc` job share one stderr pipe, and a print
        # (the text, then its newline) let two ranks' lines run into one
        sys.stderr.write(f"roofline: error: {exc}\n")
        sys.stderr.flush()
        return exc.exit_code
    except KeyboardInterrupt:
        print("roofline: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader closed the pipe (`roofline doctor --list-rules | head`): stop quietly, as Unix tools do, with
        # stdout pointed at /dev/null so that the interpreter's last flush does not fail too
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _replace_unencodable_output() -> None:
    """On a stdout or stderr that is not UTF-8 (PYTHONIOENCODING=ascii, a Latin-1 locale) a character it cannot
    encode (an ellipsis, 'µs', a box line) is shown as '?' instead of ending the command in UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if encoding and encoding != "utf8" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


def quiet_third_party() -> None:
    """Keep Kineto's log lines (USDT profiler_start/stop; on a CUDA build without a GPU, a device-count error) and
    torch's warnings about its own internals (Python warnings, and c10's C++ log lines such as the CPU allocator's
    "Memory block of unknown size" while profiling) off the user's stderr. Both levels must be set before torch
    loads; Kineto's 6 is above its highest level (USDT, 5)."""
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    # torch's Python loggers (Inductor's "No CUDA runtime is found" when a factory's model is torch.compile'd on a
    # CPU-only machine): torch resets their level when it loads, so only its own variable holds them at ERROR
    os.environ.setdefault("TORCH_LOGS", "-all")
    warnings.filterwarnings("ignore", module=r"torch(\.|$)")
    warnings.filterwarnings("ignore", message=r".*(allocator|profiler|Profiler).*")
    # roofline's own global module hooks make torch warn when the user's model is torch.compile'd; the warning
    # names the caller's line (roofline's), so the torch module filter above does not catch it
    warnings.filterwarnings("ignore", message=r".*when there are global hooks on modules")


def run() -> None:
    """The console entry point: a command that built a big report ends without freeing it (roofline.quickexit)."""
    quickexit.arm()
    defer_tree_removals()
    code = main()
    quickexit.finish(code)
