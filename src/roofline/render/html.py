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
from collections.abc import Callable, Iterable, Iterator
from importlib import resources
from operator import attrgetter, truth
from typing import Any

import msgspec

from roofline.analyze.communication import message_unrecorded
from roofline.render.colors import BOUND_COLORS
from roofline.report import OpRecord, Report, collective_size_unknown, finite_for_json

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
    """Numeric columns serialised once with 5 significant digits (the table shows 3), instead of round + repr. A
    column given as a str is its serialised body already."""

    def __init__(self, columns: dict[str, list | str] | Iterable[tuple[str, list | str]]) -> None:
        self._parts = []
        for name, values in columns.items() if isinstance(columns, dict) else columns:
            body = values if isinstance(values, str) else _column_body(name, values)
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


# Values made into texts at a time (_joined), ops whose floats are read into one array at a time (_float_columns).
_CHUNK = 16384


def _column_body(name: str, values: Any) -> str:
    if name in _CODE_COLUMNS:
        return ",".join(map(_IntTexts().__getitem__, values))
    if name in _INT_COLUMNS:
        return _joined(str, values)
    if not isinstance(values, list):
        return _float_array_body(values)
    body = _joined("%.5g".__mod__, values)
    # No finite value prints an n: "inf" and "nan" are the only ones that do.
    return _joined(_finite_text, values) if "n" in body else body


def _joined(text: Callable[[Any], str], values: list) -> str:
    """``",".join(map(text, values))``, a chunk at a time: join makes every text before it joins them, 6 MB of
    short strings for 127,620 ints, on report.html's forked child's (the command's) peak RSS."""
    return ",".join([",".join(map(text, values[start:start + _CHUNK])) for start in range(0, len(values), _CHUNK)])


def _finite_text(value: float) -> str:
    return "%.5g" % value if value == value and value not in _INFS else "0"


def _float_array_body(column: Any) -> str:
    """``_column_body`` of a float64 array: each distinct value formatted once where at most half of them are
    distinct (a report of many steps of the same ops). Measured on 127,620 values, formatting them all was ~30 ms,
    finding the distinct ones ~5 ms. 0.0 and -0.0 are one value there but print differently: a column with a -0.0 is
    formatted value by value."""
    import numpy as np

    distinct, inverse = np.unique(column, return_inverse=True)
    if 2 * len(distinct) <= len(column) and not (np.signbit(column) & (column == 0)).any():
        return ",".join(np.array(list(map(_finite_text, distinct.tolist())), dtype=object)[inverse].tolist())
    return _column_body("", column.tolist())


def ops_parts(report_ops: list[OpRecord]) -> dict[str, Any]:
    """The payload's parts made from a report's ops, placed (analyze/roofline.py) and final: the op table (its
    strings interned), the chart, the top ops. They need no findings, so a command can build them while the doctor
    runs elsewhere, or before the report around them is complete."""
    names = _Interner()
    ops, index = _in_index_order(report_ops)
    lists = _OpLists(ops)
    chart = _chart(lists)
    top = _top_predicted(ops, lists.floats["time_s"])
    table = _RawColumns(_columns(ops, index, lists, names)) if ops else _RawColumns({})
    return {"n_ops": len(ops), "table": table, "chart": chart, "top_predicted": top, "strings": names.values}


def _in_index_order(ops: list[OpRecord]) -> tuple[list[OpRecord], list[int]]:
    """The ops sorted by index (stably), and their indices; most reports' ops are in that order already."""
    index = [op.index for op in ops]
    if index == sorted(index):
        return list(ops), index
    ops = sorted(ops, key=attrgetter("index"))
    return ops, [op.index for op in ops]


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


class _Numbering(dict):
    """Each distinct key numbered in first-seen order."""

    def __missing__(self, key: Any) -> int:
        number = self[key] = len(self)
        return number


# The OpRecord floats the table and the chart read, in the order _OpLists.floats holds them.
_FLOAT_FIELDS = ("time_s", "flops", "bytes", "arithmetic_intensity", "achieved_flops_per_s", "achieved_bytes_per_s",
                 "efficiency", "predicted_time_s")


class _OpLists:
    """What the op table and the chart read of the ops, each read from all ops in a pass or two (op by op, in each
    consumer, those reads were most of ops_parts' time): ``rows``, each distinct (name, module, phase, dtype, shapes
    text, source, bound, roof) in first-seen order, a shape list formatted once per distinct list; ``row_of_op``;
    ``floats``, the ``_FLOAT_FIELDS`` as float64 arrays; ``counts`` and ``above_roof``, per op.

    Nothing per op is held but these: report.html's forked child is the command's peak RSS on issue 23's trace, and
    lists of each string field and of the shape lists' ids took 10 MB more there."""

    def __init__(self, ops: list[OpRecord]) -> None:
        import numpy as np

        numbering = _Numbering()
        self.row_of_op = np.fromiter(map(numbering.__getitem__, (
            (op.name, op.module, op.phase, op.dtype, id(op.input_shapes), op.source, op.bound, op.roof) for op in ops)),
            dtype=np.intp, count=len(ops))
        first_op = np.unique(self.row_of_op, return_index=True)[1].tolist()  # of each row, numbered 0, 1, ...
        shape_texts: dict[int, str] = {}
        self.rows = []
        for (name, module, phase, dtype, shapes, source, bound, roof), i in zip(numbering, first_op):
            text = shape_texts.get(shapes)
            if text is None:
                text = shape_texts[shapes] = format_shapes(ops[i].input_shapes)
            self.rows.append((name, module, phase, dtype, text, source, bound, roof))
        self.floats = _float_columns(ops)
        self.counts = [op.count for op in ops]
        self.above_roof = [op.above_roof for op in ops]


def _float_columns(ops: list[OpRecord]) -> dict[str, Any]:
    """The ``_FLOAT_FIELDS`` of the ops as float64 arrays, one per field (each freed when the table has written it),
    read in one pass (cheaper than one per field), a chunk of ops at a time: all at once, the array they are split
    from doubled their 8 MB (127,620 ops)."""
    import numpy as np

    columns = [np.empty(len(ops)) for _ in _FLOAT_FIELDS]
    for start in range(0, len(ops), _CHUNK):
        chunk = ops[start:start + _CHUNK]
        values = np.fromiter(((op.time_s, op.flops, op.bytes, op.arithmetic_intensity, op.achieved_flops_per_s,
                               op.achieved_bytes_per_s, op.efficiency, op.predicted_time_s) for op in chunk),
                             dtype=(np.float64, len(_FLOAT_FIELDS)), count=len(chunk))
        for column, values_of_field in zip(columns, values.T):
            column[start:start + len(chunk)] = values_of_field
    return dict(zip(_FLOAT_FIELDS, columns))


def _columns(ops: list[OpRecord], index: list[int], lists: _OpLists, names: _Interner) -> Iterator[tuple[str, Any]]:
    """The op table column-wise. Strings are interned in the order op by op would (each row's, in column order, at
    its first op: a later op of a row adds none); a string column is written from its rows' codes. Each column is
    serialised before the next is made: all of them at once as lists of floats were 30 MB of a 127,620-op report's
    peak (issue 23)."""
    import numpy as np

    codes = [tuple(map(names, row)) for row in lists.rows]
    floats = lists.floats

    def strings(position: int) -> str:
        return ",".join(np.array([str(row[position]) for row in codes], dtype=object)[lists.row_of_op].tolist())

    yield "index", index
    for position, column in enumerate(("name", "module", "phase", "dtype", "shapes", "source", "bound")):
        yield column, strings(position)
    yield "time_s", floats.pop("time_s")
    yield "flops", floats.pop("flops")
    yield "bytes", floats.pop("bytes")
    yield "intensity", floats.pop("arithmetic_intensity")
    yield "flops_per_s", floats.pop("achieved_flops_per_s")
    yield "bytes_per_s", floats.pop("achieved_bytes_per_s")
    yield "efficiency", floats.pop("efficiency")
    yield "predicted_s", floats.pop("predicted_time_s")
    yield "above_roof", ",".join(map(("0", "1").__getitem__, map(truth, lists.above_roof)))
    yield "count", lists.counts
    yield "roof", strings(7)
    if any(collective_size_unknown(row[0], row[6], 0) for row in lists.rows):  # a row that could be missing its size
        unsized = [1 if message_unrecorded(op) else 0 for op in ops]
        if any(unsized):
            yield "no_size", unsized
    if any(op.measured is not None for op in ops):
        yield "dram_bytes", [op.measured.dram_bytes if op.measured is not None else 0.0 for op in ops]
        yield "excess", [(op.measured.excess_ratio or 0.0) if op.measured is not None else 0.0 for op in ops]


def chart_points(ops: list[OpRecord]) -> dict[str, Any]:
    """Points for the roofline: grouped op calls, with the smallest groups binned past MAX_POINTS."""
    return _chart(_OpLists(ops))


def _chart(lists: _OpLists) -> dict[str, Any]:
    """``chart_points`` of the ops ``lists`` was made of. A group is made at its first plotted op (its name, source),
    bound by the bound of most of its time (the first of equals, in the order its ops show them), roofed by its last
    roof other than dram, above the roof if any op is. Its sums are np.bincount's, which adds op by op in the ops'
    order, from 0.0, as a loop over the ops would (floats added in another order could differ in the last bits)."""
    import numpy as np

    rows = lists.rows
    numbering = _Numbering()
    group_of_row = np.array([numbering[(name, module, shapes, dtype, phase)]
                             for name, module, phase, dtype, shapes, *_ in rows], dtype=np.intp)
    f = lists.floats
    time_s = f["time_s"]
    plotted = ~((f["flops"] <= 0) | (f["bytes"] <= 0) | (time_s <= 0))
    at = np.flatnonzero(plotted)
    row = lists.row_of_op[at]
    group = group_of_row[row]
    n_groups = len(numbering)

    def sums(values: Any) -> list:
        return np.bincount(group, weights=values, minlength=n_groups).tolist()

    t = time_s[at]
    time_sum, flops_sum, bytes_sum = sums(t), sums(f["flops"][at]), sums(f["bytes"][at])
    with np.errstate(all="ignore"):  # inf * 0 is NaN here as in Python, without a warning
        eff_sum = sums(f["efficiency"][at] * t)
    predicted_sum = sums(f["predicted_time_s"][at])
    n_sum = sums(np.array(lists.counts)[at])
    made, first = np.unique(group, return_index=True)
    order = np.argsort(first, kind="stable")
    made, first_row = made[order].tolist(), row[first[order]].tolist()
    bound_of = _bounds(group, row, t, rows, n_groups)
    roof_of = _roofs(group, row, rows)
    above = np.fromiter(map(truth, lists.above_roof), dtype=bool, count=len(lists.above_roof))[at]
    above_of = (np.bincount(group, weights=above, minlength=n_groups) > 0).tolist()  # any op of the group
    points = []
    for g, r in zip(made, first_row):
        name, module, phase, dtype, shapes, source, _, _ = rows[r]
        time_g, flops_g, bytes_g = time_sum[g], flops_sum[g], bytes_sum[g]
        points.append({
            "name": name, "module": module, "shapes": shapes, "dtype": dtype, "phase": phase, "source": source or "",
            "time_s": time_g, "flops": flops_g, "bytes": bytes_g, "predicted_s": predicted_sum[g],
            "n": int(n_sum[g]), "above_roof": above_of[g], "roof": roof_of.get(g, "dram"), "bound": bound_of[g],
            "efficiency": eff_sum[g] / time_g, "intensity": flops_g / bytes_g, "flops_per_s": flops_g / time_g,
            "bytes_per_s": bytes_g / time_g,
        })
    points.sort(key=lambda p: -p["time_s"])
    shown, rest = points[:MAX_POINTS], points[MAX_POINTS:]
    skipped = np.flatnonzero(~plotted)
    return {
        "points": shown,
        "bins": _bins(rest),
        "not_plotted": {"n": len(skipped),  # float(): bincount of nothing is an int 0
                        "time_s": float(np.bincount(np.zeros(len(skipped), dtype=np.intp), weights=time_s[skipped],
                                                    minlength=1)[0])},
        "n_groups": len(points),
    }


def _bounds(group: Any, row: Any, time_s: Any, rows: list[tuple], n_groups: int) -> dict[int, str]:
    """Each group's bound of most time: its ops' time summed per bound (in op order), the first bound its ops show
    of those with the most."""
    import numpy as np

    bound_numbering = _Numbering()
    bound_of_row = np.array([bound_numbering[r[6]] for r in rows], dtype=np.intp)
    pair = group * len(bound_numbering) + bound_of_row[row]
    totals = np.bincount(pair, weights=time_s, minlength=n_groups * len(bound_numbering)).tolist()
    pairs, first = np.unique(pair, return_index=True)
    bounds = list(bound_numbering)
    best: dict[int, tuple[float, str]] = {}
    for p in pairs[np.argsort(first, kind="stable")].tolist():
        g, b = divmod(p, len(bounds))
        if g not in best or totals[p] > best[g][0]:
            best[g] = (totals[p], bounds[b])
    return {g: bound for g, (_, bound) in best.items()}


def _roofs(group: Any, row: Any, rows: list[tuple]) -> dict[int, str]:
    """Each group's last roof other than dram, where it has one."""
    import numpy as np

    other = np.array([r[7] != "dram" for r in rows], dtype=bool)[row]
    groups, last = _last(group[other])
    return {g: rows[r][7] for g, r in zip(groups, row[other][last].tolist())}


def _last(values: Any) -> tuple[list, Any]:
    """The distinct ``values`` and where each is last."""
    import numpy as np

    distinct, from_end = np.unique(values[::-1], return_index=True)
    return distinct.tolist(), len(values) - 1 - from_end


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


def _top_predicted(ops: list[OpRecord], times: Any, n: int = 15) -> list[dict[str, Any]]:
    """The ``n`` ops of most time (``times``: theirs, float64): = sorted(reverse=True)[:n], ties in op order."""
    import numpy as np

    if len(times) > n and not np.isnan(times).any():
        nth = np.partition(times, len(times) - n)[len(times) - n]
        candidates = np.flatnonzero(times >= nth)
        top = [ops[i] for i in candidates[np.argsort(-times[candidates], kind="stable")][:n].tolist()]
    else:
        top = heapq.nlargest(n, ops, key=attrgetter("time_s"))
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
