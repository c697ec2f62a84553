"""Atomic output files: written beside their target under a hidden temporary name and
renamed into place only when the whole run succeeded. ``-`` writes to stdout (not atomic).
"""

from __future__ import annotations

import errno
import gzip
import os
import queue
import stat
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, Protocol

from evalstream._files.temporaries import temp_dir, temp_file
from evalstream.errors import OutputError, ReaderGone, UsageError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# What copy_file_range answers where the kernel or the file system cannot copy for us
# (another file system before Linux 5.3, FUSE, some network and overlay file systems): the
# bytes are then copied through this process, as shutil does.
_NO_KERNEL_COPY = {errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP,
                   errno.EPERM}


def _copy_in_kernel(fd_in: int, fd_out: int, start: int, end: int) -> int:
    """Copy bytes [start, end) of ``fd_in`` to ``fd_out``'s position with copy_file_range;
    return where it stopped (``end``, or earlier where the kernel cannot copy)."""
    while start < end:
        try:
            copied = os.copy_file_range(fd_in, fd_out, end - start, start)
        except OSError as exc:
            if exc.errno in _NO_KERNEL_COPY:
                return start
            raise
        if copied == 0:
            break
        start += copied
    return start


class AtomicOutput:
    """A binary output that appears under its name only on ``commit``; ``abort`` leaves no trace.

    ``.gz`` and ``.zst`` targets are compressed, deterministically (no timestamp or name
    in the gzip header).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.tmp: str | None = None
        self._raw: BinaryIO | None = None
        self._direct: BinaryIO | None = None  # a device or pipe written in place
        self._finished = False
        self._behind: _WriteBehind | None = None
        if path == "-":
            self._stream: Any = sys.stdout.buffer
            return
        if path.endswith(os.sep) or os.path.isdir(path):
            raise OutputError(f"cannot write {path}: that names a directory; give a file name.")
        if os.path.exists(path) and not os.path.isfile(path):
            # A device or pipe (/dev/null, a FIFO): renaming over it would replace the device
            # node with a plain file, so it is written in place, not atomically (as stdout is).
            try:
                self._direct = open(path, "wb")
            except OSError as exc:
                raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
            self._stream = _compressed(path, self._direct)
            return
        # A symlink keeps pointing where it did: the file it names is the one replaced.
        self._target = os.path.realpath(path)
        try:
            # Named for this run: the next run of this target removes it if this one is
            # killed before it can (files.temporaries).
            fd, self.tmp = temp_file(os.path.dirname(self._target),
                                     f".{os.path.basename(path)}.")
            os.fchmod(fd, 0o666 & ~_umask())
        except OSError as exc:
            raise OutputError(f"cannot create {path}: {exc.strerror or exc}") from exc
        # Small writes (rejects) gather in the buffer; a chunk's output, larger than it, goes
        # straight to the file instead of being copied through it (1 GB: ~0.1 s less).
        self._raw = os.fdopen(fd, "wb", buffering=1 << 16)
        self._stream = _compressed(path, self._raw)

    def write(self, data: bytes | bytearray) -> None:
        """Append bytes; an OS error (disk full, file too large) becomes an OutputError."""
        self.write_all([data])

    def write_all(self, pieces: list[bytes] | list[bytes | bytearray]) -> None:
        """Append the pieces in order; after ``write_behind`` they are handed to the
        writer thread as they are (no join), and must not change afterwards."""
        try:
            if self._behind is not None:
                self._behind.extend(pieces)
            elif pieces:
                self._stream.write(b"".join(pieces))  # one piece of bytes: itself, no copy
        except BrokenPipeError as exc:
            raise ReaderGone(f"the reader of {self.path} closed it") from exc
        except OSError as exc:
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def write_behind(self) -> None:
        """Write from now on in a background thread, so copying the bytes into the file
        overlaps the work that makes the next ones (a plain file only; others ignore it).

        Measured on a 1 GB build into tmpfs (medians of 6, alternating): 3.76 s against
        4.05 s without, for ~3 MiB more memory."""
        if self._behind is None and self.tmp is not None and self._stream is self._raw:
            assert self._raw is not None
            self._raw.flush()
            self._behind = _WriteBehind(self._raw.fileno())

    def _drain(self) -> None:
        if self._behind is not None:
            behind, self._behind = self._behind, None
            behind.close()

    def splice(self, path: str, start: int, end: int) -> None:
        """Append bytes [start, end) of the file at ``path``, in the kernel where it can."""
        try:
            self._drain()
            with open(path, "rb") as src:
                if self._stream is self._raw and self._raw is not None:
                    self._raw.flush()
                    start = _copy_in_kernel(src.fileno(), self._raw.fileno(), start, end)
                    if start >= end:
                        return
                src.seek(start)
                while start < end:
                    block = src.read(min(1 << 20, end - start))
                    if not block:
                        break
                    self._stream.write(block)
                    start += len(block)
        except BrokenPipeError as exc:
            raise ReaderGone(f"the reader of {self.path} closed it") from exc
        except OSError as exc:
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    @property
    def rewindable(self) -> bool:
        """Whether ``rewind`` can take written bytes back: a plain temporary file."""
        return self.tmp is not None and self._stream is self._raw and not self._finished

    def tell(self) -> int:
        """Bytes written so far (a rewindable output only)."""
        assert self.rewindable and self._raw is not None
        self._drain()
        return self._raw.tell()

    def rewind(self, size: int) -> None:
        """Cut the output back to its first ``size`` bytes: a run that wrote ahead and must
        write part of it again (a rewindable output only)."""
        assert self.rewindable and self._raw is not None
        try:
            self._drain()
            self._raw.seek(size)
            self._raw.truncate()
        except OSError as exc:
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def finish(self) -> None:
        """Write out everything buffered and close the file; ``commit`` then only renames.

        A full disk or a file-size limit shows here, before any target is replaced.
        """
        if self._finished:
            return
        try:
            self._drain()
            if self.tmp is None:
                self._stream.flush()
                if self._direct is not None:
                    if self._stream is not self._direct:
                        self._stream.close()
                    self._direct.close()
            else:
                if self._stream is not self._raw:
                    self._stream.close()
                assert self._raw is not None
                # No fsync: the rename makes the file appear whole or not at all to any
                # process, which is the promise (errors, Ctrl-C, kill -9); power loss is not.
                self._raw.flush()
                self._raw.close()
            self._finished = True
        except OSError as exc:
            self.abort()
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def check_replaceable(self) -> None:
        """Raise OutputError when the rename that commits this output would fail: the target
        became a folder, its folder is not writable, the target is immutable or
        append-only, or it belongs to another user in a sticky folder (as /tmp is)."""
        if self.tmp is None:
            return  # stdout, a pipe or a device: written in place
        target = self._target
        folder = os.path.dirname(target)
        why = None
        try:
            folder_st = os.stat(folder)
            target_st = os.lstat(target) if os.path.lexists(target) else None
        except OSError as exc:
            raise OutputError(f"cannot replace {self.path}: {exc.strerror or exc}") from exc
        if target_st is not None and stat.S_ISDIR(target_st.st_mode):
            why = "it is now a folder"
        elif not os.access(folder, os.W_OK | os.X_OK):
            why = f"its folder {folder} is not writable"
        elif _inode_flags(folder) & _IMMUTABLE_FLAGS:
            why = f"its folder {folder} is immutable or append-only (see lsattr)"
        elif target_st is not None and _inode_flags(target) & _IMMUTABLE_FLAGS:
            why = "it is immutable or append-only (see lsattr; chattr -i or -a lifts it)"
        elif (target_st is not None and folder_st.st_mode & stat.S_ISVTX
              and os.geteuid() not in (0, target_st.st_uid, folder_st.st_uid)):
            why = ("it belongs to another user, in a folder where only a file's owner may "
                   "replace it (the sticky bit, as in /tmp)")
        if why is not None:
            raise OutputError(f"cannot replace {self.path}: {why}; no target was replaced.")

    def commit(self) -> None:
        """Finish the file and move it to its name, replacing any earlier file there."""
        self.finish()
        if self.tmp is None:
            return
        try:
            os.replace(self.tmp, self._target)
            self.tmp = None
        except OSError as exc:
            self.abort()
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def abort(self) -> None:
        """Drop the temporary file; the target, and any earlier file of that name, is untouched."""
        if self._behind is not None:
            self._behind.stop()
            self._behind = None
        if self.tmp is None:
            if self._direct is not None:
                try:
                    self._direct.close()
                except OSError:
                    pass
            return
        for closable in (self._stream, self._raw):
            try:
                if closable is not None:
                    closable.close()
            except (OSError, ValueError):
                pass
        try:
            os.unlink(self.tmp)
        except OSError:
            pass
        self.tmp = None


class _WriteBehind:
    """Writes batches of bytes to a file descriptor in a thread, in order.

    Bytes are gathered to ~1 MiB and handed over as one ``os.writev``: the thread needs the
    GIL between system calls, and waits up to the switch interval (5 ms) for it, so it must
    make few of them. At most one batch waits while another is written, which bounds the
    memory. An error in the thread is raised by the next ``write`` or by ``close``.
    """

    BATCH = 1 << 20

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending: list[bytes | bytearray] = []
        self._size = 0
        self._queue: queue.Queue[list[bytes | bytearray] | None] = queue.Queue(maxsize=1)
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._run, name="evalstream-write-behind",
                                        daemon=True)
        self._thread.start()

    def extend(self, pieces: list[bytes] | list[bytes | bytearray]) -> None:
        if self._error is not None:
            raise self._error
        self._pending += pieces
        self._size += sum(map(len, pieces))
        if self._size >= self.BATCH:
            self._hand_over()

    def _hand_over(self) -> None:
        self._queue.put(self._pending)
        self._pending, self._size = [], 0

    def _run(self) -> None:
        while (batch := self._queue.get()) is not None:
            if self._error is None:
                try:
                    write_all(self._fd, batch)
                except OSError as exc:
                    self._error = exc

    def close(self) -> None:
        """Write everything handed over; raise the first error."""
        if self._pending:
            self._hand_over()
        self._queue.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        """End the thread without writing what is still pending (the file is dropped)."""
        self._pending = []
        self._error = self._error or OSError("stopped")
        self._queue.put(None)
        self._thread.join()


# U+2028, U+2029 and U+0085 as UTF-8, and as JSON escapes.
_LINE_BREAKS = ((b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"),
                (b"\xc2\x85", b"\\u0085"))


def escape_line_breaks(data: bytes) -> bytes:
    """JSON with U+2028, U+2029 and U+0085 written as ``\\u`` escapes: the same JSON to any
    parser, and one record per line to readers that also split lines there (JavaScript's,
    Python's ``str.splitlines``, Ray's ``read_text``). In valid UTF-8 these byte sequences
    are those characters and nothing else, and JSON holds them only inside strings."""
    # The test runs on every state field a build writes, so it is ordered by cost: ASCII
    # bytes (most fields; checked at memory speed) hold none of them; other text is decoded
    # once, and a str without a character past U+00FF is not even searched for U+2028.
    # Three `in` tests on the bytes measured 0.24 s per 100 MB, a third of a build loop;
    # this 0.035 s.
    if data.isascii():
        return data
    text = data.decode("utf-8", "surrogatepass")
    if "\u2028" in text or "\u2029" in text or "\x85" in text:
        for raw, escaped in _LINE_BREAKS:
            data = data.replace(raw, escaped)
    return data


def write_all(fd: int, buffers: Sequence[bytes | bytearray]) -> None:
    """``os.writev`` until every byte is written (a write may stop short)."""
    for at in range(0, len(buffers), _IOV_MAX):
        group = buffers[at:at + _IOV_MAX]
        done = os.writev(fd, group)
        if done == sum(map(len, group)):
            continue
        for piece in group:  # a short write: the rest of the group one piece at a time
            if done >= len(piece):
                done -= len(piece)
                continue
            view = memoryview(piece)[done:]
            done = 0
            while view:
                view = view[os.write(fd, view):]


_IOV_MAX = 1024  # the most buffers one writev takes on Linux


class Committable(Protocol):
    """What ``commit_all`` commits: an atomic file (``AtomicOutput``), an object at a URL or
    a directory of parts (``files.parts``), a folder (``AtomicFolder``)."""

    path: str

    def finish(self) -> None: ...
    def check_replaceable(self) -> None: ...
    def commit(self) -> None: ...
    def abort(self) -> None: ...


def commit_all(outputs: Sequence[Committable]) -> None:
    """Finish every output, check that each target can be replaced, then rename them all.

    When an output cannot be written or a target cannot be replaced, no target is touched.
    A rename can still fail after the check (the folder changed in between): the error then
    names the targets already replaced and those that kept their earlier content."""
    try:
        for output in outputs:
            output.finish()
        for output in outputs:
            output.check_replaceable()
    except BaseException:
        for output in outputs:
            output.abort()
        raise
    replaced: list[Committable] = []
    for output in outputs:
        try:
            output.commit()
        except BaseException as exc:
            for other in outputs:
                other.abort()
            if not replaced or not isinstance(exc, OutputError):
                raise
            kept = [o.path for o in outputs if o not in replaced]
            raise OutputError(f"{exc}. Only part of the output was written: "
                              f"{_names([o.path for o in replaced])} "
                              f"{'hold' if len(replaced) > 1 else 'holds'} this run's output, "
                              f"{_names(kept)} {'were' if len(kept) > 1 else 'was'} not "
                              "replaced (any earlier file of that name is as it was); run "
                              "again once the target can be replaced.") from exc
        replaced.append(output)


def _names(paths: list[str]) -> str:
    return ", ".join(paths[:-1]) + f" and {paths[-1]}" if len(paths) > 1 else paths[0]


_IMMUTABLE_FLAGS = 0x10 | 0x20  # FS_IMMUTABLE_FL, FS_APPEND_FL: no rename over, no unlink
_FS_IOC_GETFLAGS = 0x80086601


def _inode_flags(path: str) -> int:
    """The file's Linux inode flags (``lsattr``), or 0 where they cannot be read."""
    if not sys.platform.startswith("linux"):
        return 0
    import array
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return 0
    try:
        flags = array.array("l", [0])
        fcntl.ioctl(fd, _FS_IOC_GETFLAGS, flags)
        return int(flags[0])
    except OSError:  # a file system without flags
        return 0
    finally:
        os.close(fd)


def _compressed(path: str, raw: BinaryIO) -> Any:
    """``raw`` wrapped in the compressor the target's name asks for (.gz, .zst), or itself."""
    if path.endswith(".gz"):
        return gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
    if path.endswith(".zst"):
        import zstandard

        return zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False)
    return raw


def sidecar(path: str, suffix: str) -> str:
    """The path of a file that belongs next to ``path``: states.jsonl -> states<suffix>."""
    base = path
    for ext in (".gz", ".zst"):
        if base.endswith(ext):
            base = base[: -len(ext)]
    for ext in (".jsonl", ".ndjson", ".json"):
        if base.endswith(ext):
            base = base[: -len(ext)]
            break
    return base + suffix


# -- which paths a run may write ---------------------------------------------------------------
Named = tuple[str, "str | None"]  # what a path is to the run ("rejects", "html"), and the path


def check_targets(inputs: Sequence[Named], outputs: Sequence[Named]) -> None:
    """Refuse (UsageError) a run that would write over one of its inputs or write two
    targets into one place, before anything is read or written.

    Paths are compared by the file they name, whatever the spelling (``./x/../``, a symlink,
    a hard link, a symlinked folder), also for targets that do not exist yet (by their
    resolved folder and name). ``-``, ``/dev/stdout`` and ``/proc/self/fd/1`` are one
    stream, and a stream takes at most one target; ``/dev/null`` takes any number. An
    input named twice is fine (reading harms nothing); stdin (``-``) is never a target.
    """
    null = _place(os.devnull)
    seen: dict[tuple[Any, ...], tuple[str, str]] = {}
    for name, path in inputs:
        if path is not None and path != "-":
            seen.setdefault(_place(path), (name, path))
    read = set(seen)
    for name, path in outputs:
        if path is None:
            continue
        place = _place(path)
        if place == null:
            continue
        if place in seen:
            raise UsageError(_collision(seen[place], (name, path), place, place in read))
        seen[place] = (name, path)


def _place(path: str) -> tuple[Any, ...]:
    """What ``path`` names: an existing file (device and inode), a file still to be created
    (its resolved folder and name), or a stream."""
    if path == "-":
        return _fd_place(1) or ("stream", "stdout")
    try:
        st = os.stat(path)
        return ("file", st.st_dev, st.st_ino)
    except OSError:
        pass
    real = os.path.realpath(path)
    folder, name = os.path.split(real)
    try:
        st = os.stat(folder)
        return ("new", st.st_dev, st.st_ino, name)
    except OSError:
        return ("new", real)


def _fd_place(fd: int) -> tuple[Any, ...] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return ("file", st.st_dev, st.st_ino)


def _stream(place: tuple[Any, ...]) -> str | None:
    """``stdout`` or ``stderr`` when ``place`` is where that stream goes, else None."""
    if place == ("stream", "stdout") or place == _fd_place(1):
        return "stdout"
    if place == _fd_place(2):
        return "stderr"
    return None


def _collision(first: tuple[str, str], second: tuple[str, str], place: tuple[Any, ...],
               is_input: bool) -> str:
    (name_a, a), (name_b, b) = first, second
    paths = a if a == b else f"{a} and {b}"
    if is_input:
        return (f"the {name_a} and {name_b} paths are the same file ({paths}); the run would "
                f"replace its own input: choose a different {name_b} name.")
    stream = _stream(place)
    if stream is not None:
        return (f"the {name_a} and the {name_b} cannot both go to {stream} ({paths}); give one "
                "of them a file name.")
    return (f"the {name_a} and {name_b} paths are the same file ({paths}); one would replace "
            f"the other: choose a different {name_b} name.")


# -- folder targets ------------------------------------------------------------------------------
# What an existing folder holds that forbids replacing it (a sentence's middle: "holds
# notes.txt, which no earlier export wrote"), or None when it may be replaced.
Refusal = Callable[[str], "str | None"]


def check_folder_target(inputs: Sequence[Named], name: str, folder: str) -> None:
    """Refuse (UsageError) a folder target that holds one of the run's inputs: replacing the
    folder whole would delete it, ``--force`` or not. Each input's folders are compared with
    the target by the folder they name (device and inode), whatever the spelling (``../``,
    a symlinked folder, a symlink to a file inside); URLs are never inside a local folder."""
    try:
        st = os.stat(folder)
    except OSError:
        return  # a new folder holds nothing
    place = (st.st_dev, st.st_ino)
    for role, path in inputs:
        if path is None or path == "-" or "://" in path:
            continue
        here = os.path.realpath(path)
        while True:
            try:
                found = os.stat(here)
                if (found.st_dev, found.st_ino) == place:
                    raise UsageError(inside(role, path, name, folder))
            except FileNotFoundError:
                pass
            up = os.path.dirname(here)
            if up == here:
                break
            here = up


def inside(role: str, path: str, name: str, folder: str) -> str:
    """The sentence for an input inside a folder target."""
    return (f"the {role} {path} is inside the {name} folder {folder}, which this run replaces "
            f"whole (deleting the {role}); choose another {name} folder, or move the {role} "
            "out of it.")


def folder_files(folder: str) -> list[str]:
    """Everything in ``folder``, by its name relative to it (``/`` between folders), sorted:
    each file, symlink or other entry, and each empty folder (ending in ``/``). Symlinks are
    not followed; OSError when a folder cannot be listed."""
    found: list[str] = []
    pending = [""]
    while pending:
        inner = pending.pop()
        with os.scandir(os.path.join(folder, inner)) as it:
            entries = list(it)
        if inner and not entries:
            found.append(inner)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append(f"{inner}{entry.name}/")
            else:
                found.append(inner + entry.name)
    return sorted(found)


def some_names(names: Sequence[str], shown: int = 5) -> str:
    """The first ``shown`` names for a sentence (``a, b and c``), and how many more."""
    more = len(names) - shown
    if more > 0:
        return f"{', '.join(names[:shown])} and {more:,} more"
    return _names(list(names))


def check_folder(path: str, refusal: Refusal, force: bool | None = None) -> None:
    """Raise when the folder ``path`` exists and may not be replaced: a file of that name
    (OutputError), or a folder that is not empty and of which ``refusal`` says what this run
    did not write (UsageError, unless ``force``; ``None``: the command has no ``--force``)."""
    path = path.rstrip(os.sep) or path  # `review/` names a symlink as `review` does
    if not os.path.lexists(path):
        return
    if os.path.islink(path):
        raise OutputError(f"cannot write the folder {path}: it is a symlink (replacing it would "
                          "not replace the folder it names); give that folder's own path.")
    if not os.path.isdir(path):
        raise OutputError(f"cannot write the folder {path}: a file of that name exists; "
                          "choose another name.")
    if force or not os.listdir(path):
        return
    why = refusal(path)
    if why is not None:
        fix = "" if force is None else ", or give --force to replace it whole"
        raise UsageError(f"{path} exists and {why}; choose a new folder{fix}.")


def replace_folder(tmp: str, path: str) -> None:
    """Rename the finished folder ``tmp`` to ``path``, replacing (and then removing) a folder
    there; OSError leaves ``path`` as it was. The earlier folder is moved into a temporary
    named for this run first, so a run killed before removing it leaves it where the next
    run of ``path`` removes it (``files.temporaries``)."""
    import shutil

    if not os.path.isdir(path):
        os.rename(tmp, path)
        return
    old = temp_dir(os.path.dirname(os.path.abspath(path)), f".{os.path.basename(path)}.", ".old")
    earlier = os.path.join(old, "folder")
    try:
        os.rename(path, earlier)
    except OSError:
        os.rmdir(old)
        raise
    try:
        os.rename(tmp, path)
    except OSError:
        os.rename(earlier, path)  # put the earlier one back
        os.rmdir(old)
        raise
    shutil.rmtree(old, ignore_errors=True)


class AtomicFolder:
    """A folder of files that appears under its name only on ``commit``, whole; ``abort``
    leaves no trace. An existing folder is replaced only when it is empty, when ``refusal``
    finds nothing in it this kind of output did not write, or with ``force``
    (``check_folder``); checked again just before the rename. ``written`` names the files
    written, in order."""

    def __init__(self, path: str, refusal: Refusal, force: bool | None = None) -> None:
        self.path = path.rstrip(os.sep) or path
        self._refusal, self._force = refusal, force
        check_folder(self.path, refusal, force)
        self.written: list[str] = []
        parent = os.path.dirname(os.path.abspath(self.path))
        try:
            self.tmp: str | None = temp_dir(parent, f".{os.path.basename(self.path)}.", ".tmp")
            os.chmod(self.tmp, 0o777 & ~_umask())
        except OSError as exc:
            raise OutputError(f"cannot create {path}: {exc.strerror or exc}") from exc

    def write(self, name: str, data: bytes) -> None:
        """Write the file ``name`` (a relative path with / between folders) in the folder."""
        assert self.tmp is not None
        target = os.path.join(self.tmp, *name.split("/"))
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(data)
        except OSError as exc:
            raise OutputError(f"cannot write {os.path.join(self.path, name)}: "
                              f"{exc.strerror or exc}") from exc
        self.written.append(name)

    def finish(self) -> None:
        """Nothing to finish: every file was written whole (``commit_all`` asks)."""

    def check_replaceable(self) -> None:
        """Raise before any target of the run is replaced when the folder may not be: files
        added to it while this run worked, or a file there now (``check_folder``)."""
        check_folder(self.path, self._refusal, self._force)

    def commit(self) -> None:
        """Move the folder to its name, replacing an earlier one there."""
        assert self.tmp is not None
        try:
            # Again: files may have been added to the folder while this run worked.
            check_folder(self.path, self._refusal, self._force)
            replace_folder(self.tmp, self.path)
            self.tmp = None
        except OSError as exc:
            self.abort()
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from exc
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Remove the temporary folder; the target and any earlier folder are untouched."""
        import shutil

        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
