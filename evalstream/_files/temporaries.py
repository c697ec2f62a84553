"""Temporary files and folders named after the run that made them, so that a later run can
remove those a killed run left behind (kill -9, the OOM killer, a power cut) and never
touch a live run's.

A temporary's name carries the process id of its run and a tag of the machine and boot
(``.states.jsonl.4242-1f0c9a3b.x8k2_q0z.tmp``). A later run removes one only when the tag
is this machine's and this boot's and no process has that id: a run on another machine
sharing the folder (NFS), or before a reboot, is never mistaken for a dead one of ours,
and a process id reused by another program only keeps a stale file a little longer.

Every temporary that belongs to a target starts with the target's hidden name, whatever it
is (the file being written ``.tmp``, a folder replaced ``.old``, the workers' part files
``.evalstream-parts``): the next run of that target, with or without workers, removes every
one a dead run left (``remove_stale`` matches any suffix). Those of no target live in the
system's temporary folder under ``SHARED`` prefixes, and every build, validate and stats
run removes the dead ones there (``remove_stale_shared``).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

_NAME = re.compile(r"(\d+)-([0-9a-f]{8})\.[a-z0-9_]{8}")
# Prefixes of the temporaries of no target, in the system's temporary folder: the part files
# of `stats` workers, and of `build`/`validate` workers writing to stdout (or nowhere).
SHARED_PARTS = ".evalstream-parts-"
STATS_PARTS = "evalstream-stats-"
SHARED = (STATS_PARTS, SHARED_PARTS)
PARTS_SUFFIX = ".evalstream-parts"  # a folder of part files beside its target
_RUN = re.compile(r"(\d+)-([0-9a-f]{8})\.")


@cache
def _machine() -> str:
    """8 hex digits naming this machine and this boot (host name and kernel boot id)."""
    import xxhash

    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    # os.uname, not socket.gethostname: importing socket costs a build 7 ms.
    return xxhash.xxh3_64_hexdigest(f"{os.uname().nodename}\0{boot}".encode())[:8]


def tag() -> str:
    """This run's part of a temporary's name: ``PID-MACHINE.``."""
    return f"{os.getpid()}-{_machine()}."


def gone(run: str) -> bool:
    """Whether the run that named something ``PID-MACHINE...`` (``tag``) is known to be dead:
    it ran on this machine, since its last boot, and no process has its id. A run elsewhere,
    or a name of another form, is never known dead."""
    found = _RUN.match(run)
    return found is not None and found[2] == _machine() and _dead(int(found[1]))


def _dead(pid: int) -> bool:
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's live process
        return False
    return False


def remove_stale(folder: str, *prefixes: str) -> list[str]:
    """Remove the temporaries in ``folder`` that runs on this machine left when they died:
    named one of ``prefixes`` + tag + random, with any suffix (``.tmp``, ``.old``, ...);
    return their names. Nothing else is touched, and a folder that cannot be listed or a
    file that cannot be removed is left as it is."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        prefix = next((p for p in prefixes if name.startswith(p)), None)
        if prefix is None:
            continue
        rest = name[len(prefix):]
        found = _NAME.match(rest)
        if (found is None or rest[found.end():found.end() + 1] not in ("", ".")
                or not gone(rest)):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(name)
        except OSError:
            pass
    return removed


def remove_stale_shared() -> list[str]:
    """Remove what dead runs left in the system's temporary folder (``SHARED``); called by
    every run that may make such a temporary, so a run without workers removes them too."""
    return remove_stale(tempfile.gettempdir(), *SHARED)


def temp_file(folder: str, prefix: str, suffix: str = ".tmp") -> tuple[int, str]:
    """A new temporary file in ``folder`` (``os.open`` descriptor and path), named for this
    run, after removing every temporary of the same ``prefix`` dead runs left."""
    remove_stale(folder, prefix)
    return tempfile.mkstemp(dir=folder, prefix=prefix + tag(), suffix=suffix)


def temp_dir(folder: str, prefix: str, suffix: str = ".tmp") -> str:
    """A new temporary folder in ``folder``, named for this run, after removing every
    temporary of the same ``prefix`` dead runs left; the caller moves or removes it."""
    remove_stale(folder, prefix)
    return tempfile.mkdtemp(dir=folder, prefix=prefix + tag(), suffix=suffix)


@contextmanager
def temp_folder(folder: str, prefix: str, suffix: str = "") -> Iterator[str]:
    """A new temporary folder in ``folder``, named for this run and removed with everything
    in it at the end, after removing every temporary of the same ``prefix`` dead runs left."""
    remove_stale(folder, prefix)
    with tempfile.TemporaryDirectory(suffix, prefix + tag(), folder) as path:
        yield path
