"""Files named by path, glob or URL, read and written through fsspec: what a cluster reads.

A run on a cluster reads its inputs where they lie (a local or shared path, ``s3://``,
``gs://``, any fsspec URL) and writes its part files where every worker can reach them.
This module is the only one that talks to fsspec; fsspec is imported on first use, and a
missing one is a usage error naming the extra that brings it.

Inputs: ``resolve`` turns the arguments into the files read, in order (a glob's matches
sorted by name, a file that exists taken literally even if its name has ``*`` in it). Each
file is read either whole (``.gz``/``.zst``: one task) or in byte ranges with evalstream's
own line rule (a range owns the lines whose first byte lies in it), never with fsspec's
block splitting. The ranges of a local file are line-aligned once, in the client
(``files.lines.range_tasks``, as ``--workers`` does); those of a URL by each task from its
own bytes (``files.lines.line_start``), see ``tasks_of``.
"""

from __future__ import annotations

import glob
import io
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from evalstream._files.lines import (
    Chunk,
    input_size,
    line_start,
    open_range,
    range_tasks,
    read_chunks,
    read_line_at,
)
from evalstream.errors import InputError, OutputError, UsageError

EXTRA = "pip install 'evalstream[dask]'"
COMPRESSED = (".gz", ".zst")
_GLOB = "*?["


def fsspec_module() -> Any:
    """fsspec, or a usage error naming the extra that installs it."""
    try:
        import fsspec
    except ImportError:
        raise UsageError(f"reading or writing URLs and globs on a cluster needs fsspec; "
                         f"install it with {EXTRA}.") from None
    return fsspec


def is_url(path: str) -> bool:
    """Whether ``path`` names a file through a protocol (``s3://...``), not a local path."""
    head, sep, _ = path.partition("://")
    return bool(sep) and head.isidentifier() and head != "file"


def filesystem(path: str) -> tuple[Any, str]:
    """The fsspec filesystem of ``path`` and the path within it (a local path is absolute)."""
    fsspec = fsspec_module()
    if not is_url(path):
        path = os.path.abspath(path.removeprefix("file://"))
    try:
        fs, inner = fsspec.core.url_to_fs(path)
    except (ImportError, ValueError) as exc:
        protocol = path.partition("://")[0]
        raise UsageError(f"cannot use {path}: {exc}. A URL of `{protocol}://` needs the "
                         f"package that implements it (s3fs for s3://, gcsfs for gs://, "
                         f"adlfs for az://).") from None
    return fs, inner


def url(fs: Any, inner: str) -> str:
    """The URL that names ``inner`` of ``fs`` again (a plain path for local files)."""
    if _is_local(fs):
        return str(inner)
    return str(fs.unstrip_protocol(inner))


def _is_local(fs: Any) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol in ("file", "local")


@dataclass(frozen=True)
class InputFile:
    """One input file: its URL (or local path), its size in bytes, and whether it is read
    whole (compressed: its decompressed size is known only once read)."""

    url: str
    size: int
    compressed: bool


def resolve(arguments: list[str]) -> list[InputFile]:
    """The files that ``arguments`` name, in order: each is a path or URL, or a glob whose
    matches come in name order. Raises InputError for a name that matches nothing. Local
    paths need no fsspec."""
    files: list[InputFile] = []
    for argument in arguments:
        if is_url(argument):
            files += _resolve_url(argument)
            continue
        path = argument.removeprefix("file://")
        matches = [path]
        if any(c in path for c in _GLOB) and not os.path.exists(path):
            matches = sorted(p for p in glob.glob(path) if not os.path.isdir(p))
            if not matches:
                raise InputError(f"no file matches {argument}.")
        for match in matches:
            try:
                info = os.stat(match)
            except OSError as exc:
                raise InputError(f"cannot read {match}: {exc.strerror or exc}") from None
            if stat.S_ISDIR(info.st_mode):
                raise InputError(f"cannot read {match}: it is a folder; name its files (a glob "
                                 f"such as {match.rstrip('/')}/*.jsonl).")
            files.append(InputFile(match, info.st_size, match.endswith(COMPRESSED)))
    return files


def _resolve_url(argument: str) -> list[InputFile]:
    fs, inner = filesystem(argument)
    files = []
    try:
        matches = [inner]
        if any(c in inner for c in _GLOB) and not fs.isfile(inner):
            matches = sorted(p for p in fs.glob(inner) if fs.isfile(p))
            if not matches:
                raise InputError(f"no file matches {argument}.")
        for match in matches:
            info = fs.info(match)
            if info.get("type") == "directory":
                raise InputError(f"cannot read {argument}: it is a folder; name its files (a "
                                 f"glob such as {argument.rstrip('/')}/*.jsonl).")
            files.append(InputFile(url(fs, match), int(info.get("size") or 0),
                                   match.endswith(COMPRESSED)))
    except FileNotFoundError:
        raise InputError(f"cannot read {argument}: no such file.") from None
    except OSError as exc:
        raise InputError(f"cannot read {argument}: {exc.strerror or exc}") from None
    return files


def input_paths(arguments: list[str]) -> list[str]:
    """The files that input arguments name, in order, as build reads its inputs: one path (or
    ``-``, stdin) as given; several, a glob or a URL resolved (``resolve``). Raises UsageError
    for stdin among several (``check_stdin``)."""
    files = resolve_inputs(arguments)
    return list(arguments) if files is None else [f.url for f in files]


def resolve_inputs(arguments: list[str], engine: str = "local") -> list[InputFile] | None:
    """The files that a command's input arguments name (``resolve``), or None where it reads
    its one argument as given (a path, or ``-``) in this machine's processes; stdin checked
    first (``check_stdin``). The one rule of build, validate and stats, and of
    ``input_paths``."""
    check_stdin(arguments, engine)
    if engine == "dask" or len(arguments) > 1 or needs_resolving(arguments[0]):
        return resolve(arguments)
    return None


def input_volume(files: list[InputFile] | None, path: str) -> int | None:
    """At least how many bytes a run reads: the one plain file's size, or the resolved
    files' sizes summed (a compressed file's, which its text exceeds); None when it cannot
    be known (stdin, one compressed file). A run that counts every state tells its
    tokenizer (``Tokenizer.expect``), wherever it runs."""
    return input_size(path) if files is None else sum(f.size for f in files)


def check_stdin(arguments: list[str], engine: str = "local") -> None:
    """UsageError unless ``-`` (stdin) is absent, or the one input argument of a run in this
    machine's processes: the one rule of every command that reads cases (through
    ``resolve_inputs``)."""
    if "-" not in arguments:
        return
    if len(arguments) > 1:
        raise UsageError("- (stdin) can only be the one input: it is read once, as it comes, "
                         "and cannot be read in order with files; save it to a file and give "
                         "that file's path among the others.")
    if engine == "dask":
        raise UsageError("--engine dask reads files, not stdin (its tasks read byte ranges of "
                         "each file); save it to a file and give that file's path.")


def needs_resolving(argument: str) -> bool:
    """Whether an input argument is a URL or a glob rather than one local file's path."""
    return is_url(argument) or (any(c in argument for c in _GLOB)
                                and not os.path.exists(argument))


# -- reading -------------------------------------------------------------------------------------
COPY_BLOCK = 8 << 20


def copy_range(path: str, start: int, end: int, write: Callable[[bytes], object]) -> None:
    """Hand bytes [start, end) of the file at ``path`` (a local path or URL) to ``write``,
    ``COPY_BLOCK`` at a time: a part is never held whole. A file that ends before ``end``
    is an OutputError (a part its writer said was longer), never a shorter output."""
    fs, inner = filesystem(path)
    with fs.open(inner, "rb") as src:
        src.seek(start)
        while start < end:
            block = src.read(min(COPY_BLOCK, end - start))
            if not block:
                raise OutputError(f"cannot join {path}: it ends at byte {start:,}, before "
                                  f"byte {end:,}; was it changed during the run?")
            write(block)
            start += len(block)


def open_file(path: str) -> BinaryIO:
    """The file at ``path`` (a local path or URL) for reading, decompressed when its name
    ends in ``.gz`` or ``.zst``."""
    try:
        if is_url(path):
            fs, inner = filesystem(path)
            # fsspec's files have no ``readline(limit)``: read through a buffered reader.
            raw: BinaryIO = io.BufferedReader(_Raw(fs.open(inner, "rb")), 1 << 18)
        else:
            raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    except FileNotFoundError:
        raise InputError(f"cannot read {path}: no such file (every worker must reach it: use "
                         "a shared folder or an object store URL).") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if path.endswith(COMPRESSED):
        # As one process reads them: a file cut short or damaged is an InputError.
        from evalstream._files.compressed import open_compressed

        return open_compressed(path, 1 << 18, raw)
    return raw


class _Raw(io.RawIOBase):
    """An fsspec file as a raw stream (``readinto``, ``seek``) for ``io.BufferedReader``."""

    def __init__(self, f: Any) -> None:
        self._f = f

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return int(self._f.readinto(buffer))

    def seek(self, offset: int, whence: int = 0) -> int:
        return int(self._f.seek(offset, whence))

    def tell(self) -> int:
        return int(self._f.tell())

    def close(self) -> None:
        self._f.close()
        super().close()


def read_head(path: str, size: int) -> bytes:
    """The first ``size`` bytes of the file at ``path`` as stored (not decompressed)."""
    try:
        if is_url(path):
            fs, inner = filesystem(path)
            return bytes(fs.cat_file(inner, start=0, end=size))
        with open(path, "rb") as f:
            return f.read(size)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None


# -- tasks: what one task of a cluster run reads -------------------------------------------------
@dataclass(frozen=True)
class Task:
    """Bytes [start, end) of one input file, line-aligned already (``aligned``) or nominal
    (the task moves both ends to line starts: ``TaskReader``), or a whole compressed file
    (``whole``: one task)."""

    index: int
    file: int
    url: str
    start: int
    end: int
    size: int
    whole: bool
    aligned: bool = False

    def __str__(self) -> str:
        return self.url if self.whole else f"bytes {self.start:,}-{self.end:,} of {self.url}"

    @property
    def nominal_bytes(self) -> int:
        """The bytes this task stands for, for progress (a whole file: its stored size)."""
        return self.size if self.whole else self.end - self.start


MAX_TASKS = 4096  # ranges grow past their size so that a run has at most about this many


def range_size(total: int, smallest: int) -> int:
    """The range size for ``total`` input bytes: ``smallest``, or more so that there are at
    most MAX_TASKS ranges (the scheduler's cost grows with the tasks; a task's memory does
    not grow with its range, which is read in pieces)."""
    return max(smallest, -(-total // MAX_TASKS))


def tasks_of(files: list[InputFile], range_bytes: int) -> list[Task]:
    """The tasks that read ``files`` in order: ranges of about ``range_bytes`` of plain
    files, one task a compressed file.

    A local file's ranges are line-aligned here, once, in one linear pass
    (``files.lines.range_tasks``, as ``--workers`` does: a line longer than many ranges is
    scanned once, and ranges inside it are dropped). A URL's ranges stay nominal and each
    task aligns its own (``TaskReader``): reading every boundary from an object store in
    this process would cost a request per range before any task starts, and a task's
    search never reads past its own range, so a long line is still scanned once in all."""
    tasks: list[Task] = []
    for f, file in enumerate(files):
        if file.compressed:
            tasks.append(Task(len(tasks), f, file.url, 0, -1, file.size, True))
            continue
        if not is_url(file.url):
            try:
                fd = os.open(file.url, os.O_RDONLY)
            except OSError as exc:
                raise InputError(f"cannot read {file.url}: {exc.strerror or exc}") from None
            try:
                ranges = range_tasks(fd, file.size, range_bytes)
            finally:
                os.close(fd)
            for _, a, b in ranges:
                tasks.append(Task(len(tasks), f, file.url, a, b, file.size, False, True))
            continue
        bounds = [*range(0, file.size, range_bytes), file.size]
        for a, b in zip(bounds, bounds[1:], strict=False):
            tasks.append(Task(len(tasks), f, file.url, a, b, file.size, False))
    return tasks


class TaskReader:
    """Opens a task's bytes: ``start`` is its first line's offset in the file, ``readline``
    reads its lines (decompressed for a whole compressed file), ``bytes`` counts what was
    read; the first task of a file checks the file's first bytes with ``check_head``."""

    def __init__(self, task: Task, check_head: Any = None) -> None:
        self._f = open_file(task.url)
        try:
            if task.start == 0 and check_head is not None:
                check_head(read_head(task.url, _HEAD), task.url)
            if task.whole:
                self.start, self._stream = 0, self._f
            elif task.aligned:
                self.start = task.start
                self._stream = open_range(self._f, task.start, task.end)
            else:
                # Each task finds its own first line, never reading past its range (a line
                # longer than many ranges is scanned once in all), and reads on to the
                # first line start at or after its end.
                self.start = line_start(self._f, task.start, task.end)
                end = line_start(self._f, task.end, task.size) if self.start < task.end \
                    else self.start
                self._stream = open_range(self._f, self.start, end)
        except BaseException:
            self._f.close()
            raise
        self.bytes = 0

    def readline(self, size: int = -1, /) -> bytes:
        data: bytes = self._stream.readline(size)
        self.bytes += len(data)
        return data

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> TaskReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_HEAD = 1 << 16


def lines_at(task: Task, offsets: list[int], max_line_bytes: int) -> list[bytes]:
    """The lines at ``offsets`` of a task's file (at most ``max_line_bytes + 1`` bytes of
    each; a whole compressed file is read once from its start, it cannot seek)."""
    with open_file(task.url) as f:
        if not task.whole:
            return [read_line_at(f, at, max_line_bytes + 1) for at in offsets]
        wanted, found = set(offsets), {}
        for item in read_chunks(f, max_line_bytes):
            if type(item) is Chunk:
                for at, line in zip(item.offsets(), item.lines, strict=True):
                    if at in wanted:
                        found[at] = line
        return [found.get(at, b"") for at in offsets]


class FileOffsets:
    """Where each file starts in the input read as one stream, from the tasks taken in order
    (a compressed file's size is known once its task has read it)."""

    def __init__(self) -> None:
        self._base, self._file, self._size = 0, 0, 0

    def base(self, task: Task, end: int) -> int:
        """The offset of ``task``'s file; ``end``: where the task stopped reading."""
        if task.file != self._file:
            self._base += self._size
            self._file = task.file
        self._size = end if task.whole else task.size
        return self._base

    @property
    def total(self) -> int:
        """The bytes of every file taken so far."""
        return self._base + self._size


# -- writing -------------------------------------------------------------------------------------
class PartFile:
    """A file written whole or not at all, at a local path or URL: a local file is written
    under another name and renamed by ``commit``, an object is one upload that completes on
    ``commit``. Two runs of the same task (a worker thought dead) leave the same bytes."""

    def __init__(self, path: str) -> None:
        self.path, self.size = path, 0
        self._tmp: str | None = None
        try:
            if is_url(path):
                fs, inner = filesystem(path)
                self._f: Any = fs.open(inner, "wb")
            else:
                self._tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
                self._f = open(self._tmp, "wb")  # noqa: SIM115 - closed by commit or abort
        except OSError as exc:
            raise self._error(exc) from None

    def _error(self, exc: OSError) -> OutputError:
        if isinstance(exc, FileNotFoundError):
            return OutputError(f"cannot write {self.path}: its folder does not exist here "
                               "(every worker must reach the output's folder: use a shared "
                               "folder or an object store URL).")
        return OutputError(f"cannot write {self.path}: {exc.strerror or exc}")

    def write_all(self, pieces: list[bytes]) -> None:
        """Append the pieces in order."""
        try:
            for piece in pieces:
                self._f.write(piece)
                self.size += len(piece)
        except OSError as exc:
            self.abort()
            raise self._error(exc) from None

    def commit(self) -> int:
        """Make the file appear under its name; return its size."""
        try:
            self._f.close()
            if self._tmp is not None:
                os.replace(self._tmp, self.path)
                self._tmp = None
        except OSError as exc:
            self.abort()
            raise self._error(exc) from None
        return self.size

    def abort(self) -> None:
        """Drop what was written (an unfinished upload is never completed)."""
        if self._tmp is not None:
            try:
                self._f.close()
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None
        else:
            discard = getattr(self._f, "discard", None)  # fsspec buffered files: no upload
            if discard is not None:
                discard()
