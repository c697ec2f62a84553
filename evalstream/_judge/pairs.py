"""The two orders of a pairwise state, read as one pair (issue 28).

``build --pair-with`` writes each pair's states on consecutive lines: run A's response first
(``pair.order`` ``ab``), then run B's (``ba``), both carrying the pair's key, the xxh3-128 of
the two states' hashes in that order. ``judge``, ``--dry-run`` and ``batch prepare`` read the
states through ``Orders.items``, which gives each such couple as one ``Pair``: both orders
are asked (two requests, each stored under its own key like any state), and pass 2 and
``batch collect`` make one verdict of their answers (``verdict.pair_answered``).

An order without its other order on the line next to it, or two whose key does not tie them
together, is a reject (its line, ``$.pair``, a sentence): a pair is judged in both orders or
not at all, never paid for by halves, and memory holds one state at most, whatever the file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from evalstream._cases.rejects import Reject, raw_text
from evalstream._checks.state import pair_key
from evalstream._judge.inputs import Exact, JudgeState

UNPAIRED = "unpaired order"  # the kind of such a reject, in the run's counts


class Pair(NamedTuple):
    """A pairwise state's two orders: ``first`` shows run A's response first, ``second`` run
    B's."""

    first: JudgeState
    second: JudgeState

    @property
    def line(self) -> int:
        return self.first.line


Item = JudgeState | Pair | Exact | Reject


class Orders:
    """Puts each pairwise state's two orders together, counting what it rejects."""

    def __init__(self) -> None:
        self.rejected = 0
        self.rejected_by_kind: Counter[str] = Counter()

    def items(self, items: Iterable[JudgeState | Exact | Reject]) -> Iterator[Item]:
        """``items`` (from ``inputs.Reader``) with every ``ab`` state and the ``ba`` state on
        the next line made one ``Pair``; a lone order becomes a reject."""
        held: JudgeState | None = None  # an order ab, waiting for its order ba
        for item in items:
            if held is not None:
                if isinstance(item, JudgeState) and item.pair is not None \
                        and item.pair.order == "ba":
                    why = _apart(held, item)
                    if why is None:
                        yield Pair(held, item)
                        held = None
                        continue
                    yield self._lone(held, why)
                    yield self._lone(item, why)
                    held = None
                    continue
                yield self._lone(held, "the next line is not its order ba")
                held = None
            if isinstance(item, JudgeState) and item.pair is not None:
                if item.pair.order == "ab":
                    held = item
                else:
                    yield self._lone(item, "the line before it is not its order ab")
                continue
            yield item
        if held is not None:
            yield self._lone(held, "it is the last line: its order ba is missing")

    def _lone(self, state: JudgeState, why: str) -> Reject:
        assert state.pair is not None
        self.rejected += 1
        self.rejected_by_kind[UNPAIRED] += 1
        return Reject(state.line, state.offset, state.case_id, "$.pair", (
            f"This is order {state.pair.order} of a pairwise state (rubric "
            f"`{state.rubric_id}`), and {why}: build writes the two orders of a pair on "
            "consecutive lines (ab, then ba), and a pair is judged in both orders or not at "
            "all. Rebuild the states rather than editing, sorting or filtering them."),
            raw_text(state.state.encode()))


def _apart(first: JudgeState, second: JudgeState) -> str | None:
    """Why two consecutive orders are not one pair's, or None when they are."""
    assert first.pair is not None and second.pair is not None
    if (first.case_id, first.rubric_id, first.rubric_hash) != (
            second.case_id, second.rubric_id, second.rubric_hash):
        return "the next line, an order ba, is of another case or rubric"
    if first.pair.key != second.pair.key or first.pair.chars != second.pair.chars \
            or first.pair.key != pair_key(first.state_hash, second.state_hash):
        return ("its key does not tie it to the order ba on the next line (the key is the "
                "xxh3-128 of the two orders' state hashes)")
    return None
