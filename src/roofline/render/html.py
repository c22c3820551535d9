"""One self-contained HTML page for a Report: data, CSS and a small hand-written JS inlined, no network.

The page is built from ``assets/report.css`` and ``assets/report.js`` (no third-party code) and a JSON payload
in a ``<script type="application/json">`` block. Every ``<``, ``>`` and ``&`` in that JSON is written as a
``\\u00XX`` escape, so no string from the user's model (op names, module paths, source lines) can close the
script element; the JS inserts every such string with ``textContent``, never as markup. A Content-Security-Policy
meta tag forbids every network fetch (``default-src 'none'``), so the page works offline and cannot leak.

What this module does beyond formatting is aggregation for display only:
- chart points group op calls by (name, module, input shapes, dtype, phase); beyond ``MAX_POINTS`` groups the
  smallest by time are merged into bins of (dtype, bound, log-intensity, log-performance) so a 100,000-op report
  stays responsive; a group's intensity is its summed FLOPs over summed bytes, its efficiency the time-weighted
  mean of its calls';
- the op table is sent column-wise with interned strings and paginated in the browser.
The module tree is the Summary's (``Summary.module_tree``, built with the Summary), sent as it is.

Multi-rank reports (``Report.ranks``, RankRecords filled by the distributed merge, issue 8) render as a
side-by-side table and stacked bars. Known per-rank keys: ``rank``, ``step_time_s``, ``compute_time_s``,
``communication_time_s``, ``idle_time_s``, ``exposed_communication_s``, ``hidden_communication_share``,
``straggler`` (bool), ``slowest_op``, ``hostname``, ``device_name``. Any other scalar key is shown as a column.
"""

from __future__ import annotations

import heapq
import html as _html
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Iterator
from importlib import resources
from operator import attrgetter
from typing import Any

import msgspec

from roofline.analyze.communication import message_unrecorded
from roofline.render.colors import BOUND_COLORS
from roofline.report import OpRecord, Report, finite_for_json

_INFS = (float("inf"), float("-inf"))
_INT_COLUMNS = {"index", "name", "module", "phase", "dtype", "shapes", "source", "bound", "above_roof", "count", "roof",
                "no_size"}
# Codes into the interned strings and 0/1 flags (ints by construction): a few distinct values, each written once.
_CODE_COLUMNS = _INT_COLUMNS - {"index", "count"}

MAX_POINTS = 2500
BIN_STEPS_PER_DECADE = 8

CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
    "connect-src 'none'; font-src 'none'; form-action 'none'; base-uri 'none'"
)


def render_html(report: Report, embed: bool = False) -> str:
    """The report as one HTML document; ``embed=True`` wraps it in an iframe ``srcdoc`` for a Jupyter cell,
    so its ids, CSS and scripts cannot collide with the notebook's."""
    page = "".join(html_chunks(report))
    return embed_in_iframe(page) if embed else page


def html_chunks(report: Report, prepared: dict[str, Any] | None = None) -> Iterator[str]:
    """``render_html(report)`` in pieces, for writing a large report's page without building it whole;
    ``prepared``: ``ops_parts(report.ops)``, built earlier."""
    return page_chunks(report_payload(report, prepared), title=f"roofline · {report.workload or report.kind}")


def embed_in_iframe(page: str, height_px: int = 900) -> str:
    return (
        f'<iframe srcdoc="{_html.escape(page, quote=True)}" '
        f'style="width:100%;height:{height_px}px;border:1px solid #d0d7de;border-radius:6px" '
        'title="roofline report"></iframe>'
    )


def page_html(payload: dict[str, Any], title: str, script: str = "report.js") -> str:
    return "".join(page_chunks(payload, title, script))


def page_chunks(payload: dict[str, Any], title: str, script: str = "report.js") -> Iterator[str]:
    css = _asset("report.css")
    js = _asset("common.js").replace("__BOUND_COLORS__", json.dumps(BOUND_COLORS)) + "\n" + _asset(script)
    yield (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_html.escape(title)}</title><style>{css}</style></head>"
        '<body><div id="app"><p class="loading">Loading report…</p></div>'
        '<script type="application/json" id="roofline-data">'
    )
    yield from safe_json_chunks(payload)
    yield f"</script><script>{js}</script></body></html>\n"


def safe_json(payload: Any) -> str:
    """JSON that cannot end a <script> element or open a comment, whatever strings it carries.

    Top-level ``_RawColumns`` values (the op table) are spliced in as already-serialised numeric JSON."""
    return "".join(safe_json_chunks(payload))


def safe_json_chunks(payload: Any) -> Iterator[str]:
    """``safe_json`` in pieces: each spliced column on its own (the op table of a 100,000-op report is ~10 MB;
    joining and escaping it copied it several times over)."""
    raw = {}
    if isinstance(payload, dict):
        raw = {k: v for k, v in payload.items() if isinstance(v, _RawColumns)}
        payload = {k: finite_for_json(v) for k, v in payload.items() if k not in raw}
    else:
        payload = finite_for_json(payload)
    text = json.dumps(payload, allow_nan=False, separators=(",", ":"), default=_default)
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    if not raw:
        yield text
        return
    # Numbers and quoted column names only: nothing in them to escape.
    for i, (k, v) in enumerate(raw.items()):
        yield ("{" if i == 0 else ",") + json.dumps(k) + ":"
        yield from v.parts()
    yield ("," if text != "{}" else "") + text[1:]


class _IntTexts(dict):
    """str() of each int, made once per distinct value (an int and an equal float would share one: ints only)."""

    def __missing__(self, value: int) -> str:
        text = self[value] = str(value)
        return text


class _RawColumns:
    """Numeric columns serialised once with 5 significant digits (the table shows 3), instead of round + repr."""

    def __init__(self, columns: dict[str, list] | Iterable[tuple[str, list]]) -> None:
        self._parts = []
        for name, values in columns.items() if isinstance(columns, dict) else columns:
            if name in _CODE_COLUMNS:
                body = ",".join(map(_IntTexts().__getitem__, values))
            elif name in _INT_COLUMNS:
                body = ",".join(map(str, values))
            elif all(map(math.isfinite, values)):
                body = ",".join(map("%.5g".__mod__, values))
            else:
                body = ",".join(["%.5g" % v if v == v and v not in _INFS else "0" for v in values])
            self._parts.append(f"{json.dumps(name)}:[{body}]")

    def parts(self) -> Iterator[str]:
        """The JSON object, a column at a time."""
        if not self._parts:
            yield "{}"
            return
        for i, part in enumerate(self._parts):
            yield ("{" if i == 0 else ",") + part
        yield "}"

    @property
    def json(self) -> str:
        return "".join(self.parts())


def ops_parts(report_ops: list[OpRecord]) -> dict[str, Any]:
    """The payload's parts made from a report's ops, placed (analyze/roofline.py) and final: the op table (its
    strings interned), the chart, the top ops. They need no findings, so a command can build them while the doctor
    runs elsewhere, or before the report around them is complete."""
    names = _Interner()
    ops = sorted(report_ops, key=lambda op: op.index)
    return {"n_ops": len(ops), "table": _op_columns(ops, names), "chart": chart_points(ops),
            "top_predicted": _top_predicted(ops), "strings": names.values}


def report_payload(report: Report, prepared: dict[str, Any] | None = None) -> dict[str, Any]:
    parts = prepared if prepared is not None else ops_parts(report.ops)
    summary = msgspec.to_builtins(report.summary)
    return {
        "kind": "report",
        "meta": {
            "workload": report.workload,
            "kind": report.kind,
            "schema_version": report.schema_version,
            "steps": report.steps,
            "n_ops": parts["n_ops"],
            "n_kernels": len(report.kernels),
        },
        "environment": msgspec.to_builtins(report.environment),
        "ceilings": msgspec.to_builtins(report.ceilings),
        "ceilings_by_device": [{"device": d, "ceilings": msgspec.to_builtins(c)}
                               for d, c in report.ceilings_by_device().items()],
        "summary": summary,
        "step_time": _timing(report.step_time),
        "profiled_step_time": _timing(report.profiled_step_time),
        "findings": [
            msgspec.to_builtins(f) for f in sorted(report.findings, key=lambda f: -f.estimated_savings_s)
        ],
        "syncs": [msgspec.to_builtins(s) for s in sorted(report.syncs, key=lambda s: -s.stall_s)],
        "memory": msgspec.to_builtins(report.memory),
        "ranks": [_scalar_dict(msgspec.structs.asdict(r)) for r in report.ranks],
        "table": parts["table"],
        "chart": parts["chart"],
        "modules": summary.pop("module_tree", None),
        "top_predicted": parts["top_predicted"],
        "strings": parts["strings"],
        "ncu": _ncu_payload(report),
    }


def _ncu_payload(report: Report) -> dict[str, Any] | None:
    """The memory-access section: report.ncu as the analysis set it, and its two charts as PNG data URIs (the
    hierarchical roofline and the per-level bytes), drawn by the PNG renderers."""
    if report.ncu is None:
        return None
    import base64

    import msgspec

    from roofline.render.memory_png import render_memory_png
    from roofline.render.png import render_png

    def uri(data: bytes) -> str:
        return "data:image/png;base64," + base64.b64encode(data).decode()

    payload = finite_for_json(msgspec.to_builtins(report.ncu))
    payload["images"] = {"roofline": uri(render_png(report)), "memory": uri(render_memory_png(report))}
    return payload


def _timing(timing) -> dict[str, Any] | None:
    if timing is None:
        return None
    data = msgspec.to_builtins(timing)
    data["samples_s"] = data["samples_s"][:200]
    return data


def _scalar_dict(row: dict[str, Any]) -> dict[str, Any]:
    return {str(k): v for k, v in row.items() if isinstance(v, (str, int, float, bool)) or v is None}


class _Interner:
    def __init__(self) -> None:
        self.values: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str | None) -> int:
        text = text or ""
        idx = self._index.get(text)
        if idx is None:
            idx = self._index[text] = len(self.values)
            self.values.append(text)
        return idx


_SHAPES_CACHE: dict[tuple, str] = {}


def format_shapes(shapes: list[list[int]]) -> str:
    key = tuple(map(tuple, shapes))
    text = _SHAPES_CACHE.get(key)
    if text is None:
        text = " × ".join("[" + ",".join(str(d) for d in shape) + "]" for shape in shapes) if shapes else ""
        if len(_SHAPES_CACHE) < 100_000:
            _SHAPES_CACHE[key] = text
    return text


def _op_columns(ops: list[OpRecord], names: _Interner) -> _RawColumns:
    """The op table column-wise. An op's strings are interned once per distinct combination (a big report repeats
    each op of its step), in the same first-seen order as op by op; shapes once per shared shape list. Each column
    is serialised before the next is made: all of them at once as lists of floats were 30 MB of a 127,620-op
    report's peak (issue 23)."""
    return _RawColumns(_columns(ops, names)) if ops else _RawColumns({})


def _columns(ops: list[OpRecord], names: _Interner) -> Iterator[tuple[str, list]]:
    rows: dict[tuple, tuple[int, ...]] = {}
    shape_codes: dict[int, int] = {}
    coded = []
    shapes = []
    for op in ops:
        key = (op.name, op.module, op.phase, op.dtype, op.source, op.bound, op.roof)
        row = rows.get(key)
        if row is None:
            row = rows[key] = (names(op.name), names(op.module), names(op.phase), names(op.dtype))
            shapes.append(names(format_shapes(op.input_shapes)))
            row = rows[key] = (*row, names(op.source), names(op.bound), names(op.roof))
        else:
            code = shape_codes.get(id(op.input_shapes))
            if code is None:
                code = shape_codes[id(op.input_shapes)] = names(format_shapes(op.input_shapes))
            shapes.append(code)
        coded.append(row)
    del rows, shape_codes

    def strings(position: int) -> list[int]:
        return [row[position] for row in coded]

    yield "index", [op.index for op in ops]
    for position, column in enumerate(("name", "module", "phase", "dtype")):
        yield column, strings(position)
    yield "shapes", shapes
    yield "source", strings(4)
    yield "bound", strings(5)
    yield "time_s", [op.time_s for op in ops]
    yield "flops", [op.flops for op in ops]
    yield "bytes", [op.bytes for op in ops]
    yield "intensity", [op.arithmetic_intensity for op in ops]
    yield "flops_per_s", [op.achieved_flops_per_s for op in ops]
    yield "bytes_per_s", [op.achieved_bytes_per_s for op in ops]
    yield "efficiency", [op.efficiency for op in ops]
    yield "predicted_s", [op.predicted_time_s for op in ops]
    yield "above_roof", [1 if op.above_roof else 0 for op in ops]
    yield "count", [op.count for op in ops]
    yield "roof", strings(6)
    unsized = [1 if message_unrecorded(op) else 0 for op in ops]
    if any(unsized):
        yield "no_size", unsized
    if any(op.measured is not None for op in ops):
        yield "dram_bytes", [op.measured.dram_bytes if op.measured is not None else 0.0 for op in ops]
        yield "excess", [(op.measured.excess_ratio or 0.0) if op.measured is not None else 0.0 for op in ops]


def chart_points(ops: list[OpRecord]) -> dict[str, Any]:
    """Points for the roofline: grouped op calls, with the smallest groups binned past MAX_POINTS."""
    groups: dict[tuple, dict[str, Any]] = {}
    not_plotted_time = 0.0
    not_plotted_n = 0
    shape_texts: dict[int, str] = {}  # by the (shared) shape list's identity, while ``ops`` holds them
    for op in ops:
        if op.flops <= 0 or op.bytes <= 0 or op.time_s <= 0:
            not_plotted_time += op.time_s
            not_plotted_n += 1
            continue
        shapes = shape_texts.get(id(op.input_shapes))
        if shapes is None:
            shapes = shape_texts[id(op.input_shapes)] = format_shapes(op.input_shapes)
        key = (op.name, op.module, shapes, op.dtype, op.phase)
        g = groups.get(key)
        if g is None:
            g = groups[key] = {
                "name": op.name, "module": op.module, "shapes": key[2], "dtype": op.dtype, "phase": op.phase,
                "source": op.source or "", "time_s": 0.0, "flops": 0.0, "bytes": 0.0, "predicted_s": 0.0,
                "n": 0, "_eff": 0.0, "_bound": defaultdict(float), "above_roof": False, "roof": op.roof,
            }
        g["time_s"] += op.time_s
        g["flops"] += op.flops
        g["bytes"] += op.bytes
        g["predicted_s"] += op.predicted_time_s
        g["n"] += op.count
        g["_eff"] += op.efficiency * op.time_s
        g["_bound"][op.bound] += op.time_s
        g["above_roof"] = g["above_roof"] or op.above_roof
        if op.roof != "dram":
            g["roof"] = op.roof
    points = [_finish_group(g) for g in groups.values()]
    points.sort(key=lambda p: -p["time_s"])
    shown, rest = points[:MAX_POINTS], points[MAX_POINTS:]
    return {
        "points": shown,
        "bins": _bins(rest),
        "not_plotted": {"n": not_plotted_n, "time_s": not_plotted_time},
        "n_groups": len(points),
    }


def _finish_group(g: dict[str, Any]) -> dict[str, Any]:
    eff = g.pop("_eff")
    bounds = g.pop("_bound")
    g["bound"] = max(bounds.items(), key=lambda kv: kv[1])[0]
    g["efficiency"] = eff / g["time_s"]
    g["intensity"] = g["flops"] / g["bytes"]
    g["flops_per_s"] = g["flops"] / g["time_s"]
    g["bytes_per_s"] = g["bytes"] / g["time_s"]
    return g


def _bins(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    bins: dict[tuple, dict[str, Any]] = {}
    for p in points:
        key = (
            p["dtype"],
            p["bound"],
            round(math.log10(p["intensity"]) * BIN_STEPS_PER_DECADE),
            round(math.log10(p["flops_per_s"]) * BIN_STEPS_PER_DECADE),
        )
        b = bins.get(key)
        if b is None:
            b = bins[key] = {"dtype": p["dtype"], "bound": p["bound"], "time_s": 0.0, "flops": 0.0, "bytes": 0.0, "n": 0, "groups": 0, "top": p["name"]}
        b["time_s"] += p["time_s"]
        b["flops"] += p["flops"]
        b["bytes"] += p["bytes"]
        b["n"] += p["n"]
        b["groups"] += 1
    for b in bins.values():
        b["intensity"] = b["flops"] / b["bytes"]
        b["flops_per_s"] = b["flops"] / b["time_s"]
    return sorted(bins.values(), key=lambda b: -b["time_s"])


def _top_predicted(ops: list[OpRecord], n: int = 15) -> list[dict[str, Any]]:
    top = heapq.nlargest(n, ops, key=attrgetter("time_s"))  # = sorted(reverse=True)[:n], ties in op order
    return [
        {"name": op.name, "module": op.module, "time_s": op.time_s, "predicted_s": op.predicted_time_s, "bound": op.bound}
        for op in top
    ]


def _asset(name: str) -> str:
    return resources.files("roofline.render").joinpath("assets", name).read_text(encoding="utf-8")



def _default(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    return str(obj)
