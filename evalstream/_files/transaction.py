"""The one output transaction of a run: every command that writes goes through it.

A run names its inputs and its targets (each with its role, e.g. ``output`` or ``rejects``,
its path, and the kind it writes, for the replace rule of ``files.replace``). Then:

1. planning (``Transaction(...)``): a sidecar with no path of its own gets its default from
   the main target, the first one (``states.jsonl`` -> ``states.rejects.jsonl``; inside a
   directory of parts, ``states/rejects.jsonl``); nothing is read or written.
2. checking (``check()``, or entering the ``with``), before anything is read: no target is an
   input or another target, or shares a stream with one (``outputs.check_targets``); a
   directory of parts or a folder holds no input and replaces only an earlier output of its
   kind (``parts.check_directory``, ``outputs.check_folder_target`` and ``check_folder``);
   an existing file is replaced only by its own kind of output (``replace.check_replaceable``);
   ``force`` lifts the replace rule, never the others. Checked once, however often asked.
3. opening, on request (``open``, ``open_any``, ``open_joined``, ``open_folder``): atomic
   files, stdout and FIFOs written in place, objects at a URL, a directory of parts and its
   members, folders. A target that only needs its place checked (the answer store, which
   SQLite opens) is declared with no kind and never opened here.
4. the end of the ``with``: on success every opened target is committed together
   (``outputs.commit_all``: all written in full, every rename checked, then renamed; a
   rename that still fails names what was and was not written); on any exception, Ctrl-C
   and SIGTERM included, every one is aborted and no target is touched.

A target the run may leave out (``optional``: build's rejects, where build chose the name and
no file is there) is written only when something went into it: the run says so with
``empty(role)`` when nothing did.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from evalstream._files import store
from evalstream._files.outputs import (
    AtomicFolder,
    AtomicOutput,
    Named,
    Refusal,
    check_folder,
    check_folder_target,
    check_targets,
    commit_all,
    sidecar,
)
from evalstream._files.parts import (
    DirectoryOutput,
    StoreOutput,
    Streamed,
    check_directory,
)
from evalstream._files.replace import check_replaceable

FOLDER = "folder"  # the kind of a folder target (AtomicFolder), with its refusal


@dataclass(frozen=True)
class Target:
    """One target of a run.

    ``kind``: what it holds (``replace.WRITES``: "judge states", "verdicts", "rejects",
    "json", "text", "html", "cases"), ``FOLDER`` (with ``refusal``: what in an existing
    folder forbids replacing it), or None for a target only checked for its place.
    ``beside``: a sidecar's suffix; without a path it is written beside the main target
    (``sidecar``). ``optional``: left out unless something went into it (``empty``).
    ``directory``: the main target is a directory of parts (a name ending in ``/``,
    ``--engine dask``)."""

    role: str
    path: str | None
    kind: str | None = None
    beside: str | None = None
    optional: bool = False
    refusal: Refusal | None = None
    directory: bool = False


class Transaction:
    """The targets of one run, checked before it reads, committed all or none at its end.

    ``force`` replaces files and folders of another kind (None: the command has no
    ``--force``). ``beside_streams``: whether sidecars get default paths beside a main
    target written in place (a FIFO, a device) too; never beside stdout (``-``)."""

    def __init__(self, inputs: Sequence[Named], targets: Sequence[Target],
                 force: bool | None = False, beside_streams: bool = True) -> None:
        self.inputs = list(inputs)
        self.force = force
        main = targets[0] if targets else None
        self._targets: dict[str, Target] = {}
        self._derived: set[str] = set()  # roles whose path is the sidecar default
        for t in targets:
            path = _default(t, main, beside_streams)
            if path is not None:
                self._derived.add(t.role)
                t = Target(t.role, path, t.kind, t.beside, t.optional, t.refusal, t.directory)
            self._targets[t.role] = t
        self._optional: set[str] = set()
        self._checked = False
        self._opened: dict[str, Any] = {}
        self._owned: list[Any] = []  # committed at the end, in the order opened

    # -- planning --------------------------------------------------------------------------
    def path(self, role: str) -> str | None:
        """Where the target ``role`` is written (its sidecar default included); None when it
        is not written (none given, or left out)."""
        return self._targets[role].path if role in self._targets else None

    # -- checking --------------------------------------------------------------------------
    def check(self) -> Transaction:
        """Refuse (UsageError, OutputError), before anything is read, targets that would
        replace an input, each other, a folder holding an input, or what may not be
        replaced; then note which optional targets may be left out. Done once; returns the
        transaction, checked."""
        if self._checked:
            return self
        # A folder is compared with the inputs by what it holds (check_folder_target).
        files = [t for t in self._targets.values() if t.kind != FOLDER]
        if files:
            check_targets(self.inputs, [(t.role, t.path) for t in files])
        for t in self._targets.values():
            if t.path is None:
                continue
            if t.directory:
                check_directory(t.path, self.inputs, bool(self.force))
            elif t.kind == FOLDER:
                assert t.refusal is not None
                check_folder_target(self.inputs, t.role, t.path)
                check_folder(t.path, t.refusal, self.force)
        check_replaceable([(t.role, t.path, t.kind) for t in files if t.kind is not None],
                          bool(self.force))
        main = next(iter(self._targets.values()), None)
        for t in self._targets.values():
            # Where the run chose the name and nothing is there yet: no new empty file.
            if t.optional and t.role in self._derived and t.path is not None \
                    and not _exists(t.path, main):
                self._optional.add(t.role)
        self._checked = True
        return self

    # -- opening ---------------------------------------------------------------------------
    def open(self, role: str) -> AtomicOutput:
        """The file target ``role``, written under a temporary name beside it (stdout, a FIFO
        or a device in place), committed with the others."""
        out = AtomicOutput(self._path(role))
        return self._own(role, out)

    def open_any(self, role: str) -> AtomicOutput | StoreOutput:
        """As ``open``, and an object at a URL written through fsspec (``StoreOutput``)."""
        path = self._path(role)
        out = StoreOutput(path) if store.is_url(path) else AtomicOutput(path)
        return self._own(role, out)

    def open_joined(self, role: str, parts: str | None) -> Any:
        """The target ``role`` of a cluster run, which joins part files (from ``parts``, the
        run's parts folder): a directory of parts, a file inside it (written with it), an
        object at a URL, or a local file or stdout taking parts from any store."""
        path = self._path(role)
        target = self._targets[role]
        main = next(iter(self._targets.values()))
        directory = self._opened.get(main.role) if main.directory else None
        if target.directory:
            assert parts is not None
            return self._own(role, DirectoryOutput(path, parts, bool(self.force)))
        if isinstance(directory, DirectoryOutput) and main.path is not None \
                and path.startswith(main.path):
            member = directory.member(path[len(main.path):])
            self._opened[role] = member  # committed inside its directory
            return member
        if store.is_url(path):
            return self._own(role, StoreOutput(path))
        return self._own(role, Streamed(AtomicOutput(path)))

    def open_folder(self, role: str) -> AtomicFolder:
        """The folder target ``role``: filled under a temporary name, renamed whole."""
        target = self._targets[role]
        assert target.kind == FOLDER and target.refusal is not None
        return self._own(role, AtomicFolder(self._path(role), target.refusal, self.force))

    def _path(self, role: str) -> str:
        assert self._checked, "a transaction's targets are checked before any is opened"
        target = self._targets[role]
        # A target without a kind is only checked here (the answer store: SQLite opens it).
        assert target.path is not None and target.kind is not None, role
        assert role not in self._opened, f"{role} is open already"
        return target.path

    def _own(self, role: str, out: Any) -> Any:
        self._opened[role] = out
        self._owned.append(out)
        return out

    # -- the end ---------------------------------------------------------------------------
    def empty(self, role: str) -> None:
        """Nothing went into the target ``role``: an optional one is left out (no file is
        written, ``path`` says None); any other is written as it is."""
        if role in self._optional:
            self.leave_out(role)

    def leave_out(self, role: str) -> None:
        """Drop the target ``role``: nothing more is written to it and nothing is committed
        under its name (standard output closed by its reader; an optional target unused)."""
        out = self._opened.pop(role, None)
        if out is not None:
            if out in self._owned:
                self._owned.remove(out)
            else:  # a member of a directory of parts
                for owner in self._owned:
                    if isinstance(owner, DirectoryOutput):
                        owner.drop(out)
            out.abort()
        target = self._targets[role]
        self._targets[role] = Target(role, None, target.kind)

    def commit(self) -> None:
        """Commit every target opened, all or none (``outputs.commit_all``)."""
        owned, self._owned = self._owned, []
        commit_all(owned)

    def abort(self) -> None:
        """Abort every target opened: no target is touched."""
        owned, self._owned = self._owned, []
        for out in owned:
            out.abort()

    def __enter__(self) -> Transaction:
        self.check()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None:
            self.commit()
        else:
            self.abort()


def report_targets(output: str | None, fmt: str, html: str | None,
                   rejects: str | None) -> list[Target]:
    """The targets of a command that reports (``stats``, ``agree``, ``compare``): the report
    in ``fmt`` (``table`` or ``markdown``: text; ``json``) at ``output`` (``-``: stdout),
    its HTML page, and the rejects; none is a sidecar of another."""
    return [Target("output", output, "json" if fmt == "json" else "text"),
            Target("html", html, "html"), Target("rejects", rejects, "rejects")]


def open_reports(targets: Transaction, fmt: str) -> dict[str, AtomicOutput]:
    """The report targets of ``report_targets`` that are files to write, opened at once (a
    folder that cannot be written to fails before the input is read): the HTML page, and the
    report unless it is a table for the terminal, which is printed once the run is committed
    (fitted to the terminal's width)."""
    roles = ["html"] if targets.path("html") else []
    if targets.path("output") is not None and not (fmt == "table" and
                                                   targets.path("output") == "-"):
        roles.append("output")
    return {role: targets.open(role) for role in roles}


def _default(target: Target, main: Target | None, beside_streams: bool) -> str | None:
    """The sidecar default of ``target`` (None: it has a path, or none by default): beside
    the main target (``sidecar``), or inside it when it is a directory of parts. Stdout gets
    no sidecars; a FIFO or device gets them only with ``beside_streams``."""
    if target.path is not None or target.beside is None or main is None:
        return None
    path = main.path
    if path is None or path == "-":
        return None
    if main.directory:
        return path + target.beside.lstrip(".")
    if beside_streams or store.is_url(path) or os.path.isfile(path) \
            or not os.path.exists(path):
        return sidecar(path, target.beside)
    return None


def _exists(path: str, main: Target | None) -> bool:
    """Whether an earlier file is at ``path`` (inside a directory of parts, none survives:
    the directory is replaced whole)."""
    if main is not None and main.directory and main.path is not None \
            and path.startswith(main.path):
        return False
    if store.is_url(path):
        fs, inner = store.filesystem(path)
        return bool(fs.exists(inner))
    return os.path.lexists(path)

