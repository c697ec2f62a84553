"""What a file plainly is (``Sniffed``, as ``sniff`` finds it), and how it becomes cases.

The second is not this layer's to say. Which ``convert`` format reads a CSV table or a
Parquet file, and with which options, is convert's knowledge (the registry of its formats,
``evalstream._convert.formats``), which sits above this layer and beside the commands that
read cases and say the sentence (build, validate, stats, view). So the package root, which
every process imports first (a Dask worker too), installs convert's answer here
(``install_way_in``), and every wrong-file sentence asks for it (``way_in``). Without it,
a sentence ends with the file's own fix only.

Kept cheap to import for the root: nothing but ``re`` and typing, which it loads anyway.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple


class Sniffed(NamedTuple):
    """What a file is (``kind``, a stable short name), said for people, and the fix that
    needs no other command ("" when the only way in is to convert it)."""

    kind: str
    what: str  # "a CSV table (columns: question, answer)"
    fix: str  # one clause, imperative; FILE stands for the file
    separator: str = ""  # a table's cell separator, as found

    def remedy(self) -> str:
        """The clause that says what to do: how the file becomes cases (``way_in``), else
        its own fix; FILE stands for the file."""
        return way_in(self) or self.fix

    def sentence(self, name: str) -> str:
        """One sentence for the file called ``name`` (``-``: standard input): what it is, not
        JSONL, and the fix."""
        said = "the standard input" if name == "-" else name
        fix = self.remedy().replace("FILE", quoted(name))
        return (f"{said} is {self.what}, not JSONL cases (one JSON object per line)"
                f"{'; ' + fix if fix else ''}.")


def quoted(name: str) -> str:
    """A file name as a shell command line may hold it."""
    return name if re.fullmatch(r"[\w./@:+-]+", name) else "'" + name.replace("'", "'\\''") + "'"


WayIn = Callable[[Sniffed], "str | None"]
_way_in: WayIn | None = None


def install_way_in(answer: WayIn) -> None:
    """Say, from above, how a file of each kind becomes cases (``evalstream/__init__.py``
    installs convert's registry)."""
    global _way_in
    _way_in = answer


def way_in(found: Sniffed) -> str | None:
    """How a file found to be ``found`` becomes cases (a clause; FILE stands for the file),
    or None when nothing reads such a file."""
    return _way_in(found) if _way_in is not None else None
