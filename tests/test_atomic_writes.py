"""roofline.io's chunked atomic write: the same bytes, and the disk asked to start on each WRITEBACK_BYTES as they
come (ranges back to back, each flushed first), so the closing fsync has little left to wait for."""

import os

import roofline.io as rio


def test_a_chunked_write_starts_writeback_on_each_stretch_and_writes_the_same_bytes(tmp_path, monkeypatch):
    calls = []
    real = rio.start_writeback

    def record(fd, offset, nbytes):
        assert os.fstat(fd).st_size >= offset + nbytes  # flushed before the disk is asked
        calls.append((offset, nbytes))
        real(fd, offset, nbytes)

    monkeypatch.setattr(rio, "WRITEBACK_BYTES", 1 << 20)
    monkeypatch.setattr(rio, "start_writeback", record)
    chunks = [bytes([i]) * (300 << 10) for i in range(20)]  # 6 MB in 300 KB chunks
    path = rio.atomic_write_chunks(tmp_path / "report.json", chunks)
    assert path.read_bytes() == b"".join(chunks)
    assert calls and calls[0][0] == 0
    assert all(a + n == b for (a, n), (b, _) in zip(calls, calls[1:]))
    assert all(n >= 1 << 20 for _, n in calls)
    assert calls[-1][0] + calls[-1][1] > len(b"".join(chunks)) - (1 << 20)


def test_start_writeback_is_harmless_on_any_file(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(b"abc")
    with open(path, "rb+") as fh:
        rio.start_writeback(fh.fileno(), 0, 3)
    assert path.read_bytes() == b"abc"


def test_start_writeback_asks_the_kernel_to_write_the_range(monkeypatch):
    """Where sync_file_range exists it is called on the range (SYNC_FILE_RANGE_WRITE: start writing, do not wait)."""
    calls = []
    monkeypatch.setattr(rio, "_sync_file_range", lambda: lambda *args: calls.append(args))
    rio.start_writeback(7, 4096, 1 << 20)
    assert calls == [(7, 4096, 1 << 20, 2)]
