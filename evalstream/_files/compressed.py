"""Compressed inputs (.gz, .zst) read to their very end, or not at all.

A compressed file that ends early, holds a damaged block, or has bytes after its last
frame that are not a frame must never read as a shorter, complete dataset: every such
file raises ``InputError`` naming the file and how far it was read, so the run writes
nothing. ``.gz`` members are read by the standard library's ``gzip`` (which notices a
cut member and a bad CRC; its ``zlib.error`` and ``EOFError`` become InputError here).

``.zst`` frames are read by the standard library's zstd decompressor (``compression.zstd``,
on Python < 3.14 its backport ``backports.zstd``), one frame at a time. Measured here:
python-zstandard's ``stream_reader`` returns a file cut at 60% of its bytes as 20,812
complete-looking lines and no error, and its ``decompressobj`` has no output limit (one
32 KB piece of a 1 GiB line came back as 1 GiB at once); this decompressor takes a
``max_length``, so memory stays one read buffer, and says whether a frame ended (``eof``).
"""

from __future__ import annotations

import gzip
import io
import zlib
from typing import Any, BinaryIO

from evalstream.errors import InputError

READ_BYTES = 1 << 17  # compressed bytes read from the file at a time
_CUT = "the file was cut short (an interrupted write or copy?) or has stray bytes at its end"
_DAMAGED = "the file is damaged, or is not what its name says"


def open_compressed(path: str, buffer_size: int, raw: Any = None) -> BinaryIO:
    """The decompressed bytes of a .gz or .zst file, as a buffered stream whose reads
    raise InputError when the file is cut short, damaged or has trailing garbage. ``raw``:
    the file's stored bytes already opened (a URL read through fsspec), closed with the
    stream; by default the local file ``path`` is opened."""
    if raw is None:
        raw = open(path, "rb", buffering=0)  # noqa: SIM115 - closed with the stream
    try:
        if path.endswith(".gz"):
            reader: io.RawIOBase = _GzipMembers(path, raw)
        else:
            reader = _ZstdFrames(path, raw)
    except BaseException:
        raw.close()
        raise
    return io.BufferedReader(reader, buffer_size)


class _Compressed(io.RawIOBase):
    """What the .gz and .zst readers share: the file, and how far it was read."""

    def __init__(self, path: str, raw: Any) -> None:
        self._path, self._raw = path, raw
        self._in = 0  # compressed bytes read from the file
        self._out = 0  # decompressed bytes handed on

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        with memoryview(buffer) as view, view.cast("B") as out:
            data = self._read(len(out))
            out[:len(data)] = data
        self._out += len(data)
        return len(data)

    def _read(self, size: int) -> bytes:
        raise NotImplementedError

    def _fail(self, what: str, why: str) -> InputError:
        return InputError(f"cannot read {self._path}: {what}, at byte {self._in:,} of the file "
                          f"({self._out:,} bytes of data read): {why}. Use a whole copy of the "
                          "file.")

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _GzipMembers(_Compressed):
    """Every member of a .gz file, through the standard library's ``gzip``."""

    def __init__(self, path: str, raw: Any) -> None:
        super().__init__(path, raw)
        self._gzip = gzip.GzipFile(fileobj=raw, mode="rb")

    def _read(self, size: int) -> bytes:
        try:
            data = self._gzip.read1(size)
        except EOFError:
            raise self._fail("the gzip data ends inside a member", _CUT) from None
        except (OSError, zlib.error) as exc:
            raise self._fail(f"the gzip data is damaged ({exc})", _DAMAGED) from None
        finally:
            self._in = self._raw.tell()
        return data

    def close(self) -> None:
        if not self.closed:
            self._gzip.close()
        super().close()


class _ZstdFrames(_Compressed):
    """Every frame of a .zst file, one decompressor a frame (as a zstd stream may be a run
    of frames: appended files, parallel compressors)."""

    def __init__(self, path: str, raw: Any) -> None:
        super().__init__(path, raw)
        try:
            from compression import zstd
        except ImportError:  # Python < 3.14
            from backports import zstd
        self._new, self._error = zstd.ZstdDecompressor, zstd.ZstdError
        self._frame: Any = None  # the decompressor of the frame being read; None between frames
        self._left = b""  # compressed bytes read but not yet given to a decompressor

    def _more(self) -> bytes:
        block: bytes = self._raw.read(READ_BYTES)
        self._in += len(block)
        return block

    def _read(self, size: int) -> bytes:
        while True:
            frame = self._frame
            if frame is None:
                block = self._left or self._more()
                self._left = b""
                if not block:
                    return b""  # the end of the file, at the end of a frame
                frame = self._frame = self._new()
            elif frame.needs_input:
                block = self._more()
                if not block:
                    raise self._fail("the zstd data ends inside a frame", _CUT)
            else:
                block = b""  # output is still waiting inside the decompressor
            try:
                data: bytes = frame.decompress(block, size)
            except self._error as exc:
                raise self._fail(f"a zstd frame is damaged ({exc})", _DAMAGED) from None
            if frame.eof:
                self._left, self._frame = frame.unused_data, None
            if data:
                return data
