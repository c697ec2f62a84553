"""Atomic output files: written beside their target under a hidden temporary name and
renamed into place only when the whole run succeeded. ``-`` writes to stdout (not atomic).
"""

from __future__ import annotations

import gzip
import os
import sys
import tempfile
from typing import Any, BinaryIO


class OutputError(Exception):
    """An output could not be created, written or moved into place."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class AtomicOutput:
    """A binary output that appears under its name only on ``commit``; ``abort`` leaves no trace.

    ``.gz`` and ``.zst`` targets are compressed, deterministically (no timestamp or name
    in the gzip header).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.tmp: str | None = None
        self._raw: BinaryIO | None = None
        if path == "-":
            self._stream: Any = sys.stdout.buffer
            return
        directory = os.path.dirname(os.path.abspath(path))
        try:
            fd, self.tmp = tempfile.mkstemp(
                dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
            os.fchmod(fd, 0o666 & ~_umask())
        except OSError as exc:
            raise OutputError(f"cannot create {path}: {exc.strerror or exc}") from exc
        self._raw = os.fdopen(fd, "wb", buffering=1 << 20)
        if path.endswith(".gz"):
            self._stream = gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, mtime=0)
        elif path.endswith(".zst"):
            import zstandard

            self._stream = zstandard.ZstdCompressor(level=3).stream_writer(
                self._raw, closefd=False)
        else:
            self._stream = self._raw

    def write(self, data: bytes) -> None:
        """Append bytes; an OS error (disk full, file too large) becomes an OutputError."""
        try:
            self._stream.write(data)
        except OSError as exc:
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def commit(self) -> None:
        """Finish the file and move it to its name, replacing any earlier file there."""
        try:
            if self.tmp is None:
                self._stream.flush()
                return
            if self._stream is not self._raw:
                self._stream.close()
            assert self._raw is not None
            self._raw.flush()
            os.fsync(self._raw.fileno())
            self._raw.close()
            os.replace(self.tmp, self.path)
            self.tmp = None
        except OSError as exc:
            self.abort()
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def abort(self) -> None:
        """Drop the temporary file; the target, and any earlier file of that name, is untouched."""
        if self.tmp is None:
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
