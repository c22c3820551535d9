"""``predict_report``: a measured report projected to another batch, sequence length, dtype or device (the API
behind ``roofline predict``). Checks the request, finds the target's ceilings and this machine's host costs, and
calls analyze/predict.py."""

from __future__ import annotations

from roofline.analyze.efficiency import EfficiencyTable, device_class, load_table
from roofline.analyze.predict import DEFAULT_HOST_MODEL, predict
from roofline.analyze.project import FLOATS, Change, model_dtype
from roofline.count.meta import canonical_dtype
from roofline.errors import RooflineError
from roofline.report import Ceilings, HostCosts, Prediction, Report


def predict_report(report: Report, *, batch: int | None = None, seq: int | None = None, dtype: str | None = None,
                   ceilings: Ceilings | None = None, from_batch: int | None = None, from_seq: int | None = None,
                   table: EfficiencyTable | None = None, host_costs: HostCosts | None = None,
                   host_model: str = DEFAULT_HOST_MODEL, host_speed: float | None = None) -> Prediction:
    """The predicted step of ``report`` with the given changes (None: as measured). The report's own batch and
    sequence length come from ``extra["batch"]``/``extra["seq"]`` unless ``from_batch``/``from_seq`` say.
    ``host_speed``: a factor on the host's time per op (``analyze.predict.host_speed_factor``)."""
    if not report.ops:
        raise RooflineError("the report has no ops to predict from")
    change = Change(
        batch=_pair("batch", from_batch or report.extra.get("batch"), batch),
        seq=_pair("seq", from_seq or report.extra.get("seq"), seq, keep_known=batch is not None),
        dtype=_dtype_pair(report, dtype),
    )
    if change.batch and change.seq and change.batch[0] == change.seq[0] and not change.is_identity():
        raise RooflineError(f"the report's batch and sequence length are both {change.batch[0]}: their dimensions "
                            "cannot be told apart in the recorded shapes")
    if ceilings is not None and not ceilings.has_roofs():
        raise RooflineError("the target ceilings have no roofs (a memory bandwidth and a FLOP/s figure)")
    if not report.ceilings.has_roofs():
        raise RooflineError("the report's ceilings have no roofs: its ops cannot be placed, so nothing to project")
    target = ceilings or report.ceilings
    return predict(report, table=table or load_table(), host_costs=host_costs or host_costs_for(target),
                   ceilings=ceilings, change=change, host_model=host_model, host_speed=host_speed)


def _pair(label: str, old, new: int | None, keep_known: bool = False) -> tuple[int, int] | None:
    if new is None:
        # The old value still matters to a batch change: batch x seq is how flattened tokens are recognised.
        return (int(old), int(old)) if keep_known and isinstance(old, int) and old > 0 else None
    if new < 1:
        raise RooflineError(f"--{label} must be at least 1, got {new}")
    if not isinstance(old, int) or isinstance(old, bool) or old < 1:
        raise RooflineError(f"the report does not record its {label}; give --from-{label} N (the {label} it was "
                            f"measured with; from_{label}=N in predict_report)")
    return (old, new)


def _dtype_pair(report: Report, dtype: str | None) -> tuple[str, str] | None:
    if dtype is None:
        return None
    new = canonical_dtype(dtype)
    if new not in FLOATS:
        raise RooflineError(f"--dtype {dtype!r}: use float32, float16 or bfloat16")
    return (model_dtype(report.ops), new)


def host_costs_for(ceilings: Ceilings) -> HostCosts:
    """This machine's measured host costs for the target's device class when this machine has one; else the
    measured launch overhead the ceilings carry as every op's dispatch (no Python or module figures)."""
    cls = device_class(ceilings)
    try:
        import torch

        if cls == "cpu" or torch.cuda.is_available():
            from roofline.analyze.host_costs import get_host_costs

            return get_host_costs("cuda" if cls == "cuda" else "cpu")
    except ImportError:
        pass
    launch = ceilings.launch_overhead_s or 5e-6
    return HostCosts(device=cls, device_name=ceilings.device_name, dispatch_s={"*": launch},
                     backward_per_op_s=launch,
                     method="no such device on this machine: the ceilings' launch overhead as each op's dispatch")
