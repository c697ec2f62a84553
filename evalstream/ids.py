"""Exact duplicate-id detection in a few dozen bytes per case.

Each case id is reduced to a 128-bit xxh3 hash, kept with the line that first used it;
the ids themselves are never kept. With 128 bits, the chance that two different ids
among a billion share a hash is about 1.5e-21, so a hash match is taken as a duplicate
without re-reading the first line.

The first 32,768 ids live in a dict (about 200 bytes each, 6 MB at most), so small runs
never pay numpy's import. Past that the index moves to an open-addressing table of numpy
arrays (two uint64 hash halves and a uint64 line per slot, grown at 2/3 load: 24 bytes a
slot, 36 to 72 bytes a case), probed a block of ids at a time, vectorised.
"""

from __future__ import annotations

from typing import Any

import xxhash

_MASK64 = (1 << 64) - 1
SMALL = 1 << 15


def id_hash(case_id: str) -> int:
    """The id's 128-bit xxh3 hash (lone surrogates hashed as their escape bytes)."""
    return xxhash.xxh3_128_intdigest(case_id.encode("utf-8", "surrogatepass"))


def id_hashes(ids: list[str]) -> tuple[Any, Any]:
    """The two 64-bit halves (numpy uint64 arrays) of each id's hash; the low half is never 0."""
    import numpy as np

    digests = [id_hash(i) for i in ids]
    return _halves(np, digests)


def _halves(np: Any, digests: list[int]) -> tuple[Any, Any]:
    lo = np.fromiter((d & _MASK64 for d in digests), dtype=np.uint64, count=len(digests))
    hi = np.fromiter((d >> 64 for d in digests), dtype=np.uint64, count=len(digests))
    lo |= np.uint64(1)  # 0 marks an empty slot; one bit of 128 is a fair price
    return lo, hi


class IdIndex:
    """The ids seen so far; ``add`` reports which new ids repeat an earlier one."""

    def __init__(self, capacity: int = 1 << 16) -> None:
        self._small: dict[int, int] | None = {}
        self._capacity = capacity
        self.size = 0

    @property
    def nbytes(self) -> int:
        if self._small is not None:
            return 0
        return int(self._lo.nbytes + self._hi.nbytes + self._line.nbytes)

    def add_ids(self, ids: list[str], lines: list[int]) -> list[int]:
        """Insert ids in order; return, per id, the line of its first use or 0 if it is new."""
        small = self._small
        if small is not None and self.size + len(ids) <= SMALL:
            first = []
            for case_id, line in zip(ids, lines, strict=True):
                key = id_hash(case_id) | 1
                seen = small.get(key, 0)
                if not seen:
                    small[key] = line
                    self.size += 1
                first.append(seen)
            return first
        import numpy as np

        lo, hi = id_hashes(ids)
        return self.add(lo, hi, np.asarray(lines, dtype=np.uint64)).tolist()

    def add(self, lo: Any, hi: Any, lines: Any) -> Any:
        """Insert a block of ids (hash halves, numpy arrays) in order; return, per id, the
        line of its first use or 0. An id with a non-zero result is a duplicate and is not
        inserted."""
        import numpy as np

        if self._small is not None:
            self._to_arrays(np)
        n = len(lo)
        first = np.zeros(n, dtype=np.uint64)
        if n == 0:
            return first
        # Duplicates inside the block: later copies point at the first copy's line.
        keys = np.empty(n, dtype=[("lo", np.uint64), ("hi", np.uint64)])
        keys["lo"], keys["hi"] = lo, hi
        _, where, inverse = np.unique(keys, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        firsts = where[inverse]
        inner = firsts != np.arange(n)
        first[inner] = lines[firsts[inner]]
        todo = np.flatnonzero(~inner)
        if (self.size + len(todo)) * 3 > len(self._lo) * 2:
            self._grow(self.size + len(todo))
        found = self._insert(lo[todo], hi[todo], lines[todo])
        first[todo] = found
        # A later in-block copy of an id that was already in the table points at the table's line.
        if inner.any():
            carried = found[np.searchsorted(todo, firsts[inner])]
            first[inner] = np.where(carried != 0, carried, first[inner])
        return first

    def _to_arrays(self, np: Any) -> None:
        small = self._small or {}
        capacity = self._capacity
        while len(small) * 3 > capacity * 2:
            capacity *= 2
        self._lo = np.zeros(capacity, dtype=np.uint64)
        self._hi = np.zeros(capacity, dtype=np.uint64)
        self._line = np.zeros(capacity, dtype=np.uint64)
        self._small = None
        self.size = 0
        if small:
            lo, hi = _halves(np, list(small))
            self._insert(lo, hi, np.fromiter(small.values(), np.uint64, len(small)))

    def _insert(self, lo: Any, hi: Any, lines: Any) -> Any:
        import numpy as np

        mask = np.uint64(len(self._lo) - 1)
        slot = lo & mask
        found = np.zeros(len(lo), dtype=np.uint64)
        pending = np.arange(len(lo))
        while pending.size:
            s = slot[pending]
            here = self._lo[s]
            match = (here == lo[pending]) & (self._hi[s] == hi[pending])
            found[pending[match]] = self._line[s[match]]
            empty = here == 0
            # Two pending ids may want the same empty slot: the first of them takes it.
            cand = np.flatnonzero(empty)
            _, winners = np.unique(s[cand], return_index=True)
            take = pending[cand[winners]]
            ts = slot[take]
            self._lo[ts], self._hi[ts], self._line[ts] = lo[take], hi[take], lines[take]
            self.size += len(take)
            done = match.copy()
            done[cand[winners]] = True
            moving = pending[~done & ~empty]
            slot[moving] = (slot[moving] + np.uint64(1)) & mask
            pending = pending[~done]
        return found

    def _grow(self, need: int) -> None:
        import numpy as np

        capacity = len(self._lo)
        while need * 3 > capacity * 2:
            capacity *= 2
        used = self._lo != 0
        lo, hi, line = self._lo[used], self._hi[used], self._line[used]
        self._lo = np.zeros(capacity, dtype=np.uint64)
        self._hi = np.zeros(capacity, dtype=np.uint64)
        self._line = np.zeros(capacity, dtype=np.uint64)
        self.size = 0
        self._insert(lo, hi, line)


class CaseLog:
    """What a worker records of each accepted case, for the parent's duplicate check:
    id hash halves, line (local to the worker's range), byte offset, and where the case's
    output ends in the worker's part file."""

    def __init__(self) -> None:
        self.lo: list[Any] = []
        self.hi: list[Any] = []
        self.line: list[Any] = []
        self.offset: list[Any] = []
        self.end: list[Any] = []
        self.written = 0  # output bytes before the next chunk

    def add(self, chunk: Any, accepted: list[tuple[int, Any]], ends: list[int]) -> None:
        """Log a chunk's accepted cases; ``ends`` are their output ends within the chunk."""
        import numpy as np

        if accepted:
            lo, hi = id_hashes([case.id for _, case in accepted])
            self.lo.append(lo)
            self.hi.append(hi)
            lines = np.fromiter((line for line, _ in accepted), np.uint64, len(accepted))
            self.line.append(lines)
            starts = np.asarray(chunk.offsets(), dtype=np.uint64)
            self.offset.append(starts[(lines - np.uint64(chunk.line)).astype(np.intp)])
            self.end.append(np.asarray(ends, dtype=np.uint64) + np.uint64(self.written))
        self.written += ends[-1] if ends else 0

    def arrays(self) -> tuple[Any, ...]:
        """(lo, hi, line, offset, end) for every logged case, in order."""
        import numpy as np

        parts = (self.lo, self.hi, self.line, self.offset, self.end)
        return tuple(np.concatenate(p) if p else np.zeros(0, np.uint64) for p in parts)
