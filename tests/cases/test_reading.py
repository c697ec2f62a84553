"""The read loop: what counts as a blank line, and what a reject of a cut-off line says."""

from __future__ import annotations

import pytest

from evalstream._cases.reading import case_reader
from evalstream._cases.rejects import Reject
from evalstream._files.lines import chunks_of


def _read(lines: list[bytes], max_line_bytes: int = 1 << 20) -> tuple[list[object], object]:
    reader = case_reader(max_line_bytes=max_line_bytes)
    return list(reader.read(chunks_of(lines, max_line_bytes))), reader.counts


@pytest.mark.parametrize("line", [b"", b" ", b"\t\t", b"\r", b" \t\r "])
def test_json_whitespace_makes_a_blank_line(line: bytes) -> None:
    items, counts = _read([line])
    assert items == [] and (counts.lines, counts.blank) == (1, 1)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("line", "char"), [(b"\x0c", "U+000C"), (b" \x0b ", "U+000B"),
                                            (b"\t\x0c\r", "U+000C")])
def test_form_feed_and_vertical_tab_are_rejects(line: bytes, char: str) -> None:
    items, counts = _read([b'{"id":"a","input":"x","output":"y"}', line])
    assert counts.blank == 0 and counts.rejected == 1  # type: ignore[attr-defined]
    reject = items[1]
    assert isinstance(reject, Reject)
    assert (reject.line, reject.path) == (2, "$")
    assert reject.error == (f"The line holds only whitespace, but {char} (a form feed or "
                            "vertical tab) is not whitespace in JSON; a blank line may hold "
                            "only spaces, tabs and carriage returns. Remove the line.")


@pytest.mark.parametrize(("line", "case_id"), [
    (b'{"id":"case-7","input":"' + b"x" * 5_000 + b'","output":"y"}', "case-7"),
    (b'  { "id" : "c\\u00e9" , "input":"' + b"x" * 20_000, "c\u00e9"),  # cut, no end
    (b'{"input":"' + b"x" * 5_000 + b'","id":"late","output":"y"}', "late"),  # in the head
    (b'{"input":"' + b"x" * 20_000 + b'","id":"late","output":"y"}', None),  # past the head
])
def test_an_over_long_line_names_its_case_when_the_head_does(line: bytes,
                                                             case_id: str | None) -> None:
    items, _ = _read([line], max_line_bytes=1_000)
    (reject,) = items
    assert isinstance(reject, Reject)
    assert reject.id == case_id
    assert reject.error.startswith(f"The line is {len(line):,} bytes, over the limit of 1,000")
