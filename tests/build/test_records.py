"""The records writer: the lines it appends are the records' own encodings."""

from __future__ import annotations

import msgspec
import xxhash

from evalstream._build.records import RecordEncoder
from evalstream._cases.reading import read_cases
from evalstream._cases.schema import Case
from evalstream._checks.checker import Checker
from evalstream._checks.rubrics import load_rubrics
from evalstream._checks.state import CheckRecord, ExactVerdict
from evalstream._files.outputs import escape_line_breaks
from tests.helpers import SAMPLES


def test_lines_are_the_records_encodings() -> None:
    # The built-in set on the samples: judge and exact rubrics, several states a case, line
    # separators in some fields. `add` joins a judge record from its layout's fixed bytes;
    # each line must be the record's own encoding, one line per written check, and the
    # size it returns the bytes it appended (build's offsets for late duplicates use it).
    checker, encoder = Checker(load_rubrics()), RecordEncoder()
    judged = exact = 0
    for n, case in enumerate(read_cases(SAMPLES / "cases.jsonl"), 1):
        assert isinstance(case, Case)
        checks = checker.check(case, n)
        out: list[bytes] = []
        size = encoder.add(case.id, checks, out)
        assert size == sum(map(len, out))
        lines = b"".join(out).splitlines(keepends=True)
        written = [check for check in checks if check.reason is None]
        assert len(lines) == len(written) == len(out)
        for check, line in zip(written, lines, strict=True):
            assert line.endswith(b"\n") and line.count(b"\n") == 1
            if check.passed is not None:
                exact += 1
                verdict = msgspec.json.decode(line, type=ExactVerdict)
                assert escape_line_breaks(msgspec.json.encode(verdict)) + b"\n" == line
                continue
            judged += 1
            record = msgspec.json.decode(line, type=CheckRecord)
            assert escape_line_breaks(msgspec.json.encode(record)) + b"\n" == line
            assert bytes(record.state) == check.state
            assert record.state_hash == xxhash.xxh3_128_hexdigest(check.state)
    assert judged > 50 and exact > 0
