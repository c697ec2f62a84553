"""Streaming line reader: a buffered stream in, chunks of numbered lines with byte offsets out.

The reader holds its stream's buffer, one chunk of lines (about ``BLOCK_SIZE`` bytes) and
the line being read. A line longer than ``max_line_bytes`` is never held whole: its head
is kept for the reject record and the rest is skipped in pieces as it streams past.
Offsets count bytes of the decompressed stream; line numbers are 1-based.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate
from typing import Any, BinaryIO, NamedTuple, Protocol

from evalstream.errors import InputError

BLOCK_SIZE = 1 << 18  # 256 KiB, read buffer and chunk: measured faster and leaner than 1 MiB
DEFAULT_MAX_LINE_BYTES = 256 << 20
BOM = b"\xef\xbb\xbf"
Progress = Callable[[int, int | None], None]  # (bytes done, bytes in all or None)
# Enough bytes to show a reject's first 2,000 characters even if all are 4-byte UTF-8.
HEAD_BYTES = 8_000


class Chunk(NamedTuple):
    """A run of complete lines (without their newline) that starts at ``line`` and ``offset``."""

    line: int
    offset: int
    lines: list[bytes]

    def offsets(self) -> list[int]:
        """The byte offset of every line in the chunk."""
        return list(accumulate((len(x) + 1 for x in self.lines[:-1]), initial=self.offset))


class LongLine(NamedTuple):
    """A line over the size limit: its number, offset, full size and first bytes."""

    line: int
    offset: int
    size: int
    head: bytes
    ended: bool = True  # a newline follows it (the last line of a stream may have none)


class Readable(Protocol):
    """Anything with a buffered ``readline(limit) -> bytes``: what ``open_input`` and
    ``open_range`` return, gzip files, stdin, BytesIO."""

    def readline(self, size: int = -1, /) -> bytes: ...


def open_input(path: str) -> BinaryIO:
    """Open a dataset for binary reading: ``-`` is stdin; ``.gz`` and ``.zst`` are decompressed
    (and a compressed file cut short or damaged is an InputError, never a shorter dataset)."""
    try:
        if path == "-":
            return sys.stdin.buffer
        if path.endswith((".gz", ".zst")):
            from evalstream._files.compressed import open_compressed

            return open_compressed(path, BLOCK_SIZE)
        return open(path, "rb", buffering=BLOCK_SIZE)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


class HeldInput:
    """An input read more than once (``judge``'s two passes), held open so that every reading
    is of the same file, from the first byte.

    Reading it again by path read whatever the path named then: a states file replaced during
    a run (a new ``build`` renamed into place) gave pass 2 another file, and no state asked
    about got a verdict. A regular file is opened once and each reading starts on that
    descriptor; a file changed in place in between (its size or modification time) is an
    ``InputError``, as is one changed by the end (``check_unchanged``). Stdin and other
    streams (a FIFO, ``<(...)``) are copied once to a temporary file in ``spool_folder``,
    named for the run (``files.temporaries``) and removed as soon as it is opened, so not
    even ``kill -9`` leaves it behind."""

    def __init__(self, path: str, spool_folder: str | None = None) -> None:
        import errno
        import stat

        self.path = path
        self.spooled = False
        try:
            fd = 0 if path == "-" else os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            os.close(fd)
            raise InputError(f"cannot read {path}: {os.strerror(errno.EISDIR)}")
        if path == "-" or not stat.S_ISREG(mode):
            fd = self._spool(fd, spool_folder)
        self.fd = fd
        self._identity = _identity(fd)

    def _spool(self, source: int, folder: str | None) -> int:
        import shutil
        import tempfile

        from evalstream._files.temporaries import temp_file

        folder = folder or tempfile.gettempdir()
        fd, tmp = temp_file(folder, "evalstream-input-", ".jsonl")
        os.unlink(tmp)  # read through the descriptor only: nothing left to remove, ever
        self.spooled = True
        stream = sys.stdin.buffer if source == 0 else open(source, "rb")  # noqa: SIM115
        try:
            with open(fd, "wb", closefd=False) as out:
                shutil.copyfileobj(stream, out, 1 << 20)
        except OSError as exc:
            os.close(fd)
            raise InputError(f"cannot copy {self.path} to a temporary file in {folder} (it is "
                             f"read twice): {exc.strerror or exc}; set TMPDIR to a folder with "
                             "room.") from exc
        finally:
            if source != 0:
                stream.close()
        return fd

    def head(self, size: int) -> bytes:
        """The first ``size`` bytes as stored (not decompressed)."""
        return os.pread(self.fd, size, 0)

    def open(self) -> BinaryIO:
        """A new stream of the input from its first byte (``.gz``/``.zst`` decompressed);
        the caller closes it."""
        self.check_unchanged()
        raw = open(os.dup(self.fd), "rb", buffering=0)  # noqa: SIM115 - the caller closes it
        raw.seek(0)
        if self.path.endswith((".gz", ".zst")):
            from evalstream._files.compressed import open_compressed

            return open_compressed(self.path, BLOCK_SIZE, raw)
        return io.BufferedReader(raw, BLOCK_SIZE)

    def check_unchanged(self) -> None:
        """Raise InputError when the file was changed in place since it was opened."""
        if _identity(self.fd) != self._identity:
            raise InputError(
                f"{self.path} changed while it was read (its size or modification time is not "
                "what it was when the run began): a file is read twice, and both readings must "
                "be of the same bytes. Write a new file and rename it into place instead (the "
                "run then goes on with the file it opened); answers received are kept.")

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> HeldInput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_size, st.st_mtime_ns


def input_size(path: str) -> int | None:
    """The size in bytes of a plain input file, or None when it cannot be known up front."""
    if path == "-" or path.endswith((".gz", ".zst")):
        return None
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def read_chunks(
    stream: Readable,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    block_size: int = BLOCK_SIZE,
    first_line: int = 1,
    first_offset: int = 0,
    file_start: bool | None = None,
) -> Iterator[Chunk | LongLine]:
    """Yield the stream's lines in order, as Chunks of complete lines and LongLines.

    A Chunk holds lines until they add up to about ``block_size`` bytes. A UTF-8 byte
    order mark is removed from the start of the stream when it is the start of a file
    (``file_start``; by default, when it starts at offset 0). The last line needs no
    newline.
    """
    # Lines come from the buffered stream's C ``readline``, which copies each line once
    # (splitting blocks copied every byte three times: 4x slower per GB). Lines longer than
    # a piece are assembled in Python, so a line over the limit is never held whole.
    readline = stream.readline
    piece = min(max_line_bytes + 1, _PIECE)
    line_no, offset = first_line, first_offset
    lines: list[bytes] = []
    held = 0  # bytes of the lines in ``lines``, newlines included
    bom = first_offset == 0 if file_start is None else file_start
    while True:
        asked = piece + len(BOM) if bom else piece
        line = _read(readline, asked, offset)
        goes_on = len(line) == asked and line[-1] != 10  # 10: b"\n"
        if bom:
            bom = False
            if line.startswith(BOM):
                line = line[len(BOM):]
                offset += len(BOM)
                if not line:
                    continue  # the stream was only a BOM: no line
        if not line:
            break
        long_line = None
        if goes_on:
            line, long_line = _rest_of_line(readline, line, max_line_bytes,
                                            line_no + len(lines), offset)
        elif len(line) - (line[-1] == 10) > max_line_bytes:
            long_line = _long_line(line_no + len(lines), offset, line, len(line),
                                   line[-1] == 10)
        if long_line is not None:
            if lines:
                yield Chunk(line_no, offset - held, lines)
                line_no += len(lines)
                lines, held = [], 0
            yield long_line
            line_no += 1
            offset += long_line.size + long_line.ended
            continue
        lines.append(line[:-1] if line[-1] == 10 else line)
        offset += len(line)
        held += len(line)
        if held >= block_size:
            yield Chunk(line_no, offset - held, lines)
            line_no += len(lines)
            lines, held = [], 0
    if lines:
        yield Chunk(line_no, offset - held, lines)


def read_files(paths: list[str], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
               opener: Callable[[str], BinaryIO] | None = None) -> Iterator[Chunk | LongLine]:
    """The lines of several files read in order as one input: each file's lines are its own
    (its last line ends with the file, a BOM at its start is dropped), line numbers and
    byte offsets run on from file to file (offsets count each file's decompressed bytes)."""
    line_no, offset = 1, 0
    for path in paths:
        stream = _Counted((opener or open_input)(path))
        try:
            for item in read_chunks(stream, max_line_bytes, first_line=line_no,
                                    first_offset=offset, file_start=True):
                yield item
                line_no = item.line + (len(item.lines) if type(item) is Chunk else 1)
        finally:
            stream.close()
        offset += stream.bytes


class _Counted:
    """A stream's ``readline``, counting the bytes it returns."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream, self.bytes = stream, 0

    def readline(self, size: int = -1, /) -> bytes:
        data = self.stream.readline(size)
        self.bytes += len(data)
        return data

    def close(self) -> None:
        self.stream.close()


def progress(items: Iterable[Chunk | LongLine], on_progress: Progress,
             size: int | None) -> Iterator[Chunk | LongLine]:
    """``items`` as they are, calling ``on_progress`` with the bytes done after each."""
    for item in items:
        yield item
        if type(item) is Chunk:
            done = item.offset + sum(map(len, item.lines)) + len(item.lines)
        else:
            assert type(item) is LongLine
            done = item.offset + item.size + 1
        on_progress(done, size)


_PIECE = 1 << 20  # longer lines are read in pieces of this size


def _read(readline: Callable[[int], bytes], limit: int, offset: int) -> bytes:
    try:
        return readline(limit)
    except (OSError, EOFError, ValueError) as exc:
        raise InputError(f"cannot read input after byte {offset}: {exc}") from exc


def _rest_of_line(readline: Callable[[int], bytes], start: bytes, max_line_bytes: int,
                  line_no: int, offset: int) -> tuple[bytes, LongLine | None]:
    """The whole line that begins with ``start`` (newline included, if it has one), or a
    LongLine when it is over the limit: its pieces are then dropped as they stream past."""
    used = len(start)  # ``start`` has no newline: the line is at least this long
    pieces: list[bytes] | None = [start] if used <= max_line_bytes else None
    head = start[:HEAD_BYTES]
    ended = False
    while not ended:
        part = _read(readline, _PIECE, offset + used)
        if not part:
            break
        used += len(part)
        ended = part[-1] == 10
        if len(head) < HEAD_BYTES:
            head += part[:HEAD_BYTES - len(head)]
        if pieces is not None:
            if used - ended > max_line_bytes:
                pieces = None  # over the limit: keep only the head
            else:
                pieces.append(part)
    if pieces is not None:
        return b"".join(pieces), None
    return b"", _long_line(line_no, offset, head, used, ended)


def _long_line(line_no: int, offset: int, head: bytes, used: int, ended: bool) -> LongLine:
    """The LongLine that took ``used`` bytes (its newline too, when ``ended``) and begins
    with ``head``."""
    size = used - ended
    return LongLine(line_no, offset, size, head[:min(HEAD_BYTES, size)], ended)


# -- byte ranges: a part of a file, read by position -----------------------------------------
# One mechanism for both engines: a worker process reads a shared file descriptor with
# ``preadv`` (no shared file position), a cluster task an fsspec file with ``seek`` and
# ``read`` (files/store.py). Everything below takes either as ``source``.
Source = int | BinaryIO
_SCAN = 1 << 16


def _reads(source: Source) -> Callable[[memoryview, int], int]:
    """Fills a view from a file offset and returns the bytes read (0 at the end)."""
    if isinstance(source, int):
        return lambda view, at: os.preadv(source, [view], at)

    def read_into(view: memoryview, at: int) -> int:
        source.seek(at)
        data = source.read(len(view))
        view[:len(data)] = data
        return len(data)
    return read_into


def open_range(source: Source, start: int, end: int,
               buffer_size: int = BLOCK_SIZE) -> io.BufferedReader:
    """Bytes [start, end) of ``source`` as a buffered stream (``source`` stays open)."""
    return io.BufferedReader(RangeReader(source, start, end), buffer_size)


class RangeReader(io.RawIOBase):
    """Reads bytes [start, end) of ``source`` (a file descriptor or a seekable file)."""

    def __init__(self, source: Source, start: int, end: int) -> None:
        self._read_into, self._pos, self._end = _reads(source), start, end

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = min(len(buffer), self._end - self._pos)
        if size <= 0:
            return 0
        with memoryview(buffer) as view:
            got = self._read_into(view[:size], self._pos)
        self._pos += got
        return got


def range_tasks(fd: int, size: int, range_bytes: int) -> list[tuple[int, int, int]]:
    """(index, start, end) of consecutive byte ranges of the open file ``fd`` that cover its
    ``size`` bytes, about ``range_bytes`` each, every one starting at a line start (a range
    owns the lines whose first byte lies in it).

    Found once, in the parent, in one pass: each boundary moves forward to the next line
    start, and a search that runs past the following nominal boundaries (a line longer than
    a range) makes those ranges empty, so they are dropped instead of searched again. Each
    worker searching from its own boundary scanned a 2 GiB line once per range: 54 s
    against 3.2 s in one process."""
    if size <= 0:
        return []
    starts = [0]
    for nominal in range(range_bytes, size, range_bytes):
        if nominal <= starts[-1]:
            continue  # inside the line the last search crossed
        start = line_start(fd, nominal, size)
        if start >= size:
            break
        starts.append(start)
    bounds = [*starts, size]
    return [(i, a, b) for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))]


def line_start(source: Source, pos: int, limit: int) -> int:
    """The start of the first line that begins at or after ``pos`` and before ``limit``, or
    ``limit`` when none does. Never reads past ``limit``, and holds one block at a time
    however long the line it crosses."""
    if pos <= 0:
        return 0
    at = pos - 1
    with open_range(source, at, limit, _SCAN) as stream:
        while piece := stream.readline(_SCAN):
            at += len(piece)
            if piece.endswith(b"\n"):
                return at
    return limit


def read_line_at(source: Source, offset: int, limit: int) -> bytes:
    """The line at ``offset`` (without its newline), at most ``limit`` bytes of it."""
    with open_range(source, offset, offset + limit, _SCAN) as stream:
        line = stream.readline()
    return line[:-1] if line.endswith(b"\n") else line


def chunks_of(lines: Iterable[bytes | str], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
              block_size: int = BLOCK_SIZE) -> Iterator[Chunk | LongLine]:
    """Lines given one by one (``bytes`` or ``str``, with or without their newline) as the
    Chunks and LongLines ``read_chunks`` makes of a file holding them."""
    line_no, offset = 1, 0
    held: list[bytes] = []
    size = 0
    for item in lines:
        line = item.encode("utf-8", "surrogatepass") if isinstance(item, str) else item
        if line.endswith(b"\n"):
            line = line[:-1]
        if len(line) > max_line_bytes:
            if held:
                yield Chunk(line_no, offset - size, held)
                line_no, held, size = line_no + len(held), [], 0
            yield LongLine(line_no, offset, len(line), line[:HEAD_BYTES])
            line_no += 1
            offset += len(line) + 1
            continue
        held.append(line)
        size += len(line) + 1
        offset += len(line) + 1
        if size >= block_size:
            yield Chunk(line_no, offset - size, held)
            line_no, held, size = line_no + len(held), [], 0
    if held:
        yield Chunk(line_no, offset - size, held)
