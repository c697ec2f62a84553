"""What every source yields and every row builder returns: rows, built cases, row problems.

A source yields ``Row``s in input order; a builder turns a row's values into a case dict
and says, for each case field it filled, which source column (or JSON path) it came from,
so a reject can name the column as well as the case field.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

CasePath = tuple[str | int, ...]


class Row(NamedTuple):
    """One source row: its 1-based number, its values (None when unreadable), the problem
    that made it unreadable, whether it is blank (nothing in it), and its raw bytes when it
    could not be read (else the reject shows its values)."""

    number: int
    values: dict[str, Any] | None
    problem: RowProblem | None = None
    blank: bool = False
    raw: bytes = b""


# ``Row(number, values, None, blank, b"")`` made in C, for the readers' usual rows: a
# NamedTuple's own ``__new__`` is a Python function (0.5-0.8 us a row more, measured).
values_row = functools.partial(tuple.__new__, Row)


class RowProblem(Exception):
    """A row that cannot become a case: the source column, the case field, a sentence."""

    def __init__(self, sentence: str, column: str | None = None, path: str | None = None,
                 kind: str = "cannot convert", case_id: str | None = None) -> None:
        super().__init__(sentence)
        self.sentence, self.column, self.path, self.kind = sentence, column, path, kind
        self.case_id = case_id


@dataclass(slots=True)  # made once a row: slots measured 0.08 us a row less
class Built:
    """A case as a dict in wire order, and where each of its fields came from; for a format
    that writes verdicts (a peer's judge), the case's verdicts (each without its
    ``case_id``, which the run adds) and the case holds only its ``id``."""

    case: dict[str, Any]
    origin: dict[CasePath, str] = field(default_factory=dict)
    verdicts: list[dict[str, Any]] | None = None
    # The column the run took the case id from (set by the run, not the builder): kept
    # apart from ``origin``, which a builder may share between rows (``mapping.build``).
    id_column: str | None = None

    def column_of(self, path: str | None) -> str | None:
        """The source column (or source JSON path) behind a case JSON path such as
        ``$.context[2].text``: the origin of its longest recorded prefix."""
        parts = parse_path(path or "$")
        if parts == ("id",) and self.id_column is not None:
            return self.id_column
        while True:
            if parts in self.origin:
                return self.origin[parts]
            if not parts:
                return None
            parts = parts[:-1]


_PART = re.compile(r'\.([^.\[\]]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def parse_path(path: str) -> CasePath:
    """``$.expected["claim-support"].status`` -> ("expected", "claim-support", "status")."""
    import json

    parts: list[str | int] = []
    for name, index, quoted in _PART.findall(path.removeprefix("$")):
        parts.append(name if name else int(index) if index else json.loads(quoted))
    return tuple(parts)


class Notes:
    """What conversion did to rows that became cases, for the report: non-text parts named
    by placeholders, ids generated, tool statuses, roles read as others, labels.

    One flat dict of counts keyed by (kind, key, sub-key): a row's notes cost one small dict,
    and adding them to the run's is one loop (six Counters a row cost ~7 us)."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str, str], int] = {}

    def add(self, kind: str, key: str, sub: str = "", n: int = 1) -> None:
        k = (kind, key, sub)
        self.counts[k] = self.counts.get(k, 0) + n

    def label(self, rubric: str, status: str) -> None:
        self.add("labels", rubric, status)

    def verdict(self, rubric: str, status: str, cause: str | None = None) -> None:
        """A verdict written (formats that write verdicts), and an unscored one's cause."""
        self.add("verdicts", rubric, status)
        if cause is not None:
            self.add("unscored", cause)

    def unmapped_score(self, scorer: str, value: str) -> None:
        self.add("unmapped_scores", scorer, value)

    def __bool__(self) -> bool:
        return bool(self.counts)

    def merge(self, other: Notes) -> None:
        """Add another row's notes (a row's notes count only once it became a case)."""
        counts = self.counts
        for k, n in other.counts.items():
            counts[k] = counts.get(k, 0) + n

    def flat(self, kind: str) -> dict[str, int]:
        """The counts of one kind, by key, sorted."""
        return dict(sorted((k, n) for (c, k, _), n in self.counts.items() if c == kind))

    def nested(self, kind: str) -> dict[str, dict[str, int]]:
        """The counts of one kind, by key and sub-key, sorted."""
        out: dict[str, dict[str, int]] = {}
        for (c, k, sub), n in sorted(self.counts.items()):
            if c == kind:
                out.setdefault(k, {})[sub] = n
        return out


Builder = Callable[[dict[str, Any], Notes], Built]

OWN_ID = "id"  # the key of a row that holds its own id

# A builder whose cases the run gives ids to may hold the id's place with this, first in the
# case, so that the run fills it in place instead of copying the case to put the id first
# (0.6 us a table row, measured 2026-12-05); it never reaches an output.
ID_SLOT: Any = object()


def own_id(values: dict[str, Any]) -> str | None:
    """A row's own id: its ``id`` (text, or an integer written as text) when that is a valid
    case id (``schema.is_id``: the one id rule), else None. Without ``--id-from`` it is the
    case id; a row without one gets a hash of its content."""
    from evalstream._cases.schema import is_id

    value = values.get(OWN_ID)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value)
    return text if is_id(text) else None


def type_word(value: Any) -> str:
    """How a sentence names the type of a value from the data."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"
