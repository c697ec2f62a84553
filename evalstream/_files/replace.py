"""Whether a run may replace the files it writes: only what evalstream wrote before, of the
kind it is about to write, unless ``--force``.

A shell glob (``build shards/part-*.jsonl``) or a swapped argument names a dataset as an
output; replacing it would lose the data with exit 0. So before anything is read, each
existing target's first bytes are looked at: an empty file, a FIFO, a device or a new name
may always be written; a file that holds an evalstream output of the same kind (build's
judge states over judge states, a report over a report) may be replaced, as a re-run
does; anything else (cases, verdicts under build's output name, a CSV, a text the user
wrote) is refused with one sentence naming what it holds and the fix.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence

from evalstream._files import store
from evalstream._files.sniff import HEAD_BYTES, decompressed_head, diagnose, jsonl_kind, said
from evalstream.errors import UsageError

# What a target is about to hold (the third item of a target), said for people.
WRITES = {
    "judge states": "judge states",
    "verdicts": "verdicts",
    "cases": "cases",
    "rejects": "rejects",
    "json": "evalstream's JSON",
    "text": "evalstream's text or markdown",
    "html": "an evalstream HTML page",
    "view index": "the index evalstream view keeps",
}

Target = tuple[str, "str | None", str]  # (role, e.g. "output"; path; the kind written)


def check_replaceable(targets: Sequence[Target], force: bool = False) -> None:
    """Raise UsageError when a target exists and holds something other than an evalstream
    output of the kind written there (``WRITES``); ``force`` allows it."""
    if force:
        return
    for role, path, kind in targets:
        if path is None or path == "-" or not _holds_data(path):
            continue
        try:
            content = decompressed_head(store.read_head(path, HEAD_BYTES), path)
        except Exception:  # unreadable or not the compression its name says: not ours
            content = b"\0"
        held = holds(content, kind)
        if held is not None:
            raise UsageError(
                f"{path} holds {held}, and this run would replace it with {WRITES[kind]} (its "
                f"{role}); choose another {role} name, or give --force to replace it.")


def _holds_data(path: str) -> bool:
    """Whether ``path`` (a local path, or a URL: an object store's objects are checked as
    files are) names a regular file or object that is not empty; False for a new name (or
    one the write will report on), a FIFO or a device."""
    try:
        if store.is_url(path):
            fs, inner = store.filesystem(path)
            info = fs.info(inner)
            return info.get("type") == "file" and bool(info.get("size"))
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size > 0


def holds(head: bytes, kind: str) -> str | None:
    """None when ``head`` (a file's first bytes) is an evalstream output of ``kind``, else
    what it holds, said for people."""
    lines = [line for line in head.splitlines() if line.strip()][:1]
    first = lines[0].strip() if lines else b""
    if kind == "rejects" and _object_with(first, ("error", "raw")):
        return None  # every command's rejects (build's name a line, convert's a row)
    if kind in ("judge states", "verdicts", "cases", "rejects"):
        found = jsonl_kind(head)
        if found == kind or (kind == "judge states" and _exact_verdict(first)):
            # build's output may open with one of its exact verdicts, which judge passes
            # through: such a file may be replaced by either
            return None
        if found is not None:
            return said(found)
    elif kind == "json":
        if first.startswith(b"{") and (b'"evalstream"' in head or b'"evalstream.' in head):
            return None
    elif kind == "text":
        if first.startswith((b"evalstream ", b"# evalstream ")):
            return None
    elif kind == "html":
        if b"<title>evalstream" in head[:4096]:
            return None
    elif kind == "view index":
        if head.startswith(b"evalstream view index\n"):  # view.kept.MAGIC
            return None
    sniffed = diagnose(head)
    if sniffed is not None:
        return sniffed.what
    return "data evalstream did not write"


def _object(line: bytes) -> dict[str, object] | None:
    """The JSON object on ``line``, or None."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _object_with(line: bytes, keys: tuple[str, ...]) -> bool:
    value = _object(line)
    return value is not None and all(k in value for k in keys)


def _exact_verdict(line: bytes) -> bool:
    """Whether ``line`` is an exact verdict as build writes it (``"kind": "exact"``)."""
    value = _object(line)
    return value is not None and value.get("kind") == "exact" and "status" in value
