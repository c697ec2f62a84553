"""The text of a TOML settings file (a rubric file, a jury file) and its document, with the
sentences that name the file and what it is: one reading for every kind of settings file."""

from __future__ import annotations

import tomllib
from typing import Any


def read_text(path: str, kind: str, error: type[Exception], given: str) -> str:
    """The UTF-8 text of the ``kind`` file at ``path`` (e.g. "rubric"); ``error`` naming the
    file when it cannot be read or is not UTF-8 text. ``-`` is refused with a sentence that
    says how such a file is ``given`` (``--rubrics FILE``): stdin is a run's data (its cases,
    its judge states), so a settings file is never read from it."""
    if path == "-":
        raise error(f"`-` (stdin) is no {kind} file: {kind} files are never read from stdin, "
                    f"which carries a command's data, not its settings; give the file's path "
                    f"({given}).")
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except OSError as exc:
        raise error(f"{path}: cannot read the {kind} file: {exc.strerror or exc}.") from exc
    except UnicodeDecodeError as exc:
        raise error(f"{path}: the {kind} file is not UTF-8 text: {exc}.") from exc


def parse(text: str, source: str, kind: str, needs: str,
          error: type[Exception]) -> dict[str, Any]:
    """The TOML document of a ``kind`` file's text (``source``: its name, for the sentences;
    ``needs``: the levels such a file needs, said when it nests too deeply to read)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{source}: not valid TOML: {exc}.") from exc
    except RecursionError:
        raise error(f"{source}: arrays or tables nest too deeply to read; a {kind} file "
                    f"needs {needs}.") from None
