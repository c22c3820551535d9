"""Built-in workloads: ``get_workload(name, ...)`` -> a model, its inputs and what runs."""

from roofline.models.workloads import Workload, get_workload, list_workloads, parse_dtype

__all__ = ["Workload", "get_workload", "list_workloads", "parse_dtype"]
