"""Where a reject says a field came from: the source column of every row's own fields.

A table mapping's origins (the column behind each case field) are the same for every row,
so ``mapping.build`` hands every row one dict of them; the case id's column is the run's,
set on each row's ``Built`` apart from it. These tests hold that no row's origin leaks into
another's: a row whose id is a hash names no column for it, whatever the rows before it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstream._convert import mapping
from evalstream._convert.rows import Notes
from tests.convert.support import convert


def test_a_hashed_id_names_no_column_after_rows_with_their_own(tmp_path: Path) -> None:
    rows = [{"id": "a", "q": "x", "r": "y"}, {"q": "x", "r": "y"}, {"q": "x", "r": "y"},
            {"id": "a", "q": "z", "r": "y"}, {"id": "b", "q": "x", "r": 5}]
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = convert(tmp_path, src, maps=["input=q,output=r"])
    assert result.report.counts.cases == 2
    # row 3 repeats row 2's content (a hash id: no column), row 4 row 1's own id, row 5's
    # output is not text: each names its own source.
    assert [(r["row"], r["column"], r["path"]) for r in result.rejects] == [
        (3, None, "$.id"), (4, "id", "$.id"), (5, "r", "$.output")]


def test_an_id_column_is_named_for_the_rows_it_gives_ids(tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    src.write_text("k,q,a,l\nr1,q,a,yes\nr1,q,a,yes\nr2,q,a,perhaps\nr/3,q,a,yes\n")
    result = convert(tmp_path, src, maps=["input=q,output=a,expected.s.status=l"],
                     sets=["expected.s.source=human"], values=["expected.s.status=yes:pass"],
                     id_from="k")
    assert [(r["row"], r["column"], r["path"]) for r in result.rejects] == [
        (2, "k", "$.id"), (3, "l", "$.expected.s.status"), (4, "k", "$.id")]


def test_a_row_that_adds_origins_adds_them_to_its_own_copy() -> None:
    # Every step inline: one dict for every row. A step that adds origins of its own (here
    # --keep-unmapped's metadata keys) works on a copy: the next row starts clean.
    inline = mapping.parse(["input=q,output=a,context=c,metadata.m=m"], [], [], None, [], False)
    first, second = (mapping.build({"q": "x", "a": "b", "c": "p", "m": 1}, Notes(), inline, [])
                     for _ in range(2))
    assert first.origin is second.origin is inline._origin
    assert inline._origin == {("input",): "q", ("output",): "a", ("context",): "c",
                              ("metadata", "m"): "m"}
    keep = mapping.parse(["input=q,output=a"], [], [], None, [], True)
    wide = mapping.build({"q": "x", "a": "b", "o": 2}, Notes(), keep, [])
    narrow = mapping.build({"q": "x", "a": "b"}, Notes(), keep, [])
    assert wide.origin == {("input",): "q", ("output",): "a", ("metadata", "o"): "o"}
    assert narrow.origin == keep._origin == {("input",): "q", ("output",): "a"}


@pytest.mark.parametrize("value", [
    [], ["a"], ["a", "b", "c"], ["x"] * 500, ["x"] * 501, ["a", {"text": "b"}, 3],
    [{"id": "p", "text": "b", "extra": 1}, "c"], ("a", "b")])
def test_passages_from_a_list_are_numbered_as_ever(value: list[object]) -> None:
    # A list of texts takes the ids made once; any other list the item-by-item rule: the
    # same passages as that rule gives every list.
    expected = [{"id": item.get("id") or f"c{i}", **{k: v for k, v in item.items() if k != "id"}}
                if isinstance(item, dict) else {"id": f"c{i}", "text": item}
                for i, item in enumerate(value, 1)]
    assert mapping._passages(value, "c") == expected
