"""Properties: whatever text a table holds, every row becomes a case that the case decoder (and
so ``validate``) accepts, and every mapped column's value is found in its case, unchanged."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstream._cases import schema
from tests.convert.support import convert, validate_accepts

# Any Unicode scalar value (no lone surrogates: they are not text), NUL, quotes, commas,
# tabs, newlines and CR included.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
ROW = st.fixed_dictionaries({
    "question": TEXT, "answer": TEXT, "passages": st.lists(TEXT, max_size=4),
    "tag": st.none() | TEXT, "score": st.none() | st.floats(allow_nan=False, allow_infinity=False),
})
MAP = ["input=question,output=answer,context=passages,metadata.tag=tag,metadata.score=score"]
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame([{"n": i, **r} for i, r in enumerate(rows)],
                        schema={"n": pl.Int64, "question": pl.String, "answer": pl.String,
                                "passages": pl.List(pl.String), "tag": pl.String,
                                "score": pl.Float64})


def _check(rows: list[dict[str, Any]], cases: list[dict[str, Any]], out: Path) -> None:
    assert len(cases) == len(rows)
    validate_accepts(out)
    decode = schema.decoder().decode
    for i, (row, case) in enumerate(zip(rows, cases, strict=True)):
        decode(json.dumps(case))
        assert case["id"] == str(i)
        assert case["input"] == row["question"] and case["output"] == row["answer"]
        assert [p["text"] for p in case["context"]] == row["passages"]
        assert case["metadata"] == {"tag": row["tag"], "score": row["score"]}


@pytest.mark.slow
@SETTINGS
@given(st.lists(ROW, min_size=1, max_size=8), st.sampled_from(["parquet", "jsonl", "json"]))
def test_every_row_becomes_a_case_holding_its_values(rows: list[dict[str, Any]], fmt: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        frame = _frame(rows)
        src = tmp / f"rows.{fmt}"
        if fmt == "parquet":
            frame.write_parquet(src)
        elif fmt == "jsonl":
            src.write_text("".join(json.dumps(r) + "\n" for r in frame.to_dicts()))
        else:
            src.write_text(json.dumps(frame.to_dicts()))
        result = convert(tmp, src, maps=MAP, id_from="n")
        _check(rows, result.cases, result.out)


@pytest.mark.slow
@SETTINGS
@given(st.lists(ROW, min_size=1, max_size=8))
def test_csv_round_trip(rows: list[dict[str, Any]]) -> None:
    # A CSV holds text: lists as JSON text (--parse-json), numbers as their text. An empty
    # cell reads as null, so empty strings are written quoted (a CSV writer's choice).
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        frame = pl.DataFrame(
            [{"n": i, **r, "passages": json.dumps(r["passages"]),
              "score": None if r["score"] is None else repr(r["score"])}
             for i, r in enumerate(rows)],
            schema={k: pl.Int64 if k == "n" else pl.String
                    for k in ("n", "question", "answer", "passages", "tag", "score")})
        src = tmp / "rows.csv"
        frame.write_csv(src, quote_style="non_numeric")
        result = convert(tmp, src, maps=MAP, id_from="n", parse_json=["passages"])
        expected = [{**r, "score": None if r["score"] is None else repr(r["score"])}
                    for r in rows]
        _check(expected, result.cases, result.out)


@pytest.mark.slow
@SETTINGS
@given(st.lists(ROW, min_size=1, max_size=6))
def test_rerun_gives_the_same_bytes_and_hash_ids(rows: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        src = tmp / "rows.parquet"
        _frame(rows).write_parquet(src)
        first = convert(tmp, src, maps=MAP)
        data = first.out.read_bytes()
        again = convert(tmp, src, maps=MAP)
        assert again.out.read_bytes() == data
        # Hash ids are the xxh3-128 of each row: all distinct, since every row has its own `n`.
        ids = [c["id"] for c in first.cases]
        assert len(set(ids)) == len(rows) and all(len(i) == 32 for i in ids)
