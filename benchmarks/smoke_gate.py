"""The `--require SMOKE.json -- COMMAND...` gate the GPU smoke scripts share: run COMMAND only if the smoke result
passed, so a suite's later stages never run a kernel whose smoke test failed (a fault there would break every
measurement after it in the same process)."""

from __future__ import annotations

import subprocess
import sys
from typing import Callable


def run_gated(argv: list[str], refused: Callable[[str], str | None], script: str) -> int | None:
    """The gate's exit code when ``argv`` is a `--require` call (COMMAND's own, 0 with a "not run" line when
    ``refused`` gives a reason, 2 for a malformed call); None when it is not one."""
    if argv[:1] != ["--require"]:
        return None
    if len(argv) < 4 or argv[2] != "--":
        print(f"{script}: error: --require JSON -- COMMAND...", file=sys.stderr)
        return 2
    why = refused(argv[1])
    if why:
        print(f"not run: {why}: {' '.join(argv[3:])}")
        return 0
    return subprocess.run(argv[3:]).returncode
