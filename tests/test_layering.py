"""The layering of docs/DESIGN.md, as the import-linter contracts in pyproject.toml ([tool.importlinter])."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    # lint-imports lies beside this interpreter; it reads the source of this checkout, not an installed copy.
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([str(lint), "--no-cache", "--config", str(REPO / "pyproject.toml")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
