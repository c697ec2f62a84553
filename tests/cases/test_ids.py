"""The duplicate-id index agrees with a plain set over any sequence of blocks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._cases.ids import IdIndex, id_hash


def id_hashes(ids: list[str]) -> tuple[list[int], list[int]]:
    """The halves of each id's hash, as a worker's CaseLog holds them."""
    return ([id_hash(i) & (1 << 64) - 1 | 1 for i in ids], [id_hash(i) >> 64 for i in ids])


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(blocks=st.lists(st.lists(st.sampled_from([f"id-{i}" for i in range(40)] + ["é", "😀"]),
                                max_size=30), max_size=8))
def test_index_matches_a_reference(blocks: list[list[str]]) -> None:
    index = IdIndex(capacity=4)  # tiny: forces growth and collisions
    first_seen: dict[str, int] = {}
    line = 1
    for block in blocks:
        lo, hi = id_hashes(block)
        got = index.add(lo, hi, range(line, line + len(block)))
        want = []
        for i, ident in enumerate(block):
            if ident in first_seen:
                want.append(first_seen[ident])
            else:
                first_seen[ident] = line + i
                want.append(0)
        assert got == want
        line += len(block)
    assert index.size == len(first_seen)


@pytest.mark.slow
def test_bytes_per_case_stay_small() -> None:
    index = IdIndex()
    n = 200_000
    ids = [f"case-{i}" for i in range(n)]
    for start in range(0, n, 5_000):
        lo, hi = id_hashes(ids[start:start + 5_000])
        index.add(lo, hi, range(start + 1, start + 5_001))
    assert index.size == n
    assert index.nbytes / n <= 64


def test_add_id_matches_a_reference_across_growth() -> None:
    index = IdIndex(capacity=8)
    ids = [f"id-{i % 70}" for i in range(200)]  # repeats before and after several doublings
    got: list[int] = []
    for start in range(0, 200, 17):
        block = ids[start:start + 17]
        got += [index.add_id(i, start + 1 + k) for k, i in enumerate(block)]
    first_seen: dict[str, int] = {}
    want = []
    for line, ident in enumerate(ids, 1):
        want.append(first_seen.get(ident, 0))
        first_seen.setdefault(ident, line)
    assert got == want
    assert index.size == 70 and index.nbytes == 24 * 128


def test_runs_past_the_table_end_survive_every_doubling() -> None:
    """Hashes whose low halves end in all ones (or all zeros) home at the table's last
    (first) slot at every size: one long run wraps past the end through every doubling."""
    import numpy as np

    from evalstream._view.index import _lines_of

    index = IdIndex(capacity=4)
    lows = [0xFFFFFF] * 300 + [0xFFFFF0] * 200 + [0] * 100
    lo = [(k << 24) | low | 1 for k, low in enumerate(lows)]
    hi = [k * 7 + 3 for k in range(len(lo))]
    assert index.add(lo, hi, range(1, 601)) == [0] * 600
    assert index.size == 600 and len(index.columns()[0]) == 1024
    assert index.add(lo, hi, [0] * 600) == list(range(1, 601))  # each found from its home
    found = _lines_of(index, np.array(lo, np.uint64), np.array(hi, np.uint64))
    assert found.tolist() == list(range(1, 601))
    assert index.add([lo[0] ^ 2], [hi[0]], [9]) == [0]  # a new hash still finds a free slot


def test_add_id_takes_lone_surrogates_as_id_hash_does() -> None:
    index = IdIndex()
    assert index.add_id("a\udc80b", 5) == 0
    lo, hi = id_hashes(["a\udc80b"])
    assert index.add(lo, hi, [6]) == [5]
