"""What the SQLite files judge keeps (the answer store, a batch's manifest) share: each is
checked on opening against the tables its schema creates, and read with every SQLite error
(a damaged page, say) turned into the file's own sentence, never a ``sqlite3`` traceback.

A damaged file whose header is intact opens, and fails only when a damaged page is read; a
file another program changed (a renamed column, a table rebuilt) opens too. Both were exit 70.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from evalstream.errors import EvalstreamError

_P = ParamSpec("_P")
_R = TypeVar("_R")


class Kept(Protocol):
    """A SQLite file evalstream keeps: it says what is wrong with it in its own sentence."""

    def damaged(self, what: str) -> EvalstreamError:
        """The error for a file that ``what`` (``cannot be read (...)``, ``has the columns``)."""
        ...


_K = TypeVar("_K", bound=Kept)


def reads(method: Callable[Concatenate[_K, _P], _R]) -> Callable[Concatenate[_K, _P], _R]:
    """``method`` of a kept file, with SQLite's errors as the file's sentence."""
    @functools.wraps(method)
    def read(self: _K, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise self.damaged(f"cannot be read ({exc})") from exc
    return read


@functools.cache
def _tables(schema: str) -> dict[str, tuple[str, ...]]:
    """The columns of each table ``schema`` creates, in order (made once, in memory)."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(schema)
        return {name: columns(db, name) for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")}
    finally:
        db.close()


def columns(db: sqlite3.Connection, table: str) -> tuple[str, ...]:
    """The columns of ``table`` in ``db``, in order (none: no such table)."""
    return tuple(name for (name,) in db.execute("SELECT name FROM pragma_table_info(?)",
                                                (table,)))


def check_tables(db: sqlite3.Connection, schema: str, kept: Kept) -> None:
    """Raise the file's error unless every table ``schema`` creates is in ``db`` with exactly
    its columns (statements name columns by position: ``INSERT ... VALUES``)."""
    try:
        for table, expected in _tables(schema).items():
            found = columns(db, table)
            if found != expected:
                raise kept.damaged(
                    f"has the table {table} with the columns ({', '.join(found)})"
                    f" where evalstream writes ({', '.join(expected)})" if found else
                    f"has no table {table}")
    except sqlite3.Error as exc:
        raise kept.damaged(f"cannot be read ({exc})") from exc


def sql_type(value: object) -> str:
    """The SQLite type of a value read from a row."""
    return {bytes: "BLOB", str: "TEXT", int: "INTEGER", float: "REAL"}.get(type(value), "NULL")
