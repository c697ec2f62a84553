"""Exact duplicate-id detection in a few dozen bytes per case.

Each case id is reduced to a 128-bit xxh3 hash, kept with the line that first used it;
the ids themselves are never kept. With 128 bits, the chance that two different ids
among a billion share a hash is about 1.5e-21, so a hash match is taken as a duplicate
without re-reading the first line.

The index is an open-addressing table (linear probing) in three ``array('Q')`` columns:
the hash's low half (never 0: 0 marks an empty slot), its high half, and the line. It
doubles at 3/4 load: 24 bytes a slot, 32 to 64 bytes a case, and no Python object per
case. Probing is a short Python loop per id (measured ~0.6 us; a numpy table probed a
block at a time cost ~11 us per id on blocks of ~30 ids, and its import 12 MB). Doubling
re-inserts each entry in Python (~0.25 us an entry, ~0.4 us a case amortised at 10^6 ids);
a numpy doubling (entries sorted by home slot, placed by a running maximum) measured 0.08 us
an entry but saved only 7% of the index's time at 10^6 ids (0.4% of a build) for 40 lines
and numpy's import: not kept (2026-12-05).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import xxhash

_MASK64 = (1 << 64) - 1


_xxh3_128 = xxhash.xxh3_128_intdigest


def id_hash(case_id: str) -> int:
    """The id's 128-bit xxh3 hash (lone surrogates hashed as their escape bytes)."""
    return _xxh3_128(case_id.encode("utf-8", "surrogatepass"))


def _zeros(n: int) -> array[int]:
    return array("Q", [0]) * n  # repeated in C: no zeroed bytes made first and copied


class IdIndex:
    """The ids seen so far; ``add_id`` reports whether a new id repeats an earlier one."""

    def __init__(self, capacity: int = 1 << 12) -> None:
        capacity = 1 << max(capacity - 1, 1).bit_length()  # a power of two
        self._lo, self._hi, self._line = _zeros(capacity), _zeros(capacity), _zeros(capacity)
        self._mask = capacity - 1
        self._limit = capacity * 3 // 4  # doubled when size passes it
        self.size = 0

    @property
    def nbytes(self) -> int:
        return 24 * len(self._lo)

    def columns(self) -> tuple[array[int], array[int], array[int]]:
        """The table's three columns (low halves, high halves, lines), as they are."""
        return self._lo, self._hi, self._line

    @classmethod
    def from_columns(cls, lo: array[int], hi: array[int], line: array[int],
                     size: int) -> IdIndex:
        """The index whose table is these ``columns`` (of a power-of-two length) holding
        ``size`` ids."""
        if not (len(lo) == len(hi) == len(line)) or len(lo) & (len(lo) - 1) or \
                not 0 <= size < len(lo):
            raise ValueError("not the columns of an id index")
        index = cls(2)
        index._lo, index._hi, index._line = lo, hi, line
        index._mask, index._limit, index.size = len(lo) - 1, len(lo) * 3 // 4, size
        return index

    def add_id(self, case_id: str, line: int) -> int:
        """Insert one id; return the line of its first use, or 0 if it is new."""
        # ``_put`` written out (with the hash's high half only where the low halves match):
        # build, stats, convert and view add every case, and the call measured ~0.3 us more.
        try:  # the strict codec first: naming an error handler costs ~0.05 us a call
            data = case_id.encode()
        except UnicodeEncodeError:  # lone surrogates: hashed as ``id_hash`` does
            data = case_id.encode("utf-8", "surrogatepass")
        h = _xxh3_128(data)
        lo = h & _MASK64 | 1
        keys, mask = self._lo, self._mask
        slot = lo & mask
        here = keys[slot]
        while here:
            if here == lo and self._hi[slot] == h >> 64:
                return self._line[slot]
            slot = (slot + 1) & mask
            here = keys[slot]
        keys[slot], self._hi[slot], self._line[slot] = lo, h >> 64, line
        self.size += 1
        if self.size > self._limit:
            self._grow()
        return 0

    def get(self, case_id: str) -> int:
        """The line stored for this id, or 0 when it was never added."""
        h = id_hash(case_id)
        lo, hi = h & _MASK64 | 1, h >> 64
        keys, mask = self._lo, self._mask
        slot = lo & mask
        while True:
            here = keys[slot]
            if here == 0:
                return 0
            if here == lo and self._hi[slot] == hi:
                return self._line[slot]
            slot = (slot + 1) & mask

    def add(self, lo: Sequence[int], hi: Sequence[int], lines: Sequence[int]) -> list[int]:
        """``add_id`` for a run of hashes already split into halves (the low half never 0,
        as a worker's ``CaseLog`` holds them); the first lines, 0 for new ids."""
        put = self._put
        return [put(a, b, c) for a, b, c in zip(lo, hi, lines, strict=True)]

    def _put(self, lo: int, hi: int, line: int) -> int:
        """Insert one hash; return the line of its first use, or 0 when it is new."""
        keys, mask = self._lo, self._mask
        slot = lo & mask
        while True:
            here = keys[slot]
            if here == 0:
                break
            if here == lo and self._hi[slot] == hi:
                return self._line[slot]
            slot = (slot + 1) & mask
        keys[slot], self._hi[slot], self._line[slot] = lo, hi, line
        self.size += 1
        if self.size > self._limit:
            self._grow()
        return 0

    def _grow(self) -> None:
        old = zip(self._lo, self._hi, self._line, strict=True)
        capacity = 2 * len(self._lo)
        self._lo, self._hi, self._line = _zeros(capacity), _zeros(capacity), _zeros(capacity)
        self._mask, self._limit = capacity - 1, capacity * 3 // 4
        keys, his, lines, mask = self._lo, self._hi, self._line, self._mask
        for lo, hi, line in old:
            if lo:
                slot = lo & mask
                while keys[slot]:
                    slot = (slot + 1) & mask
                keys[slot], his[slot], lines[slot] = lo, hi, line


class CaseLog:
    """What a worker records of each accepted case, for the parent's duplicate check:
    id hash halves, line (local to the worker's range), byte offset, and where the case's
    output ends in the worker's part file. Plain arrays: workers never import numpy."""

    def __init__(self) -> None:
        self.lo, self.hi = array("Q"), array("Q")
        self.line, self.offset, self.end = array("Q"), array("Q"), array("Q")

    def add(self, case_id: str, line: int, offset: int, end: int) -> None:
        """Log one accepted case: its id, line, byte offset, and where its output ends."""
        h = id_hash(case_id)
        self.lo.append(h & _MASK64 | 1)
        self.hi.append(h >> 64)
        self.line.append(line)
        self.offset.append(offset)
        self.end.append(end)

    def arrays(self) -> tuple[array[int], ...]:
        """(lo, hi, line, offset, end) for every logged case, in order."""
        return self.lo, self.hi, self.line, self.offset, self.end
