"""What ``view`` keeps of a panel's verdicts (issue 26): the check key of each verdict whose
scored votes differ (a split panel) and its pattern of votes, in file order, for the "split
panels" list. Twelve bytes a split verdict; the votes themselves are read again with the
verdict when its page is shown."""

from __future__ import annotations

from array import array
from typing import Any

from evalstream._verdicts.records import VOTE_STATUSES as STATUSES


class PanelIndex:
    """The split panels of the verdict file, and how many of its verdicts carried votes."""

    def __init__(self) -> None:
        self.keys = array("Q")  # check keys (row << 32 | rubric), in file order
        self.kinds = array("H")  # code of the pattern of votes, in ``patterns``
        self.patterns: list[str] = []  # "2 pass, 1 fail", by code
        self._code: dict[str, int] = {}
        self.with_votes = 0

    def add(self, key: int, votes: list[Any]) -> None:
        """A verdict's votes: kept when its scored votes differ. ``key``: its check key, or
        its place among the run's verdicts while the keys are not known yet (``keyed``)."""
        self.with_votes += 1
        counts = dict.fromkeys(STATUSES, 0)
        for vote in votes:
            counts[vote.status] += 1
        if sum(1 for s in STATUSES[:3] if counts[s]) < 2:
            return
        pattern = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        code = self._code.get(pattern)
        if code is None:
            code = self._code[pattern] = len(self.patterns)
            self.patterns.append(pattern)
        self.keys.append(key)
        self.kinds.append(code)

    def keyed(self, keys: Any) -> None:
        """The places given to ``add`` made the check keys ``keys`` (the run's, by place):
        view's index makes a verdict's key only once every case is read."""
        import numpy as np

        if len(self.keys):
            places = np.frombuffer(self.keys, dtype=np.uint64).astype(np.intp)
            self.keys = array("Q", np.ascontiguousarray(keys[places], np.uint64).tobytes())

    @property
    def nbytes(self) -> int:
        return self.keys.itemsize * len(self.keys) + self.kinds.itemsize * len(self.kinds)
