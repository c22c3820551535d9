"""Scripts under benchmarks/ loaded as modules (they are scripts, not a package), for tests that share their cases."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    if str(BENCHMARKS) not in sys.path:  # its sibling imports resolve as when it runs (last: never shadows)
        sys.path.append(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
