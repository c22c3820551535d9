"""roofline: where a PyTorch model's time goes, and how far each op is from the hardware's limit.

    from roofline import RooflineAnalyzer
    report = RooflineAnalyzer(device="cuda").analyze(model, inputs)
    report.save("report.json")

Names are imported lazily so that `import roofline` stays cheap.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "RooflineAnalyzer": "roofline.api",
    "count_flops_per_op": "roofline.api",
    "measure_memory_traffic": "roofline.api",
    "plot_roofline": "roofline.api",
    "measure_peak_bandwidth": "roofline.device",
    "measure_peak_flops": "roofline.device",
    "measure_launch_overhead": "roofline.device",
    "get_ceilings": "roofline.device",
    "Report": "roofline.report",
    "Ceilings": "roofline.report",
    "Finding": "roofline.report",
    "RooflineError": "roofline.errors",
    "ProfilingContext": "roofline.api",
    "MemoryTracker": "roofline.capture.memory",
    "SyncDetector": "roofline.capture.syncs",
    "SyncWarning": "roofline.capture.syncs",
    "ProfileReport": "roofline.render.profile_report",
    "diagnose": "roofline.doctor",
    "load_trace": "roofline.capture.kineto",
    "predict_report": "roofline.analyze.whatif",
    "learn_table": "roofline.analyze.efficiency",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext roofline``: Reports display as their HTML page."""
    from roofline.notebook import register

    register(ipython)


if "IPython" in sys.modules:  # in a notebook: Reports display as HTML (roofline.notebook)
    from roofline.notebook import register as _register_display

    _register_display()


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'roofline' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
