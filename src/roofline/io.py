"""File output that never leaves a half-written file or directory behind: write to a temporary sibling, then
rename; and the checks that refuse an unusable output path before any work is done."""

from __future__ import annotations

import atexit
import codecs
import contextlib
import gzip
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from roofline.errors import RooflineError


_NOT_JSON_NUMBERS = re.compile(rb"[:\[,]\s*-?(NaN|Infinity)\b")


def non_json_number_hint(raw: bytes) -> str:
    """'; it holds NaN, which JSON does not allow ...' where ``raw`` (a file's head, or the bytes around where its
    decoding failed) holds a NaN or Infinity, the usual reason a JSON file written by Python does not parse; ''
    otherwise."""
    found = _NOT_JSON_NUMBERS.search(raw)
    if found is None:
        return ""
    return (f"; it holds {found.group(1).decode()}, which JSON does not allow (Python's json.dumps writes it "
            "unless allow_nan=False)")


SNIFF_BYTES = 1 << 16
_JSON_OPENERS = frozenset(b'{["-0123456789tfn')
_UTF8_BOM_START = 0xEF  # a UTF-8 byte order mark: the readers step over it, as json.load does


def wide_encoding(start: bytes) -> str | None:
    """'UTF-16' or 'UTF-32' where the first four bytes show that encoding (a byte order mark, or NULs beside the
    first character, an ASCII one in JSON), else None."""
    if start.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "UTF-32"
    if start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "UTF-16"
    if len(start) < 4:
        return None
    if start[:3] == b"\0\0\0" and 0 < start[3] < 0x80 or 0 < start[0] < 0x80 and start[1:] == b"\0\0\0":
        return "UTF-32"
    if start[0] == 0 and 0 < start[1] < 0x80 or 0 < start[0] < 0x80 and start[1] == 0:
        return "UTF-16"
    return None


def wide_text(start: bytes) -> str | None:
    """'UTF-16 text (...): re-save it as UTF-8' where ``start`` shows a wide encoding (``wide_encoding``), else None."""
    wide = wide_encoding(start)
    return f"{wide} text (saved by a Windows editor or a PowerShell redirect?): re-save it as UTF-8" if wide else None


def not_json_head(head: bytes) -> str | None:
    """Why a file whose first bytes (a block of at most a few MiB, gunzipped) are ``head`` cannot be JSON, where its
    start shows it: all zero bytes (a disk image, a file allocated and never written) or a first character no JSON
    value opens with; None where it may be JSON. Cheap enough for the one block a reader holds anyway."""
    if not head:
        return None
    if head.count(0) == len(head):
        return f"its first {len(head):,} bytes are all zero (a disk image, or a file allocated and never written?)"
    packed = _packed_as(head)
    if packed:
        return packed
    start = head.lstrip(b" \t\r\n")
    wide = wide_text(bytes(start[:4]))
    if wide:
        return f"it is {wide}"
    if start and start[0] not in _JSON_OPENERS and start[0] != _UTF8_BOM_START:
        return f"it does not start like JSON: {bytes(start[:16])!r}"
    return None


_ARCHIVES = ((b"PK\x03\x04", "a zip archive"), (b"PK\x05\x06", "a zip archive"),
             (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"))
_COMPRESSIONS = ((b"\xfd7zXZ\x00", "xz-compressed"), (b"BZh", "bzip2-compressed"),
                 (b"\x28\xb5\x2f\xfd", "zstd-compressed"), (b"\x1f\x8b", "gzip-compressed twice"))


def _packed_as(head: bytes) -> str | None:
    """'it is a zip archive: ...' where ``head`` starts like an archive or a compression roofline does not read (a
    trace shared on a GitHub issue, which takes only .zip attachments), else None."""
    for magic, name in _ARCHIVES:
        if head.startswith(magic):
            return f"it is {name}: extract the JSON file from it"
    if head[257:262] == b"ustar" and head.lstrip()[:1] not in (b"{", b"["):
        return "it is a tar archive: extract the JSON file from it"
    for magic, name in _COMPRESSIONS:
        if head.startswith(magic):
            return f"it is {name}: decompress it (roofline reads .json and .json.gz)"
    return None


def refuse_stream(path: str | os.PathLike[str], what: str) -> None:
    """Refuse a pipe or a device given for a file (`roofline trace <(zcat t.json.gz)`): roofline reads its input
    more than once (and a trace's from byte offsets), which a stream cannot give. From its stat, before an open
    that would wait for a pipe's writer. A missing file passes: its reader says so."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = "pipe" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "device"
    raise RooflineError(f"{path} is a {kind}, not a file: roofline reads a {what} more than once; save it to a file "
                        "first and pass that (roofline reads .json.gz as it is)")


def _sniffed_head(path: Path) -> bytes:
    """The first SNIFF_BYTES of ``path``, gunzipped when it is gzip (as far as its first block goes)."""
    with open(path, "rb") as fh:
        head = fh.read(SNIFF_BYTES)
    if head[:2] == b"\x1f\x8b":
        try:
            return zlib.decompressobj(wbits=31).decompress(head, SNIFF_BYTES)
        except zlib.error:
            return b""  # corrupt gzip: read_maybe_gzip says so
    return head


def read_maybe_gzip(path: str | os.PathLike[str], what: str, *, json: bool = False) -> bytes:
    """A file's bytes, gunzipped when it is gzip; a missing, unreadable or corrupt file is one RooflineError
    naming ``what`` it should have been ("report", "trace", "ncu CSV"). ``json``: a file whose first 64 KiB show it
    is not JSON (``not_json_head``) is refused from them, before it is read whole: it can be gigabytes; a UTF-8 byte
    order mark (a Windows editor's) is dropped, as json.load drops it and msgspec does not."""
    path = Path(path)
    if json:  # read twice (its head first): a pipe would lose what the sniff took
        refuse_stream(path, what)
    try:
        if json:
            problem = not_json_head(_sniffed_head(path))
            if problem:
                raise RooflineError(f"cannot parse {what} {path}: not JSON: {problem}")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RooflineError(f"{what} file not found: {path}") from None
    except OSError as exc:
        raise RooflineError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise RooflineError(f"cannot parse {what} {path}: {exc}") from None
    return raw[len(codecs.BOM_UTF8):] if json and raw.startswith(codecs.BOM_UTF8) else raw


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; gzip-compressed when the name ends in .gz."""
    return atomic_write_chunks(path, (data,))


# A file written in chunks has the disk start on each this many bytes as they come (``start_writeback``).
WRITEBACK_BYTES = 8 << 20


def start_writeback(fd: int, offset: int, nbytes: int) -> None:
    """Have the disk start writing ``nbytes`` of ``fd`` from ``offset`` now, without waiting for it (Linux's
    sync_file_range, SYNC_FILE_RANGE_WRITE; nothing elsewhere). The fsync that ends an atomic write then has little
    left to wait for: on the 1 M-event trace, report.json's 166 MB took ~0.1 s of fsync, the command's last tenth of
    a second with the CPU idle. The fsync is still what makes the file durable."""
    call = _sync_file_range()
    if call is not None:
        call(fd, offset, nbytes, _SYNC_FILE_RANGE_WRITE)


_SYNC_FILE_RANGE_WRITE = 2
_SFR: Any = False


def _sync_file_range() -> Any:
    global _SFR
    if _SFR is False:
        _SFR = None
        if sys.platform.startswith("linux"):
            import ctypes

            try:
                call = ctypes.CDLL(None, use_errno=True).sync_file_range
            except (OSError, AttributeError):
                pass
            else:
                call.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
                call.restype = ctypes.c_int
                _SFR = call
    return _SFR


def atomic_write_chunks(path: str | os.PathLike[str], chunks: Iterable[bytes]) -> Path:
    """``atomic_write_bytes`` of the concatenated ``chunks``, written as they come: a report of 100,000+ ops never
    sits in memory whole as JSON.

    A symlink is written through (its target replaced, the link kept); an existing file that is not a regular one
    (/dev/stdout, a FIFO, a device) is written into directly: replacing it would swap the device node or pipe for
    a plain file (as root, `--json /dev/full` did). A write that fails (a full disk, a quota) is a RooflineError
    and leaves the previous file as it was."""
    path = Path(path)
    if path.suffix == ".gz":
        chunks = _gzipped(chunks)
    if _is_special(path) or _through_proc(path):
        return _write_in_place(path, chunks)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise RooflineError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            written = flushed = 0
            for chunk in chunks:
                fh.write(chunk)
                written += len(chunk)
                if written - flushed >= WRITEBACK_BYTES:
                    fh.flush()
                    start_writeback(fh.fileno(), flushed, written - flushed)
                    flushed = written
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise RooflineError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
    return path


def _gzipped(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """``chunks`` gzip-compressed as they come (level 6), so a large file is never whole in memory, compressed or
    not; the header carries no time, so the same content gives the same bytes."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    for chunk in chunks:
        out = compressor.compress(chunk)
        if out:
            yield out
    yield compressor.flush()


def _is_special(path: Path) -> bool:
    """An existing file (symlinks followed) that is not a regular file: a device, a FIFO, a socket."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _through_proc(path: Path) -> bool:
    """/dev/stdout, /dev/fd/N, /proc/self/fd/N: a descriptor of this process, a regular file when stdout is
    redirected to one (`--json /dev/stdout > c.json`), which a rename beside it would not reach."""
    try:
        first_hop = os.readlink(path) if path.is_symlink() else ""
        return first_hop.startswith("/proc/") or os.path.realpath(path.parent).startswith("/proc/")
    except OSError:
        return False


def _write_in_place(path: Path, chunks: Iterable[bytes]) -> Path:
    try:
        with open(path, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
    except BrokenPipeError:  # `-o /dev/stdout | head`: the reader had enough, which is no error (cli.main)
        raise
    except OSError as exc:
        raise RooflineError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def _umask() -> int:
    """mkstemp creates 0600 files; a report should get the permissions any other new file would."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode())


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike[str], owned: Iterable[str]) -> Iterator[Path]:
    """Fill a directory whole or not at all: yields a temporary sibling to write into; on success its files take
    their places in ``path`` together, on any error (Ctrl-C included) it is removed and ``path`` is as it was.

    ``owned``: the names this kind of output writes. When ``path`` holds nothing else it is swapped for the new
    directory (two renames); otherwise the new files replace their namesakes one rename each and owned names the
    run did not write (a previous run's trace beside this run's report) are removed. Ctrl-C is held off while the
    renames run, so no mix of two runs is ever left behind.
    """
    target = Path(path)
    check_output_dir(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    except OSError as exc:
        raise RooflineError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        with _sigint_held():
            _commit(tmp, target, set(owned))
    except OSError as exc:  # a full disk or a quota while filling it; raised by a renderer's own write, too
        raise RooflineError(f"cannot write {target}: {exc.strerror or exc}") from None
    except RooflineError as exc:  # a file's own atomic write: name where the user asked for it, not the scratch
        raise RooflineError(str(exc).replace(str(tmp), str(target))) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_output_dir(path: str | os.PathLike[str]) -> Path:
    """Refuse, before any work, an output directory that cannot be one (an existing file, a file on its way)."""
    target = Path(path)
    if str(path) == "":
        raise RooflineError("the output directory name is empty")
    if target.exists() and not target.is_dir():
        raise RooflineError(f"output directory {target} is an existing file")
    if target.is_dir() and not os.access(target, os.W_OK | os.X_OK):
        raise RooflineError(f"output directory {target} is not writable")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise RooflineError(f"output directory {target}: {parent} is a file")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise RooflineError(f"output directory {target}: {parent} is not writable")
            break
    return target


def check_output_file(path: str | os.PathLike[str]) -> Path:
    """Refuse, before any work, an output file name that is a directory or whose folder cannot be made."""
    target = Path(path)
    if str(path) == "" or target.is_dir():
        raise RooflineError(f"output file {str(path)!r} is a directory" if str(path) else "the output file name is empty")
    if _is_special(target):  # /dev/stdout, a FIFO: written in place, its folder need not be writable
        if not os.access(target, os.W_OK):
            raise RooflineError(f"output file {target} is not writable")
        return target
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    check_output_dir(target.parent if str(target.parent) else ".")
    return Path(path)


_deferred_removals: list[str] | None = None


def defer_tree_removals() -> None:
    """From now on ``remove_tree`` leaves its trees to a detached ``rm -rf`` started as the process exits: for the
    console entry point, whose process ends with the command (roofline/quickexit.py)."""
    global _deferred_removals
    if _deferred_removals is None and shutil.which("rm") is not None:
        _deferred_removals = []
        atexit.register(_start_removals)


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Remove a directory tree the command no longer needs (the previous run's files an output replaced, renamed
    out of its way): now, or after ``defer_tree_removals``, by a detached process at exit, so the command does not
    wait while the OS frees them (a 166 MB report.json: ~0.05 s)."""
    if _deferred_removals is None:
        shutil.rmtree(path, ignore_errors=True)
    else:
        _deferred_removals.append(os.fspath(path))


def _start_removals() -> None:
    """At exit (also after an error): the deferred removals in one detached process, else here."""
    paths = list(_deferred_removals or ())
    if not paths:
        return
    _deferred_removals[:] = []
    try:
        subprocess.Popen(["rm", "-rf", "--", *paths], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        for path in paths:
            shutil.rmtree(path, ignore_errors=True)


def _commit(tmp: Path, target: Path, owned: set[str]) -> None:
    target = target.resolve()
    new = {entry.name for entry in tmp.iterdir()}
    if not target.exists():
        os.rename(tmp, target)
        return
    old = {entry.name for entry in target.iterdir()}
    if old <= owned and target != Path.cwd().resolve():
        aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        os.rename(target, aside / target.name)
        os.rename(tmp, target)
        remove_tree(aside)
        return
    for name in sorted(new):
        dest = target / name
        if dest.is_dir() and not dest.is_symlink():
            shutil.rmtree(dest)
        os.replace(tmp / name, dest)
    for name in sorted((old & owned) - new):
        stale = target / name
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Defer Ctrl-C until the block is done (main thread only; elsewhere signals cannot be handled anyway)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[Any] = []
    previous = signal.signal(signal.SIGINT, lambda *frame: caught.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
        if caught:
            raise KeyboardInterrupt
