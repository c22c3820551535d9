"""The one colour per bound, for every view (PNG, HTML; the console uses the nearest named colours): the course's
scheme, red compute-bound, blue memory-bound, gray launch-bound."""

BOUND_COLORS = {"compute": "#d62728", "memory": "#1f77b4", "launch": "#7f7f7f", "communication": "#e377c2",
                "unmodeled": "#bcbd22", "unknown": "#9467bd"}
