"""The output records of ``build``: one JSON line per written check.

A judge rubric's check is a ``CheckRecord`` (question, state, exposure with token figures,
rubric hash, state hash); an exact rubric's is an ``ExactVerdict``. The state is already
JSON (``Checker`` built it) and its hash is of exactly the bytes written.

A judge record is joined from fixed bytes per plan (``RecordLayout``: everything but the
case id, the state, the token figures and the state hash) instead of encoding a
``CheckRecord`` each time. Measured on the 100 MB benchmark with the built-in rubrics:
encoding the Struct (and its Exposure and Tokens) took ~2.8 us a record against ~1 us for
the join, 9% of the whole build. The layout is cut from msgspec's own encoding of a
record, so the bytes are the same (a property test checks it).
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec
import xxhash

from evalstream._checks.checker import Check, Plan
from evalstream._checks.state import (
    CheckRecord,
    ExactVerdict,
    Exposure,
    PairKey,
    Sizes,
    Tokens,
    pair_key,
)
from evalstream._files.outputs import escape_line_breaks


class RecordEncoder:
    """Encodes the written checks of one case into output lines."""

    def __init__(self) -> None:
        self._encoder = msgspec.json.Encoder()
        self._layouts: dict[Plan, RecordLayout] = {}

    def add(self, case_id: str, checks: list[Check], out: list[bytes]) -> int:
        """Append a line to ``out`` for every check of the case that is written; return the
        bytes appended. Lines stay separate ``bytes`` until they are written (``os.writev``
        takes them as they are): one growing buffer measured slower (its reallocations copy
        every byte again, and a build writes about twice its input)."""
        encode = self._encoder.encode
        case_json: bytes | None = None
        size = 0
        for check in checks:
            if check.reason is not None:
                continue
            plan, state = check.plan, check.state
            rubric = plan.rubric
            if check.passed is not None:  # an exact rubric's verdict
                assert check.evidence is not None
                line = escape_line_breaks(encode(ExactVerdict(
                    case_id, rubric.id, "exact", "pass" if check.passed else "fail",
                    check.evidence, Exposure(plan.shown, plan.withheld, plan.hidden),
                    rubric.hash))) + b"\n"
            else:
                assert state is not None, "the Checker must keep states to write records"
                layout = self._layouts.get(plan) or self._layout(plan)
                case_json = case_json or encode(case_id)
                line = b"".join((
                    layout.start, case_json, layout.head, state, layout.exposure,
                    encode(check.tokens), layout.hashes,
                    xxhash.xxh3_128_hexdigest(state).encode(), layout.end))
            out.append(line)
            size += len(line)
        return size

    def add_pair(self, case_id: str, first: list[Check], second: list[Check],
                 chars: list[int], out: list[bytes]) -> int:
        """Append the two records of every written pairwise check of a pair (``first``: run
        A's response first; ``second``: run B's), each pair's on consecutive lines, A first;
        return the bytes appended. Encoded as records (no layout): a pair build is never the
        hot path that a run's pointwise states are."""
        encode = self._encoder.encode
        size = 0
        for one, two in zip(first, second, strict=True):
            if one.reason is not None:
                continue
            assert one.state is not None and two.state is not None
            hashes = [xxhash.xxh3_128_hexdigest(one.state), xxhash.xxh3_128_hexdigest(two.state)]
            key = pair_key(*hashes)
            for check, state, order, state_hash in ((one, one.state, "ab", hashes[0]),
                                                     (two, two.state, "ba", hashes[1])):
                plan = check.plan
                line = escape_line_breaks(encode(CheckRecord(
                    case_id, plan.rubric.id, plan.question, msgspec.Raw(state),
                    Exposure(plan.shown, plan.withheld, plan.hidden, check.tokens),
                    plan.rubric.hash, state_hash, plan.rubric.allows_na,
                    PairKey(key, order, chars)))) + b"\n"
                out.append(line)
                size += len(line)
        return size

    def _layout(self, plan: Plan) -> RecordLayout:
        layout = self._layouts[plan] = record_layout(
            plan.rubric.id, plan.question, Exposure(plan.shown, plan.withheld, plan.hidden),
            plan.rubric.hash, plan.rubric.allows_na)
        return layout


class RecordLayout(NamedTuple):
    """The fixed bytes of one rubric's CheckRecords for one exposure, around the parts that
    vary by case: ``start`` case id ``head`` state ``exposure`` tokens ``hashes`` state
    hash ``end`` (with the line's newline). ``build`` joins a record from these pieces,
    without a CheckRecord object per check; they are cut from msgspec's own encoding of a
    record, so the bytes are the same as encoding the CheckRecord (a test checks this)."""

    start: bytes
    head: bytes
    exposure: bytes
    hashes: bytes
    end: bytes


_STATE_MARK = b"\x00state\x00"  # a Raw value is copied as it is: never in other JSON


def record_layout(rubric_id: str, question: msgspec.Raw, exposure: Exposure,
                  rubric_hash: str, allows_na: bool = True) -> RecordLayout:
    """The layout of ``rubric_id``'s records for cases with this ``exposure``."""
    encode = msgspec.json.encode
    case_mark, hash_mark = encode("\x01"), encode("\x02")  # "\u0001", "\u0002"
    tokens = Tokens("", 0, Sizes(0, 0, 0))
    full = encode(CheckRecord(
        "\x01", rubric_id, question, msgspec.Raw(_STATE_MARK),
        Exposure(exposure.shown, exposure.withheld, exposure.never_shown, tokens),
        rubric_hash, "\x02", allows_na))
    # Fields are encoded in declaration order: case id, ..., state, exposure, ..., state hash.
    case_at = full.index(case_mark)
    state_at = full.index(_STATE_MARK, case_at)
    tokens_at = full.index(encode(tokens), state_at)
    hash_at = full.index(hash_mark, tokens_at)
    return RecordLayout(
        start=full[:case_at],
        head=full[case_at + len(case_mark):state_at],
        exposure=full[state_at + len(_STATE_MARK):tokens_at],
        hashes=full[tokens_at + len(encode(tokens)):hash_at + 1],  # up to the opening quote
        end=full[hash_at + len(hash_mark) - 1:] + b"\n",
    )
