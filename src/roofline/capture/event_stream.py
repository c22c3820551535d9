"""Stream the events of a Chrome-trace JSON file (.json or .json.gz) in decoded chunks, in bounded memory.

A multi-GB trace never sits in memory whole: the file is read (and gunzipped) in blocks, each block is cut
after the last ``},`` and the complete events before the cut are decoded at once into typed msgspec structs.
A cut inside a string or a nested object cannot decode (an unterminated string or unbalanced brackets), so a
failed decode means "cut elsewhere", never a silently wrong event. A chunk holding an event of the wrong shape
is decoded again event by event, and only the bad events are dropped (counted in ``skipped``).

Top-level keys other than ``traceEvents`` become ``metadata``; Chrome's bare-array form (``[{...}, ...]``) is
accepted too. A file cut short keeps the events read before the cut and says so in ``warnings``.

A file can be read in two byte ranges by two processes (capture/kineto.py). A plain one: ``split_offset`` finds an
event boundary near the middle; ``EventStream(stop=B)`` reads the head and the events before it,
``EventStream(start=B)`` the events from there to the end and what follows the list. A gzipped one, whose middle is
only known once decompressed: ``stop=AT_MIDDLE`` and ``start=AT_MIDDLE`` make each process decompress up to the
middle of the JSON and find the same boundary there (the same bytes, the same rule), recorded in ``split_point``.
Offsets of a gzipped file count its decompressed bytes.
"""

from __future__ import annotations

import codecs
import json
import re
import shlex
import zlib
from pathlib import Path
from typing import Any, Iterator

import msgspec

from roofline.errors import RooflineError
from roofline.io import non_json_number_hint, not_json_head, wide_text, refuse_stream

BLOCK_BYTES = 4 << 20  # 16 MiB held ~90 MB more decoded events at once on a 304 MB trace and loaded it no faster
_READ_BYTES = 4 << 20
_END_TRIES = 16
_END_SCAN = 1 << 16
_CUT_TRIES = 4
_WHITESPACE = b" \t\r\n"
_SYNTAX_ERRORS = (msgspec.DecodeError, RecursionError)


def _why_unreadable(events: bytearray) -> str:
    """Why not even the first event decodes, where that is one of the usual suspects: '; ...' or ''."""
    head = bytes(events[: 1 << 20])
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not a character cut by the 1 MiB window
            return f"; it is not UTF-8 (byte {exc.start} of the events is {head[exc.start]:#04x}): re-export the trace"
    return non_json_number_hint(head)


class EventStream:
    """Iterate to get lists of decoded events; ``metadata``, ``warnings``, ``skipped`` are complete afterwards."""

    def __init__(self, path: str | Path, event_type: type, block_bytes: int = BLOCK_BYTES, *,
                 start: int | str | None = None, stop: int | str | None = None) -> None:
        self.path = Path(path)
        self._start = start
        self._stop = stop
        # where the two ranges meet (AT_MIDDLE resolved); None after an AT_MIDDLE read that found no boundary: the
        # head read then went on to the end, and the tail read nothing
        self.split_point: int | None = start if isinstance(start, int) else stop if isinstance(stop, int) else None
        self.metadata: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.skipped = 0
        self.repaired: dict[str, int] = {}  # field path -> events read without it (``_repaired``)
        self.events_read = 0
        self._event_type = event_type
        self._decode_list = msgspec.json.Decoder(list[event_type]).decode
        self._decode_one = msgspec.json.Decoder(event_type).decode
        self._block_bytes = block_bytes
        self._input_cut = False
        self.cut = False

    def __iter__(self) -> Iterator[list]:
        blocks = self._blocks()
        if self._start is None:
            pending = self._head(blocks)
        else:
            pending = bytearray()
        cut_at = self._block_bytes
        for block in blocks:
            pending += block
            if len(pending) >= cut_at:
                events = self._cut(pending)
                # An event longer than a block: no cut until it ends. Each try decodes all that is held, so the
                # next waits for twice as much (a 50 MB event took 46 decodes of up to 50 MB each, 2 s; linear now).
                cut_at = self._block_bytes if events else 2 * len(pending)
                if events:
                    yield events
        if self._stop is None or (self._stop == AT_MIDDLE and self.split_point is None):
            yield from self._finish(pending)
            self._repairs_warning()
            return
        while pending.strip(_WHITESPACE):
            events = self._cut(pending)
            if not events:
                raise ValueError(f"{self.path}: no event boundary at byte {self._stop}")
            yield events
        self._repairs_warning()

    def _head(self, blocks: Iterator[bytes]) -> bytearray:
        """The bytes after the '[' that opens the event list (the metadata before it parsed)."""
        head = bytearray()
        start = None
        for block in blocks:
            head += block
            start = self._array_start(head, final=False)
            if start is not None:
                break
        if start is None:
            start = self._array_start(head, final=True)
        del head[:start]
        return head

    def _blocks(self) -> Iterator[bytes]:
        refuse_stream(self.path, "trace")
        try:
            fh = open(self.path, "rb")
        except FileNotFoundError:
            raise RooflineError(f"trace file not found: {self.path}") from None
        except IsADirectoryError:
            raise RooflineError(_directory_error(self.path)) from None
        except OSError as exc:
            raise RooflineError(f"cannot read trace {self.path}: {exc.strerror or exc}") from None
        with fh:
            gzipped = self._read(fh, 2) == b"\x1f\x8b"
            fh.seek(0)
            if not gzipped and (self._start is not None or self._stop is not None):
                yield from self._plain_range(fh)
                return
            first = self._read(fh)
            if not gzipped:
                while first:
                    yield first
                    first = self._read(fh, self._block_bytes)
                return
            if self._start is None and self._stop is None:
                yield from self._gunzip(fh, first)
            elif AT_MIDDLE in (self._start, self._stop):
                yield from self._around_middle(self._gunzip(fh, first), head=self._stop == AT_MIDDLE)
            else:
                yield from _byte_range(self._gunzip(fh, first), self._start, self._stop)

    def _around_middle(self, blocks: Iterator[bytes], head: bool) -> Iterator[bytes]:
        """The decompressed blocks before (``head``) or from the event boundary near the middle of the JSON
        (``_boundary`` in the SPLIT_WINDOW bytes from the middle), which is recorded in ``split_point``. The bytes
        before the middle stream through (the head) or are dropped (the tail); only the window is held."""
        middle = int((gzip_json_size(self.path) or 0) * GZIP_HEAD_SHARE)
        pos = 0
        held = bytearray()
        held_at = None
        for block in blocks:
            if held_at is None and pos + len(block) <= middle:
                pos += len(block)
                if head:
                    yield block
                continue
            if held_at is None:
                held_at = pos
            held += block
            pos += len(block)
            if pos >= middle + SPLIT_WINDOW:
                break
        found = _boundary(bytes(held[middle - held_at: middle - held_at + SPLIT_WINDOW])) if held_at is not None \
            else None
        if found is None:
            self.split_point = None
            if head:
                yield bytes(held)
                yield from blocks
            return
        self.split_point = middle + found
        cut = self.split_point - held_at
        if head:
            yield bytes(held[:cut])
            return
        yield bytes(held[cut:])
        yield from blocks

    def _plain_range(self, fh) -> Iterator[bytes]:
        fh.seek(self._start or 0)
        left = None if self._stop is None else self._stop - (self._start or 0)
        while left is None or left > 0:
            block = self._read(fh, self._block_bytes if left is None else min(self._block_bytes, left))
            if not block:
                return
            if left is not None:
                left -= len(block)
            yield block

    def _read(self, fh, size: int = _READ_BYTES) -> bytes:
        try:
            return fh.read(size)
        except OSError as exc:
            raise RooflineError(f"cannot read trace {self.path}: {exc.strerror or exc}") from None

    def _gunzip(self, fh, data: bytes) -> Iterator[bytes]:
        """The decompressed stream in blocks of about ``block_bytes``: each call's output is capped at that
        (``max_length``; what input is left waits in ``unconsumed_tail``), as a trace compresses ~10:1 and a whole
        read's output (40 MB) was decoded into events at once (a 307 MB trace's .json.gz: 635 MiB at the peak
        against 403 for the plain file). Concatenated gzip members are read one after the other."""
        inflater = zlib.decompressobj(wbits=31)
        out = bytearray()
        while data:
            try:
                out += inflater.decompress(data, self._block_bytes)
                data = inflater.unconsumed_tail
                if not data and not inflater.eof:
                    data = self._read(fh)
                    if not data:  # the input ends: what zlib still holds, and whether the member ended
                        out += inflater.flush()
            except zlib.error as exc:
                self._input_cut = self.cut = True
                self.warnings.append(f"corrupt gzip data ({exc}): events after it are missing")
                break
            if inflater.eof:
                data = inflater.unused_data or self._read(fh)
                inflater = zlib.decompressobj(wbits=31) if data else None
            if len(out) >= self._block_bytes:
                yield bytes(out)
                out.clear()
        if inflater is not None and not self._input_cut:
            self._input_cut = self.cut = True
            self.warnings.append("the gzip stream ends early (truncated file): events after the cut are missing")
        if out:
            yield bytes(out)

    def _array_start(self, head: bytearray, final: bool) -> int | None:
        """Offset just past the '[' that opens the event list; parses the metadata written before it."""
        i = _skip_space(head, self._text_start(head))
        if i >= len(head):
            if final and self._input_cut:
                raise RooflineError(f"{self.path} is a truncated or corrupt gzip file: nothing could be read")
            if final:
                raise RooflineError(f"{self.path} is empty: re-export the trace (prof.export_chrome_trace)")
            return None
        if head[i] == ord("["):
            return i + 1
        if head[i] != ord("{"):
            if final or len(head) > i + 1:
                self._raise_not_trace(head)
            return None
        key = head.find(b'"traceEvents"', i)
        if key < 0:
            if final:
                self._raise_not_trace(head)
            return None
        j = _skip_space(head, key + len(b'"traceEvents"'))
        if j < len(head) and head[j] == ord(":"):
            j = _skip_space(head, j + 1)
        if j >= len(head):
            if final:
                raise RooflineError(f"{self.path} is truncated right after its traceEvents key")
            return None
        if head[j] != ord("["):
            raise RooflineError(f"{self.path} is not a trace: traceEvents is not a list of events")
        prefix = bytes(head[i:key]).rstrip(_WHITESPACE).rstrip(b",") + b"}"
        self._add_metadata(prefix)
        return j + 1

    def _text_start(self, head: bytearray) -> int:
        """Where the JSON text starts: past a UTF-8 byte order mark (Windows editors write one, and json.load reads
        it). UTF-16 or UTF-32 text is refused by its name, not as 'invalid character (byte 0)'."""
        if head.startswith(codecs.BOM_UTF8):
            return len(codecs.BOM_UTF8)
        wide = wide_text(bytes(head[:4]))
        if wide:
            raise RooflineError(f"{self.path} is {wide}")
        return 0

    def _raise_not_trace(self, head: bytearray) -> None:
        try:
            value = msgspec.json.decode(bytes(head[self._text_start(head):]))
        except _SYNTAX_ERRORS as exc:
            what = "gzip file" if self._input_cut else "JSON"
            why = not_json_head(bytes(head))
            raise RooflineError(f"{self.path} is not valid {what} (truncated or corrupt?): {exc}"
                                f"{f'; {why}' if why else ''}") from None
        if isinstance(value, dict):
            raise RooflineError(f"{self.path} is not a Chrome/Kineto trace: it has no traceEvents")
        raise RooflineError(f"{self.path} is not a trace: expected a JSON object with traceEvents")

    def _add_metadata(self, text: bytes) -> None:
        try:
            value = msgspec.json.decode(text)
        except _SYNTAX_ERRORS:
            self.warnings.append("the top-level metadata could not be parsed and was ignored")
            return
        if isinstance(value, dict):
            value.pop("traceEvents", None)
            self.metadata.update(value)

    def _cut(self, pending: bytearray) -> list:
        """Decode the complete events at the front of ``pending`` and drop them from it."""
        end = len(pending)
        for _ in range(_CUT_TRIES):
            pos = pending.rfind(b"},", 0, end)
            if pos < 0:
                return []
            events = self._decode_chunk(pending, pos + 1, closed=False)
            if events is not None:
                del pending[: pos + 2]
                return events
            end = pos
        return []

    def _finish(self, pending: bytearray) -> Iterator[list]:
        for pos in self._list_ends(pending):
            events = self._decode_chunk(pending, pos + 1, closed=True)
            if events is not None:
                yield events
                self._suffix(bytes(pending[pos + 1 :]))
                return
        while pending:
            events = self._cut(pending)
            if not events:
                break
            yield events
        if self.events_read == 0:
            what = "gzip file" if self._input_cut else "JSON"
            raise RooflineError(f"{self.path} is not valid {what} (truncated or corrupt?): no complete trace event"
                                f"{_why_unreadable(pending)}")
        self.cut = True
        if not self._input_cut:
            self.warnings.append(
                f"the trace ends early or is corrupt after {self.events_read} events: the rest is missing"
            )

    @staticmethod
    def _list_ends(pending: bytearray) -> Iterator[int]:
        """Candidate positions of the ']' closing the event list, last first: one followed by ',' '}' or the
        end (and, past the last few, following an event's '}'). Kineto writes metadata after the list (an INFO
        block of log lines full of ']'); the ']'s inside those strings are followed by text and are stepped over
        without a decode. At most _END_TRIES candidates are decoded, so a cut file costs a bounded time."""
        end = len(pending)
        tries = 0
        for seen in range(_END_SCAN):
            pos = pending.rfind(b"]", 0, end)
            if pos < 0 or tries >= _END_TRIES:
                return
            end = pos
            after = bytes(pending[pos + 1 : pos + 64]).lstrip(_WHITESPACE)[:1]
            if after not in (b",", b"}", b""):
                continue
            if seen >= _END_TRIES and _before(pending, pos) not in (b"}", b"["):
                continue
            tries += 1
            yield pos

    def _suffix(self, text: bytes) -> None:
        """The metadata written after the event list, and a warning for bytes after the trace's closing brace (a
        crashed writer's NUL padding, two exports appended to one file)."""
        text = text.strip(_WHITESPACE)
        if text.startswith(b","):
            body = "{" + text[1:].decode("utf-8", "replace")
            try:
                _, end = json.JSONDecoder().raw_decode(body)
            except json.JSONDecodeError:
                end = len(body)
            self._add_metadata(body[:end].encode())
            rest = body[end:].strip()
        else:
            rest = text[1:].decode("utf-8", "replace").strip() if text.startswith(b"}") else ""
        if rest:
            self.warnings.append(f"{len(rest.encode())} bytes after the end of the trace ignored (not part of it)")

    def _decode_chunk(self, pending: bytearray, stop: int, closed: bool) -> list | None:
        data = bytearray(b"[")
        data += memoryview(pending)[:stop]
        if not closed:
            data += b"]"
        try:
            events = self._decode_list(data)
        except msgspec.ValidationError:
            events = self._decode_each(data)
        except _SYNTAX_ERRORS:
            return None
        if events is not None:
            self.events_read += len(events)
        return events

    def _decode_each(self, data: bytearray) -> list | None:
        try:
            raws = msgspec.json.decode(data, type=list[msgspec.Raw])
        except (msgspec.ValidationError, *_SYNTAX_ERRORS):
            return None
        events = []
        for raw in raws:
            try:
                events.append(self._decode_one(raw))
            except msgspec.ValidationError as exc:  # before _SYNTAX_ERRORS: a kind of msgspec.DecodeError
                event = self._repaired(raw, exc)
                if event is None:
                    self.skipped += 1
                else:
                    events.append(event)
            except _SYNTAX_ERRORS:
                self.skipped += 1
        return events

    def _repaired(self, raw: msgspec.Raw, exc: msgspec.ValidationError) -> Any:
        """The event read without the arguments whose type is not the one expected (a number written as text is
        read as that number), or None when that does not make it an event. ROCm's Kineto writes a runtime call's
        stream as text ("0x0"): every hipLaunchKernel of an AMD trace was dropped as malformed for it (now read
        as it is: kineto._Args.stream)."""
        try:
            data = msgspec.json.decode(raw)
        except _SYNTAX_ERRORS:
            return None
        fields = []
        for _ in range(_MAX_REPAIRS):
            where = _field_path(str(exc))
            # only an argument: an event whose name, category or times are not what they should be is no event
            if where is None or len(where) < 2 or where[0] != "args" or not _drop_or_read_as_number(data, where):
                return None
            fields.append(".".join(map(str, where)))
            try:
                event = self._decode_one(msgspec.json.encode(data))
            except msgspec.ValidationError as again:
                exc = again
                continue
            for field in fields:
                self.repaired[field] = self.repaired.get(field, 0) + 1
            return event
        return None

    def _repairs_warning(self) -> None:
        if self.repaired:
            fields = ", ".join(f"{path} ({n})" for path, n in sorted(self.repaired.items()))
            self.warnings.append("events with a field of an unexpected type read without it, or as the number its "
                                 f"text gives: {fields}")


_MAX_REPAIRS = 8
_PATH_PART = re.compile(r'\["((?:[^"\\]|\\.)*)"\]|\[(\d+)\]|\.([^.\[]+)')


def _field_path(message: str) -> list[str | int] | None:
    """The path msgspec's error names (``... - at `$.args.stream```, ``$.args.External id``, ``$.args.x[0]``)."""
    at = message.rfind("at `$")
    if at < 0:
        return None
    text = message[at + 5:message.index("`", at + 5)] if "`" in message[at + 5:] else ""
    parts: list[str | int] = []
    pos = 0
    while pos < len(text):
        match = _PATH_PART.match(text, pos)
        if match is None:
            return None
        quoted, index, name = match.groups()
        parts.append(int(index) if index is not None else name if name is not None else json.loads(f'"{quoted}"'))
        pos = match.end()
    return parts or None


def _drop_or_read_as_number(data: Any, path: list[str | int]) -> bool:
    """The field at ``path`` (in a list: the list's own field) replaced by the integer its text spells ("0x0",
    "12"), else removed; False where there is no such field."""
    keys = list(path)
    while keys and isinstance(keys[-1], int):
        keys.pop()
    if not keys:
        return False
    holder = data
    for key in keys[:-1]:
        if isinstance(key, int):
            if not isinstance(holder, list) or not 0 <= key < len(holder):
                return False
        elif not isinstance(holder, dict) or key not in holder:
            return False
        holder = holder[key]
    last = keys[-1]
    if not isinstance(holder, dict) or last not in holder:
        return False
    value = holder[last]
    if len(keys) == len(path) and isinstance(value, str):
        try:
            holder[last] = int(value, 0)
            return True
        except ValueError:
            pass
    del holder[last]
    return True


SPLIT_WINDOW = 1 << 18
AT_MIDDLE = "the event boundary near the middle"

# Where "the middle" is: the share of the JSON the head's process reads. That process also takes in what the
# tail's sends, and a gzipped trace's tail process first decompresses the head it skips, so the head gets more. On
# the 307 MB, 1 M-event trace (CPU seconds: head read; tail read and send; then the head's absorbing): plain 0.5
# 1.16; 1.35; 0.25 and 0.58 1.34; 1.09; 0.22, balanced near 0.54; gzipped 0.5 1.35; 1.81; 0.28, 0.6 1.66;
# 1.57; 0.20 and 0.66 1.77; 1.39; 0.20.
PLAIN_HEAD_SHARE = 0.54
GZIP_HEAD_SHARE = 0.6


def split_offset(path: str | Path, window: int = SPLIT_WINDOW) -> int | None:
    """A byte offset near the middle (PLAIN_HEAD_SHARE) of a plain JSON trace where an event starts
    (``_boundary``), or None (and None for a gzipped file: its middle is found while decompressing, AT_MIDDLE)."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as fh:
        if fh.read(2) == b"\x1f\x8b":
            return None
        middle = int(size * PLAIN_HEAD_SHARE)
        fh.seek(middle)
        data = fh.read(window)
    found = _boundary(data)
    return None if found is None else middle + found


def _boundary(data: bytes, tries: int = 16) -> int | None:
    """The offset in ``data`` just past a ``},`` that ends an event, or None. A candidate is taken only if the
    events from it to a later ``},`` decode as a list: a ``},`` inside a string or a nested object leaves an
    unterminated string or unbalanced brackets behind it."""
    ends = []
    end = len(data)
    while len(ends) < 4:
        end = data.rfind(b"},", 0, end)
        if end < 0:
            break
        ends.append(end)
    pos = -1
    for _ in range(tries):
        pos = data.find(b"},", pos + 1)
        if pos < 0:
            return None
        for end in ends:
            if end <= pos:
                continue
            try:
                raws = msgspec.json.decode(b"[" + data[pos + 2:end + 1] + b"]", type=list[msgspec.Raw])
            except (msgspec.DecodeError, RecursionError):
                continue
            if raws and all(bytes(raw)[:1] == b"{" for raw in raws):
                return pos + 2
    return None


# deflate never compresses better than about 1032:1: a larger recorded size is no gzip trailer (a cut file)
_MAX_DEFLATE_RATIO = 1032


def gzip_json_size(path: str | Path) -> int | None:
    """The JSON size a gzipped file records in its trailer (modulo 4 GiB; the last member's where several are
    concatenated), or None for a file that is not gzip or whose trailer cannot be one (a cut file's last bytes)."""
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        fh.seek(0)
        if fh.read(2) != b"\x1f\x8b" or size < 18:  # a gzip member's header and trailer alone take 18
            return None
        fh.seek(-4, 2)
        recorded = int.from_bytes(fh.read(4), "little")
    return recorded if recorded <= size * _MAX_DEFLATE_RATIO else None


def _byte_range(blocks: Iterator[bytes], start: int | None, stop: int | None) -> Iterator[bytes]:
    """The bytes of ``blocks`` from offset ``start`` to ``stop`` (either None: the stream's start or end)."""
    pos = 0
    for block in blocks:
        end = pos + len(block)
        lo = max(start or 0, pos) - pos
        hi = (end if stop is None else min(stop, end)) - pos
        if hi > lo:
            yield block[lo:hi] if (lo, hi) != (0, len(block)) else block
        pos = end
        if stop is not None and pos >= stop:
            return


PROFILER_TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")  # tensorboard_trace_handler's file names


def profiler_traces_in(directory: Path) -> list[Path]:
    """The torch.profiler traces directly in ``directory`` (a tensorboard_trace_handler log folder), by name."""
    try:
        return sorted(p for p in directory.iterdir() if p.name.endswith(PROFILER_TRACE_SUFFIXES) and p.is_file())
    except OSError:
        return []


def profiler_traces_pattern(directory: Path, traces: list[Path]) -> str:
    """A shell pattern that names ``traces`` in ``directory``: DIR/*.pt.trace.json, .json.gz, or both."""
    suffixes = {".pt.trace.json.gz" if p.name.endswith(".gz") else ".pt.trace.json" for p in traces}
    return f"{shlex.quote(str(directory))}/*{suffixes.pop() if len(suffixes) == 1 else '.pt.trace.json*'}"


def _directory_error(path: Path) -> str:
    traces = profiler_traces_in(path)
    if not traces:
        return f"{path} is a directory; give a trace file (.json or .json.gz)"
    workers = {_worker_name(p) for p in traces}
    if len(traces) > 1 and len(workers) == 1:
        return (f"{path} is a directory holding {len(traces)} torch.profiler traces of one process "
                f"({workers.pop()}: a trace per profiler cycle): give one, e.g. the last "
                f"`roofline trace {shlex.quote(str(traces[-1]))}`")
    return (f"{path} is a directory holding {len(traces)} torch.profiler traces: give one ({traces[0].name}), or a "
            f"distributed job's rank traces together: `roofline trace {profiler_traces_pattern(path, traces)}`")


def _worker_name(path: Path) -> str:
    """tensorboard_trace_handler's worker name in its file name ``{worker}.{time in ns}.pt.trace.json[.gz]``
    (the worker is ``{hostname}_{pid}`` unless the script names it): the files of one process share it."""
    stem = path.name[:-len(next(s for s in PROFILER_TRACE_SUFFIXES if path.name.endswith(s)))]
    worker, _, stamp = stem.rpartition(".")
    return worker if worker and stamp.isdigit() else stem


def _before(data: bytearray, pos: int) -> bytes:
    """The last non-space byte before ``pos``."""
    i = pos - 1
    while i >= 0 and data[i] in _WHITESPACE:
        i -= 1
    return bytes(data[i : i + 1]) if i >= 0 else b""


def _skip_space(data: bytearray, i: int) -> int:
    n = len(data)
    while i < n and data[i] in _WHITESPACE:
        i += 1
    return i
