"""The lists of ``evalstream view``: which checks each holds, in which order, and filtering.

Each list is an array of check keys (``row << 32 | rubric``) in display order with one
small code per entry for its *kind* (a disagreement's direction, a flip's transition, an
unscored verdict's cause, a skipped check's reason, a verdict's status). The other filters
(rubric, label source, ``--by`` group) and the case-id search are computed from the keys
when asked, vectorised over the whole list, so a list costs 10 bytes an entry.

The rejects list is apart: its entries are rejected lines, not checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalstream._verdicts.records import FAIL, NA_VERDICT, PASS, STATUSES, UNSCORED
from evalstream._verdicts.stale import RUBRIC, STATE
from evalstream._view import pairs
from evalstream._view.index import LABEL_STATUSES, NONE, ROLES, SOURCES, Index

if TYPE_CHECKING:
    import numpy as np

PAGE_SIZE = 50
NO_LABEL = "no label"
SOURCE_NAMES = (*SOURCES, NO_LABEL)
DIMENSIONS = ("rubric", "source", "group", "kind")
MISSED, FALSE_ALARM = "missed", "false alarm"
NA_VERDICT_KIND = "na verdict"  # label pass or fail, judge na: a disagreement of its own kind
STATE_CHANGED, RUBRIC_CHANGED = "state changed", "rubric changed"
NOT_COMPARABLE, ONLY_A, ONLY_B = "not comparable", "only in this run", "only in the other run"
NO_CAUSE = "(no cause given)"


@dataclass(frozen=True)
class ListSpec:
    """What a list is called and what its kind filter means."""

    name: str  # in URLs and file names
    title: str
    blurb: str
    kind_label: str  # what the kind filter is called on this list


SPECS = {
    "disagreements": ListSpec(
        "disagreements", "Disagreements with labels",
        "Checks where the judge's verdict differs from a pass or fail label: missed fails "
        "(label fail, judge pass) first, then false alarms (label pass, judge fail), then na "
        "verdicts (the judge said the rubric does not apply where the label says it does); "
        "each in verdict-file order.",
        "direction"),
    "flips": ListSpec(
        "flips", "Changes against the other run",
        "Checks whose verdict differs in the run given with --compare: pass->fail, then "
        "fail->pass, then other changes; then pairs the judge did not see alike (rubric, "
        "state or exposure differ) and checks found in one run only.",
        "change"),
    "unscored": ListSpec(
        "unscored", "Unscored verdicts",
        "Verdicts the judge gave no usable answer for, with their cause, in file order.",
        "cause"),
    "split": ListSpec(
        "split", "Split panels",
        "Verdicts of a panel (judge --jury, or --samples) whose scored votes differ, by their "
        "votes, in file order; each vote, with its rationale, is on the check page.",
        "votes"),
    "skipped": ListSpec(
        "skipped", "Skipped checks",
        "Checks without a verdict: over the token budget, judge states not judged, labels "
        "whose check has no verdict, and checks build skipped because the rubric does not "
        "apply (requires, when).",
        "reason"),
    "verdicts": ListSpec(
        "verdicts", "All verdicts", "Every verdict of the run, in file order.", "status"),
    "stale": ListSpec(
        "stale", "Stale verdicts",
        "Verdicts judged on another state than build makes of the case today (the case "
        "changed, or the rubric no longer applies), then under another version of the "
        "rubric; each in file order. agree leaves them out of its figures.",
        "change"),
    "pairs": ListSpec(  # issue 28 (view.pairs)
        "pairs", "Inconsistent pairs",
        "Pairwise verdicts whose two orders disagree (run A's response shown first, then run "
        "B's): the judge named the response in the first place both times, or the one in the "
        "second place both times, or said tie in one order only. Each is decided a tie. In "
        "verdict-file order.",
        "kind"),
}
LIST_NAMES = ("disagreements", "flips", "unscored", "split", "skipped", "stale", "pairs",
              "verdicts")


@dataclass
class Filters:
    """A list's filters, by name: each None (all) or one value; ``case`` an exact case id."""

    rubric: str | None = None
    source: str | None = None
    group: str | None = None
    kind: str | None = None
    case: str | None = None

    def items(self) -> list[tuple[str, str]]:
        return [(name, value) for name in (*DIMENSIONS, "case")
                if (value := getattr(self, name)) is not None]

    def without(self, name: str) -> Filters:
        values = dict(self.items())
        values.pop(name, None)
        return Filters(**values)


@dataclass
class EntryList:
    """The entries of one list, in display order."""

    spec: ListSpec
    keys: np.ndarray  # u64
    kind: np.ndarray  # u16 code in kind_names
    kind_names: list[str]
    _columns: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.keys)

    def column(self, index: Index, dim: str) -> np.ndarray:
        """The codes of one filter dimension for every entry (computed once)."""
        import numpy as np

        found = self._columns.get(dim)
        if found is None:
            if dim == "kind":
                found = self.kind
            elif dim == "rubric":
                found = (self.keys & np.uint64(NONE)).astype(np.uint32)
            elif dim == "group":
                found = index.group_of(self.keys)
            else:
                at = index.label_of(self.keys)
                found = take(index.label_source, at, len(SOURCES))
            self._columns[dim] = found
        return found

    def names(self, index: Index, dim: str) -> list[str]:
        """The names of a dimension's codes."""
        if dim == "kind":
            return self.kind_names
        if dim == "rubric":
            return index.rubric_names.names
        if dim == "group":
            return index.groups.names
        return list(SOURCE_NAMES)

    def counts(self, index: Index, dim: str) -> list[tuple[str, int]]:
        """(value, entries) of a dimension over the whole list, values in code order."""
        import numpy as np

        names = self.names(index, dim)
        column = self.column(index, dim)
        column = column[column != NONE]
        if not len(column):
            return []
        counted = np.bincount(column, minlength=len(names))
        return [(names[code], int(n)) for code, n in enumerate(counted) if n]

    def select(self, index: Index, filters: Filters) -> np.ndarray | None:
        """The positions of the entries that pass every filter, in order; None when a
        filter names a value the list cannot have (an unknown rubric, say)."""
        import numpy as np

        mask = np.ones(len(self.keys), bool)
        for dim in DIMENSIONS:
            value = getattr(filters, dim)
            if value is None:
                continue
            names = self.names(index, dim)
            if dim == "group" and value == "(not in the cases file)":
                code = NONE
            elif value in names:
                code = names.index(value)
            else:
                return None
            mask &= self.column(index, dim) == code
        if filters.case is not None:
            row = index.row_of(filters.case)
            if row is None:
                return None
            mask &= (self.keys >> np.uint64(32)) == np.uint64(row)
        return np.flatnonzero(mask)


def take(values: np.ndarray, at: np.ndarray, missing: int) -> np.ndarray:
    """``values[at]``, with ``missing`` where ``at`` is -1 (no such record)."""
    import numpy as np

    out = np.full(len(at), missing, dtype=values.dtype)
    hit = at >= 0
    out[hit] = values[at[hit]]
    return out


def _ordered(keys: np.ndarray, kind: np.ndarray, then: np.ndarray) -> tuple[np.ndarray, ...]:
    import numpy as np

    order = np.lexsort((then, kind))
    return keys[order], kind[order]


def disagreements(index: Index) -> EntryList:
    import numpy as np

    run = index.run
    at = index.label_of(run.key)
    has = at >= 0
    label = take(index.label_status, at, 255)
    status = run.status
    missed = has & (label == LABEL_STATUSES.index("fail")) & (status == PASS)
    alarm = has & (label == LABEL_STATUSES.index("pass")) & (status == FAIL)
    na = has & (label != LABEL_STATUSES.index("na")) & (status == NA_VERDICT)
    chosen = np.flatnonzero(missed | alarm | na)
    kind = np.select([missed[chosen], alarm[chosen]], [0, 1], 2).astype(np.uint16)
    keys, kind = _ordered(run.key[chosen], kind, run.line[chosen])
    return EntryList(SPECS["disagreements"], keys, kind, [MISSED, FALSE_ALARM, NA_VERDICT_KIND])


def flip_names() -> list[str]:
    """pass->fail, fail->pass, the other changes of status, then the pairs not compared."""
    first = ["pass->fail", "fail->pass"]
    rest = sorted(f"{a}->{b}" for a in STATUSES for b in STATUSES
                  if a != b and f"{a}->{b}" not in first)
    return [*first, *rest, NOT_COMPARABLE, ONLY_A, ONLY_B]


def flips(index: Index) -> EntryList:
    import numpy as np

    a, b = index.run, index.other
    names = flip_names()
    if b is None:
        return EntryList(SPECS["flips"], np.zeros(0, np.uint64), np.zeros(0, np.uint16), names)
    code = {n: i for i, n in enumerate(names)}
    at = b.find(a.key)
    paired = np.flatnonzero(at >= 0)
    other = at[paired]
    assert a.hashes is not None and b.hashes is not None
    differs = (a.hashes[paired] != b.hashes[other]).any(axis=1)
    sa, sb = a.status[paired], b.status[other]
    transition = np.array([[code.get(f"{x}->{y}", NONE & 0xFFFF) for y in STATUSES]
                           for x in STATUSES], dtype=np.uint16)
    kind = np.where(differs, code[NOT_COMPARABLE], transition[sa, sb]).astype(np.uint16)
    keep = differs | (sa != sb)
    only_a = np.flatnonzero(at < 0)
    only_b = np.flatnonzero(a.find(b.key) < 0)
    keys = np.concatenate([a.key[paired[keep]], a.key[only_a], b.key[only_b]])
    kinds = np.concatenate([kind[keep], np.full(len(only_a), code[ONLY_A], np.uint16),
                            np.full(len(only_b), code[ONLY_B], np.uint16)])
    lines = np.concatenate([a.line[paired[keep]], a.line[only_a], b.line[only_b]])
    keys, kinds = _ordered(keys, kinds, lines)
    return EntryList(SPECS["flips"], keys, kinds, names)


def unscored(index: Index) -> EntryList:
    import numpy as np

    run = index.run
    chosen = np.flatnonzero(run.status == UNSCORED)
    names = [NO_CAUSE, *index.causes.names]
    return EntryList(SPECS["unscored"], run.key[chosen], run.cause[chosen].astype(np.uint16),
                     names)


def skipped(index: Index) -> EntryList:
    import numpy as np

    names = index.reasons.names
    # The first three reasons (over budget, not judged, no verdict) keep their place; the
    # reasons build gives for a rubric that does not apply follow by name.
    rank = np.array(sorted(range(len(names)), key=lambda c: (c >= 3, names[c] if c >= 3 else c)))
    place = np.empty(len(names), np.uint16)
    place[rank] = np.arange(len(names), dtype=np.uint16)
    order = np.lexsort((index.skipped_key, place[index.skipped_reason]))
    return EntryList(SPECS["skipped"], index.skipped_key[order],
                     index.skipped_reason[order].astype(np.uint16), list(names))


def stale(index: Index) -> EntryList:
    import numpy as np

    run = index.run
    codes = run.stale if run.stale is not None else np.zeros(len(run.key), np.uint8)
    chosen = np.flatnonzero((codes == STATE) | (codes == RUBRIC))
    kind = np.where(codes[chosen] == STATE, 0, 1).astype(np.uint16)
    keys, kind = _ordered(run.key[chosen], kind, run.line[chosen])
    return EntryList(SPECS["stale"], keys, kind, [STATE_CHANGED, RUBRIC_CHANGED])


def split(index: Index) -> EntryList:
    """A panel's verdicts whose votes differ (issue 26: ``_view.panel_index``), by their
    pattern of votes, in file order within it."""
    import numpy as np

    p = index.panels
    keys = np.frombuffer(p.keys, dtype=np.uint64) if len(p.keys) else np.zeros(0, np.uint64)
    kind = np.frombuffer(p.kinds, dtype=np.uint16) if len(p.kinds) else np.zeros(0, np.uint16)
    keys, kind = _ordered(keys, kind, np.arange(len(keys)))
    return EntryList(SPECS["split"], keys, kind, list(p.patterns))


def verdicts(index: Index) -> EntryList:
    import numpy as np

    return EntryList(SPECS["verdicts"], index.run.key, index.run.status.astype(np.uint16),
                     list(STATUSES))


def inconsistent(index: Index) -> EntryList:
    """The inconsistent pairs (``view.pairs``), by kind, each in verdict-file order."""
    import numpy as np

    run = index.run
    codes = run.pair if run.pair is not None else np.zeros(len(run.key), np.uint8)
    chosen = np.flatnonzero((codes >= pairs.FIRST) & (codes <= pairs.ONE_TIE))
    kind = (codes[chosen] - pairs.FIRST).astype(np.uint16)
    keys, kind = _ordered(run.key[chosen], kind, run.line[chosen])
    return EntryList(SPECS["pairs"], keys, kind, list(pairs.KINDS))


BUILDERS = {"disagreements": disagreements, "flips": flips, "unscored": unscored,
            "split": split, "skipped": skipped, "stale": stale, "pairs": inconsistent,
            "verdicts": verdicts}


class Lists:
    """Every list of one index, built once."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.lists = {name: BUILDERS[name](index) for name in LIST_NAMES}
        self.rejects = RejectList(index)

    def __getitem__(self, name: str) -> EntryList:
        return self.lists[name]

    def available(self) -> list[str]:
        """The list names to show (flips only with --compare, stale verdicts only when there
        are some: the overview says so either way; pairs only with pairwise verdicts; split
        panels only when the verdicts carry votes)."""
        return [n for n in LIST_NAMES if (n != "flips" or self.index.other is not None)
                and (n != "stale" or len(self.lists[n]))
                and (n != "pairs" or pairs.has_pairs(self.index))
                and (n != "split" or self.index.panels.with_votes)]


@dataclass
class RejectList:
    """Rejected lines of every file, in file order (cases, verdicts, compare, states)."""

    index: Index

    def __len__(self) -> int:
        return len(self.index.rejects)

    def _codes(self, dim: str) -> np.ndarray:
        import numpy as np

        log = self.index.rejects
        values = log.role if dim == "file" else log.kind
        return np.frombuffer(values, dtype=values.typecode) if len(values) else \
            np.zeros(0, np.uint8)

    def names(self, dim: str) -> list[str]:
        return list(ROLES) if dim == "file" else self.index.rejects.kinds.names

    def counts(self, dim: str) -> list[tuple[str, int]]:
        """(value, rejects) for ``file`` or ``kind``; kinds by name."""
        import numpy as np

        names = self.names(dim)
        codes = self._codes(dim)
        if not len(codes):
            return []
        counted = np.bincount(codes, minlength=len(names))
        found = [(names[c], int(n)) for c, n in enumerate(counted) if n]
        return found if dim == "file" else sorted(found)

    def select(self, file: str | None, kind: str | None) -> np.ndarray | None:
        """The positions of the rejects of this file role and kind (None: all); None when
        a value is unknown."""
        import numpy as np

        mask = np.ones(len(self), bool)
        for dim, value in (("file", file), ("kind", kind)):
            if value is None:
                continue
            names = self.names(dim)
            if value not in names:
                return None
            mask &= self._codes(dim) == names.index(value)
        return np.flatnonzero(mask)


def page_of(positions: np.ndarray, page: int, limit: int | None = None,
            size: int = PAGE_SIZE) -> tuple[np.ndarray, int, int]:
    """The positions shown on page ``page``, that page (1-based, clamped) and the number of
    pages; with ``limit`` (the static export) the first ``limit`` positions, one page."""
    if limit is not None:
        return positions[:limit], 1, 1
    pages = max(1, -(-len(positions) // size))
    page = min(max(page, 1), pages)
    return positions[(page - 1) * size:page * size], page, pages
