"""The targets of a cluster run: part files beside the target, joined in order at the end.

Workers on other machines cannot write into this machine's temporary folder, so their part
files go to a hidden folder beside the output, in the output's own store (``parts_folder``):
a local or shared folder, or an object store prefix. At the end the parts become the
target, and nothing appears under a target name before the whole run succeeded:

- one file (``StoreOutput`` for a URL; ``AtomicOutput`` for a local path, which copies the
  parts in the kernel with ``copy_file_range``): joined in order. An object store that can
  concatenate objects itself (``fs.merge``: S3's multipart copy, GCS compose) does it when
  every part is whole and every part but the last holds at least 5 MiB (S3's least part);
  otherwise this process streams the parts' bytes into the target.
- a directory (a target ending in ``/``: ``DirectoryOutput``): the parts themselves, in
  order, with ``manifest.json`` naming them; their concatenation is the one file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from typing import Any

import msgspec

from evalstream._files import store
from evalstream._files.outputs import (
    Named,
    _umask,
    check_folder,
    check_folder_target,
    folder_files,
    inside,
    replace_folder,
    some_names,
)
from evalstream.errors import InputError, OutputError, UsageError

MIN_MERGE_PART = 5 << 20  # S3's least multipart part (the last may be smaller)
MANIFEST = "manifest.json"
MANIFEST_SHAPE = "evalstream.parts/1"


def is_directory(target: str | None) -> bool:
    """Whether ``target`` asks for a directory of parts (its name ends in ``/``)."""
    return target is not None and target not in ("-",) and target.endswith("/")


def check_directory(target: str, inputs: Sequence[Named], force: bool = False) -> None:
    """Refuse (UsageError), before anything is read, a directory target that holds one of the
    run's ``inputs`` (even with ``force``: replacing the directory would delete it), or that
    exists and holds anything an earlier directory output did not write (unless ``force``):
    an earlier one is known by its ``manifest.json``, which lists every file it wrote."""
    folder = target.rstrip("/")
    if not store.is_url(folder):
        check_folder_target(inputs, "output", folder)
        check_folder(folder, _not_written, force)
        return
    fs, inner = store.filesystem(folder)
    for role, path in inputs:
        if path is not None and store.is_url(path):
            fs_in, inner_in = store.filesystem(path)
            if fs_in.protocol == fs.protocol and inner_in.startswith(inner + "/"):
                raise UsageError(inside(role, path, "output", target))
    why = None if force else _not_written(folder)
    if why is not None:
        raise UsageError(f"{target} exists and {why}; choose a new folder, or give --force to "
                         "replace it whole.")


def _not_written(folder: str) -> str | None:
    """What the directory ``folder`` (a path or URL) holds that no earlier directory output
    wrote, said for people; None when it is new, empty or such an output as it was."""
    try:
        if store.is_url(folder):
            fs, inner = store.filesystem(folder)
            names = sorted(p[len(inner) + 1:] for p in fs.find(inner))
        else:
            names = folder_files(folder)
    except OSError as exc:
        return f"cannot be listed whole ({exc.strerror or exc})"
    if not names:
        return None
    if MANIFEST not in names:
        return (f"holds {some_names(names)}, which no directory output wrote (there is no "
                f"{MANIFEST})")
    try:
        with store.open_file(f"{folder}/{MANIFEST}") as f:
            manifest: Manifest | None = msgspec.json.decode(f.read(), type=Manifest)
    except (OSError, InputError, msgspec.DecodeError):
        manifest = None
    if manifest is None or manifest.shape != MANIFEST_SHAPE:
        return (f"holds {some_names(names)}, and its {MANIFEST} is not a directory output's "
                f"(`\"shape\": \"{MANIFEST_SHAPE}\"` and the files it wrote)")
    written = {MANIFEST, *manifest.parts, *(n for n in (manifest.rejects, manifest.report) if n)}
    others = [n for n in names if n not in written]
    if others:
        return (f"holds {some_names(others)}, which the earlier output there did not write (its "
                f"{MANIFEST} lists every file it wrote)")
    return None


def parts_folder(anchor: str, run_id: str) -> str:
    """Create and name the hidden folder for this run's parts beside ``anchor`` (a file or
    directory target; a local path or URL)."""
    parent, name = _split(anchor.rstrip("/"))
    folder = f"{parent}/.{name}.evalstream-parts-{run_id}"
    if store.is_url(folder):
        fs, inner = store.filesystem(folder)
        try:
            fs.makedirs(inner, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create {folder}: {exc.strerror or exc}") from None
        return folder
    from evalstream._files.temporaries import PARTS_SUFFIX, temp_dir

    try:
        # Named for this run and its target (``files.temporaries``): the next run of the
        # target removes what a killed one left here. An object store's folder above is named
        # for the run's id instead: no run can tell whether another machine's client lives.
        folder = temp_dir(parent, f".{name}.", PARTS_SUFFIX)
        # As a folder made by mkdir (mkdtemp's is private): workers may write into it, and
        # a directory target is this folder renamed.
        os.chmod(folder, 0o777 & ~_umask())
        return folder
    except OSError as exc:
        raise OutputError(f"cannot create a folder in {parent}: {exc.strerror or exc}") from None


def remove_folder(folder: str) -> None:
    """Remove a parts folder and everything in it (errors ignored: it is hidden)."""
    try:
        if store.is_url(folder):
            fs, inner = store.filesystem(folder)
            if fs.exists(inner):
                fs.rm(inner, recursive=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    except OSError:
        pass


def _split(path: str) -> tuple[str, str]:
    if store.is_url(path):
        head, _, name = path.rpartition("/")
        return head, name
    path = os.path.abspath(path)
    return os.path.dirname(path), os.path.basename(path)


class StoreOutput:
    """A target at a URL, written whole or not at all, with ``AtomicOutput``'s methods:
    bytes written or parts spliced go under a hidden name beside the target, moved to the
    target by ``commit``."""

    def __init__(self, target: str) -> None:
        self.path = target
        parent, name = _split(target)
        self.tmp = f"{parent}/.{name}.{os.urandom(6).hex()}.tmp"
        self.fs, self._inner_tmp = store.filesystem(self.tmp)
        self._target_inner = store.filesystem(target)[1]
        self._file: store.PartFile | None = None
        self._segments: list[tuple[str, int, int, int]] = []  # part, start, end, part size
        self.part_sizes: dict[str, int] = {}  # given by the run: a whole part can be merged
        self._finished = False
        self.joined_by: str | None = None  # "store" or "client", once joined

    def write(self, data: bytes | bytearray) -> None:
        if self._file is None:
            self._file = store.PartFile(self.tmp)
        self._file.write_all([bytes(data)])

    def splice(self, path: str, start: int, end: int) -> None:
        """Append bytes [start, end) of the part at ``path``."""
        self._segments.append((path, start, end, self.part_sizes.get(path, -1)))

    def finish(self) -> None:
        if self._finished:
            return
        if self._segments:
            self._join()
        elif self._file is None:
            self._file = store.PartFile(self.tmp)
        if self._file is not None:
            self._file.commit()
        self._finished = True

    def _join(self) -> None:
        whole = all(a == 0 and b == size for _, a, b, size in self._segments)
        big = all(b - a >= MIN_MERGE_PART for _, a, b, _ in self._segments[:-1])
        merge = getattr(self.fs, "merge", None)
        if merge is not None and whole and big:
            try:
                merge(self._inner_tmp, [store.filesystem(p)[1] for p, _, _, _ in self._segments])
                self.joined_by = "store"
                return
            except (OSError, NotImplementedError):
                pass  # streamed below instead
        joined = self._file = store.PartFile(self.tmp)
        for path, a, b, _ in self._segments:
            store.copy_range(path, a, b, lambda block: joined.write_all([block]))
        self.joined_by = "client"

    def check_replaceable(self) -> None:
        """Nothing to check before the move: an object store has no folder permissions or
        immutable flags; a refused move is an OutputError from ``commit``."""

    def commit(self) -> None:
        self.finish()
        try:
            self.fs.mv(self._inner_tmp, self._target_inner)
        except OSError as exc:
            self.abort()
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def abort(self) -> None:
        if self._file is not None:
            self._file.abort()
        try:
            if self.fs.exists(self._inner_tmp):
                self.fs.rm(self._inner_tmp)
        except OSError:
            pass


class Manifest(msgspec.Struct):
    """``manifest.json`` of a directory target: the parts in order (their concatenation is
    the one-file output), and the rejects and report beside them."""

    shape: str
    parts: list[str]
    bytes: int
    rejects: str | None
    report: str | None


class DirectoryOutput:
    """A directory target (``states/``): the parts, in order, as ``part-00000.jsonl``...,
    with the rejects and report inside it and ``manifest.json`` written last. Everything is
    made in the run's parts folder; ``commit`` moves it to the target name (a local rename
    of the folder; on an object store, a copy of each object, the manifest last)."""

    def __init__(self, target: str, folder: str, force: bool = False) -> None:
        self.path = target
        self.folder = folder  # the parts folder beside the target
        self.force = force  # replace a directory of other files (check_directory)
        self.members: dict[str, Member] = {}
        self.part_sizes: dict[str, int] = {}  # given by the run: a whole part is moved
        self._parts: list[str] = []
        self._bytes = 0
        self._finished = False

    def member(self, name: str) -> Member:
        """A file inside the directory (the rejects, the report)."""
        output = Member(f"{self.folder}/{name}")
        self.members[name] = output
        return output

    def drop(self, member: Member) -> None:
        """Leave a member out (an empty rejects file nobody asked for)."""
        self.members = {k: v for k, v in self.members.items() if v is not member}

    def splice(self, path: str, start: int, end: int) -> None:
        """Make bytes [start, end) of the part at ``path`` the next part of the output."""
        name = f"part-{len(self._parts):05d}.jsonl"
        target = f"{self.folder}/{name}"
        if start == 0 and end == self.part_sizes.get(path):
            _move(path, target)
        else:
            out = store.PartFile(target)
            try:
                store.copy_range(path, start, end, lambda block: out.write_all([block]))
            except BaseException:
                out.abort()
                raise
            out.commit()
        self._parts.append(name)
        self._bytes += end - start

    def write(self, data: bytes | bytearray) -> None:
        raise OutputError(f"{self.path} is a directory of parts; only parts go into it.")

    def finish(self) -> None:
        if self._finished:
            return
        for output in self.members.values():
            output.finish()
        rejects = next((k for k in self.members if k.startswith("rejects")), None)
        report = next((k for k in self.members if k.startswith("report")), None)
        manifest = Manifest(MANIFEST_SHAPE, self._parts, self._bytes, rejects, report)
        out = store.PartFile(f"{self.folder}/{MANIFEST}")
        out.write_all([msgspec.json.format(msgspec.json.encode(manifest), indent=2) + b"\n"])
        out.commit()
        self._finished = True

    def check_replaceable(self) -> None:
        """Raise before any target of the run is replaced when the directory may not be:
        a file of that name (OutputError), or files no earlier directory output wrote,
        perhaps added while this run worked (UsageError, unless ``force``)."""
        check_directory(self.path, (), self.force)

    def commit(self) -> None:
        self.finish()
        target = self.path.rstrip("/")
        keep = {*self._parts, *self.members, MANIFEST}
        try:
            if store.is_url(target):
                fs, inner = store.filesystem(target)
                src = store.filesystem(self.folder)[1]
                if fs.exists(inner):
                    fs.rm(inner, recursive=True)
                names = [*self._parts, *self.members]
                # One batch (an object store's filesystem copies concurrently, in the store),
                # then the manifest: a prefix without it is not a finished output.
                fs.copy([f"{src}/{n}" for n in names], [f"{inner}/{n}" for n in names])
                fs.copy(f"{src}/{MANIFEST}", f"{inner}/{MANIFEST}")
                return
            for name in os.listdir(self.folder):  # part files not used by the output
                if name not in keep:
                    os.unlink(os.path.join(self.folder, name))
            if os.path.lexists(target) and not os.path.isdir(target):
                raise OutputError(f"cannot write {self.path}: a file of that name exists; "
                                  "remove it or give another directory name.")
            replace_folder(self.folder, target)
        except OSError as exc:
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def abort(self) -> None:
        for output in self.members.values():
            output.abort()


class Member:
    """A file inside a directory target's folder, written whole (the rejects, the report)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file: store.PartFile | None = None
        self._done = False

    def write(self, data: bytes | bytearray) -> None:
        if self._file is None:
            self._file = store.PartFile(self.path)
        self._file.write_all([bytes(data)])

    def finish(self) -> None:
        if self._done:
            return
        if self._file is None:
            self._file = store.PartFile(self.path)
        self._file.commit()
        self._file, self._done = None, True

    def check_replaceable(self) -> None:
        """Checked with its directory (``DirectoryOutput.check_replaceable``)."""

    def commit(self) -> None:
        self.finish()

    def abort(self) -> None:
        if self._file is not None:
            self._file.abort()


class Streamed:
    """An ``AtomicOutput`` (a local file, stdout) that takes parts from a store: parts at a
    URL are streamed through this process, local ones spliced in the kernel."""

    def __init__(self, output: Any) -> None:
        self.output = output
        self.path = output.path

    def splice(self, path: str, start: int, end: int) -> None:
        if not store.is_url(path):
            self.output.splice(path, start, end)
            return
        store.copy_range(path, start, end, self.output.write)

    def write(self, data: bytes | bytearray) -> None:
        self.output.write(data)

    def finish(self) -> None:
        self.output.finish()

    def check_replaceable(self) -> None:
        self.output.check_replaceable()

    def commit(self) -> None:
        self.output.commit()

    def abort(self) -> None:
        self.output.abort()


def _move(path: str, target: str) -> None:
    if store.is_url(path):
        fs, inner = store.filesystem(path)
        fs.mv(inner, store.filesystem(target)[1])
    else:
        os.replace(path, target)
