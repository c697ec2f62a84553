"""Tables: CSV with quoting and embedded newlines, TSV, Parquet with list columns, JSON
arrays and JSONL of any shape; the mapping options; hostile rows rejected by row number."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstream._convert import depth
from evalstream.errors import InputError, UsageError, WrongFileError
from tests.convert.support import convert, golden_run, validate_accepts

CSV = (
    'id,question,answer,passages,label,task\n'
    'q-1,"What is 2+2, really?","It\'s ""4""\n(four)",Arithmetic: 2+2=4.,yes,math\n'
    'q-2,Capital of France?,Paris,"France\'s capital is Paris.",no,geo\n'
    'q-3,,no question,,no,geo\n'
    'q-4,Tabs\tand émoji 🙂?,"multi\nline\nanswer",,maybe,misc\n'
    'q 5,bad id?,x,,no,misc\n'
    ',,,,,\n'
    'q-1,Repeat id?,y,,no,misc\n'
)
MAP = ["input=question,output=answer,context=passages,metadata.task=task",
       "expected.hallucination.status=label"]
LABELS = dict(sets=["expected.hallucination.source=human"],
              values=["expected.hallucination.status=yes:fail,no:pass"])


def _csv(tmp_path: Path, text: str = CSV, name: str = "results.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_golden(tmp_path: Path) -> None:
    result = convert(tmp_path, _csv(tmp_path), maps=MAP, id_from="id", **LABELS)
    golden_run("csv", result)
    validate_accepts(result.out)
    assert [c["id"] for c in result.cases] == ["q-1", "q-2"]
    assert result.cases[0]["output"] == "It's \"4\"\n(four)"
    assert result.cases[0]["context"] == [{"id": "c1", "text": "Arithmetic: 2+2=4."}]
    assert {r["row"]: (r["column"], r["path"]) for r in result.rejects} == {
        3: ("question", "$.input"),
        4: ("label", "$.expected.hallucination.status"),
        5: ("id", "$.id"),
        7: ("id", "$.id"),
    }
    assert result.report.counts.blank == 1
    assert "already used by row 1" in result.rejects[-1]["error"]


def test_tsv_and_compressed_csv_give_the_same_cases(tmp_path: Path) -> None:
    rows = [("q-1", "a, b", 'say "x"'), ("q-2", "c", "d")]
    tsv = "id\tquestion\tanswer\n" + "".join("\t".join(r) + "\n" for r in rows)
    csv = pl.DataFrame(rows, schema=["id", "question", "answer"], orient="row")
    (tmp_path / "t.tsv").write_text(tsv)
    csv.write_csv(tmp_path / "c.csv")
    (tmp_path / "c.csv.gz").write_bytes(gzip.compress((tmp_path / "c.csv").read_bytes()))
    got = []
    for name, extra in (("t.tsv", {"quoting": False}), ("c.csv", {}), ("c.csv.gz", {})):
        sub = tmp_path / name.replace(".", "_")
        sub.mkdir()
        got.append(convert(sub, tmp_path / name, maps=["input=question,output=answer"],
                           id_from="id", **extra).cases)
    assert got[0] == got[1] == got[2]
    assert got[0][0]["output"] == 'say "x"'


def test_csv_cells_stay_text(tmp_path: Path) -> None:
    path = _csv(tmp_path, "n,q,a\n007,1.50,true\n")
    [case] = convert(tmp_path, path, maps=["input=q,output=a,metadata.n=n"]).cases
    assert case["metadata"] == {"n": "007"} and case["input"] == "1.50" and case["output"] == "true"


def _parquet(tmp_path: Path) -> Path:
    frame = pl.DataFrame({
        "uid": ["p-1", "p-2", "p-3", "p-4"],
        "prompt": ["Summarise.", "Who wrote it?", "Empty list?", "Numbers?"],
        "response": ["A short summary.", "Tolstoy.", "Yes.", "x"],
        "passages": [["Passage one.", "Passage two."], ["War and Peace is by Tolstoy."], [], None],
        "sources": [[{"id": "doc-7", "text": "Cited."}], [], None, None],
        "scores": [0.9, 0.1, None, 0.5],
        "info": [{"lang": "en", "tags": ["a"]}, {"lang": "fr", "tags": []}, None,
                 {"lang": "de", "tags": ["z"]}],
        "verdict": [True, False, None, True],
    })
    path = tmp_path / "data.parquet"
    frame.write_parquet(path, row_group_size=2)
    return path


def test_parquet_golden_with_list_columns(tmp_path: Path) -> None:
    result = convert(tmp_path, _parquet(tmp_path), id_from="uid",
                     maps=["input=prompt,output=response,context=passages,metadata=info",
                           "metadata.score=scores,expected.support.status=verdict"],
                     sets=["expected.support.source=imported"],
                     values=["expected.support.status=true:pass,false:fail"])
    golden_run("parquet", result)
    validate_accepts(result.out)
    first, second, third, fourth = result.cases
    assert first["context"] == [{"id": "c1", "text": "Passage one."}, {"id": "c2", "text": "Passage two."}]
    assert third["context"] == [] and "context" not in fourth
    assert first["metadata"] == {"lang": "en", "tags": ["a"], "score": 0.9}
    assert "expected" not in third and result.report.labels == {
        "support": {"absent": 1, "fail": 1, "pass": 2}}


def test_parquet_list_of_passage_objects(tmp_path: Path) -> None:
    result = convert(tmp_path, _parquet(tmp_path), id_from="uid",
                     maps=["input=prompt,output=response,context=sources"])
    assert result.cases[0]["context"] == [{"id": "doc-7", "text": "Cited."}]


def test_a_passage_without_an_id_gets_one_from_every_table(tmp_path: Path) -> None:
    # Issue 23, item 20: a Parquet struct column has every field in every row, so a passage
    # without an id holds `"id": null`; null is absent, and an absent id is generated.
    rows = [{"q": "a", "r": "x", "ctx": [{"id": "d1", "text": "t1"}, {"id": None, "text": "t2"}]},
            {"q": "b", "r": "y", "ctx": [{"text": "only"}]}]
    pl.DataFrame(rows).write_parquet(tmp_path / "p.parquet")
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("p.parquet", "p.jsonl"):
        sub = tmp_path / name.replace(".", "_")
        sub.mkdir()
        result = convert(sub, tmp_path / name, maps=["input=q,output=r,context=ctx"])
        assert result.rejects == []
        assert [c["context"] for c in result.cases] == [
            [{"id": "d1", "text": "t1"}, {"id": "c2", "text": "t2"}], [{"id": "c1", "text": "only"}]]
        validate_accepts(result.out)


def test_parquet_non_text_answer_is_rejected_with_its_column(tmp_path: Path) -> None:
    result = convert(tmp_path, _parquet(tmp_path), id_from="uid",
                     maps=["input=prompt,output=scores"])
    assert [(r["row"], r["column"], r["path"]) for r in result.rejects] == [
        (1, "scores", "$.output"), (2, "scores", "$.output"), (3, "scores", "$.output"),
        (4, "scores", "$.output")]
    assert result.rejects[0]["error"] == "`$.output` must be a string, not a number."
    assert result.rejects[2]["error"].startswith("Required field `output` is missing")
    assert result.report.exit_code == 1 and "no row became a case" in result.report.warnings[-1]


def test_json_array_and_jsonl(tmp_path: Path) -> None:
    rows = [{"q": "a?", "r": {"text": "b", "model": "m1"}, "ctx": ["x"]},
            {"q": "c?", "r": {"text": "d", "model": "m2"}, "ctx": "one passage", "extra": 1}]
    (tmp_path / "rows.json").write_text(json.dumps(rows, indent=2))
    (tmp_path / "rows.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n[1]\n")
    maps = ["input=q,output=r.text,context=ctx,metadata.model=r.model"]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = convert(tmp_path / "a", tmp_path / "rows.json", maps=maps)
    b = convert(tmp_path / "b", tmp_path / "rows.jsonl", maps=maps)
    golden_run("jsonl", b)
    assert a.cases == b.cases
    assert a.report.format == "json" and b.report.format == "jsonl"
    assert a.cases[1]["context"] == [{"id": "c1", "text": "one passage"}]
    assert b.report.counts.blank == 1 and b.rejects[0]["row"] == 4
    assert b.report.unmapped_columns == ["extra"]  # `r` is read through dotted keys


def test_keep_unmapped_and_parse_json(tmp_path: Path) -> None:
    path = _csv(tmp_path, 'q,a,ctx,who\nx,y,"[""p1"",""p2""]",ann\n')
    [case] = convert(tmp_path, path, maps=["input=q,output=a,context=ctx"],
                     parse_json=["ctx"], keep_unmapped=True).cases
    assert case["context"] == [{"id": "c1", "text": "p1"}, {"id": "c2", "text": "p2"}]
    assert case["metadata"] == {"who": "ann"}
    bad = _csv(tmp_path, 'q,a,ctx\nx,y,[not json\n', "bad.csv")
    [rej] = convert(tmp_path, bad, maps=["input=q,output=a,context=ctx"],
                    parse_json=["ctx"]).rejects
    assert rej["column"] == "ctx" and "not valid JSON" in rej["error"]


def test_hostile_rows_are_rejected_by_row(tmp_path: Path) -> None:
    long = "x" * 200_001
    frame = pl.DataFrame({
        "id": ["ok", "long", "ctrl", "dup", "dup", "slash/id", "many"],
        "q": ["fine", long, "a\x00b\x1b[31m", "d1", "d2", "s", "m"],
        "a": ["fine", "y", "z", "y", "y", "y", "y"],
        "ctx": [[], [], [], [], [], [], ["p"] * 501],
    })
    path = tmp_path / "hostile.parquet"
    frame.write_parquet(path)
    result = convert(tmp_path, path, id_from="id", maps=["input=q,output=a,context=ctx"])
    got = {r["row"]: (r["column"], r["path"], r["error"][:40]) for r in result.rejects}
    assert got == {
        2: ("q", "$.input", "`$.input` is 200,001 characters long; te"),
        5: ("id", "$.id", "Case id 'dup' was already used by row 4;"),
        6: ("id", "$.id", "Case id 'slash/id' is not a slug: ids mu"),
        7: ("ctx", "$.context", "`$.context` has 501 items; at most 500 a"),
    }
    assert [c["id"] for c in result.cases] == ["ok", "ctrl", "dup"]
    assert result.cases[1]["input"] == "a\x00b\x1b[31m"  # text is kept as it is, escaped in JSON


def test_a_tables_id_column_is_the_case_id_by_default(tmp_path: Path) -> None:
    # Issue 30: a row's own `id` is its case id without --id-from, in a table as in a line;
    # a row whose id is not a valid one gets the hash, keeps the value, and is said.
    path = _csv(tmp_path, "id,q,a,who\nq-1,x,y,ann\n,x2,y2,bob\nbad/id,x3,y3,cy\n")
    result = convert(tmp_path, path, maps=["input=q,output=a"], keep_unmapped=True)
    first, second, third = result.cases
    assert first["id"] == "q-1" and first["metadata"] == {"who": "ann"}  # not repeated there
    assert len(second["id"]) == 32 and second["metadata"] == {"id": None, "who": "bob"}
    assert len(third["id"]) == 32 and third["metadata"] == {"id": "bad/id", "who": "cy"}
    assert result.report.generated_ids == {"cases": 2}
    assert [w[:39] for w in result.report.warnings] == ["1 case had an `id` that is not a valid "]
    plain = tmp_path / "plain"
    plain.mkdir()
    report = convert(plain, path, maps=["input=q,output=a"]).report
    assert report.unmapped_columns == ["who"]  # the id column is read: not "unmapped"


def test_malformed_csv_is_an_input_error(tmp_path: Path) -> None:
    path = _csv(tmp_path, 'q,a\n"unclosed,x\ny,z\n')
    with pytest.raises(InputError, match="cannot read"):
        convert(tmp_path, path, maps=["input=q,output=a"])


@pytest.mark.parametrize(("options", "message"), [
    (dict(maps=["input=question"]), "map `output`"),
    (dict(maps=["input=question,output=nope"]), "has no column 'nope'"),
    (dict(maps=["input=question,output=answr"]), "Did you mean 'answer'"),
    (dict(maps=["input=question,outptu=answer"]), "`outptu` is not a case field. Did you mean `output`"),
    (dict(maps=["input=question,output=answer,input=task"]), "already mapped"),
    (dict(maps=["id=id,input=question,output=answer"]), "comes from --id-from"),
    (dict(maps=["input=question,output=answer,expected.x.status=label"]), "a label needs both"),
    (dict(maps=["input=question,output=answer,expected.x y.status=label"],
          sets=["expected.x y.source=human"]), "'x y' is not a valid rubric id; rubric ids must be non-empty"),
    (dict(maps=["input=question,output=answer"], sets=["expected." + "r" * 513 + ".status=pass",
                                                         "expected." + "r" * 513 + ".source=human"]),
     "is not a valid rubric id"),
    (dict(maps=["input=question,output=answer"], values=["output=a:b"]), None),
    (dict(maps=["input=question,output=answer"], values=["metadata.x=a:b"]), "not mapped from a column"),
    (dict(maps=["input=question,output=answer"], values=["output=ab"]), "is not FROM:TO"),
    (dict(maps=["input question"]), "is not FIELD=COLUMN"),
    (dict(maps=["input=question,output=answer,metadata." + ".".join(["a"] * 1000) + "=task"]),
     "`metadata` keys nest at most 32 levels here"),
    (dict(maps=["input=question,output=answer"], sets=["context=x"]), "takes a column"),
    (dict(maps=["input=question,output=answer"], id_from="x{"), "each placeholder"),
    (dict(maps=["input=question,output=answer"], split="train"), "--split applies"),
    (dict(maps=["input=question,output=answer"], tool_failure_when=["error"]), "is not a rule"),
])
def test_usage_errors_name_the_item(tmp_path: Path, options: dict, message: str | None) -> None:
    path = _csv(tmp_path)
    if message is None:
        convert(tmp_path, path, **options)
        return
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace("[", r"\[")):
        convert(tmp_path, path, **options)
    assert not (tmp_path / "cases.jsonl").exists()


def test_wrong_file_for_the_format(tmp_path: Path) -> None:
    pq = _parquet(tmp_path)
    with pytest.raises(WrongFileError, match="is a Parquet file, not csv data; give --from parquet"):
        convert(tmp_path, pq, format="csv", maps=["input=prompt,output=response"])
    gz = tmp_path / "data.csv"
    gz.write_bytes(gzip.compress(b"q,a\n1,2\n"))
    with pytest.raises(WrongFileError, match="without a .gz name"):
        convert(tmp_path, gz, maps=["input=q,output=a"])
    (tmp_path / "one.json").write_text(json.dumps({"q": 1}, indent=2))
    with pytest.raises(WrongFileError, match="one JSON document"):
        convert(tmp_path, tmp_path / "one.json", maps=["input=q,output=a"])


@pytest.mark.parametrize("slice_rows", [1, 3, 512])
def test_polars_rows_are_polars_own_rows_of_every_type(slice_rows: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # The Parquet and Hugging Face rows are read column by column, a slice of rows at a
    # time (issue 31): the values, their Python types, the numbers and the blank rows are
    # those of Polars' own iter_rows.
    import datetime
    import decimal

    from evalstream._convert import tables
    from evalstream._convert.tables import polars_rows

    monkeypatch.setattr(tables, "PY_ROWS", slice_rows)

    frame = pl.DataFrame({
        "text": ["a", None, "", "é\u2028"],
        "int": [1, None, -(2**62), 0],
        "float": [0.5, None, float("nan"), -0.0],
        "bool": [True, None, False, True],
        "list": [["x"], None, [], ["y", None]],
        "struct": [{"id": "p", "text": "t"}, None, {"id": None, "text": "u"}, None],
        "nested": [[[1]], None, [[]], [[2, 3]]],
        "date": [datetime.date(2026, 12, 4), None, datetime.date(1, 1, 1), None],
        "time": [datetime.datetime(2026, 12, 4, 21, 30), None, None, None],
        "decimal": [decimal.Decimal("1.50"), None, None, decimal.Decimal("-2")],
        "binary": [b"\x00\xff", None, b"", None],
        "category": pl.Series(["a", None, "b", "a"], dtype=pl.Categorical),
    })
    expected = list(frame.iter_rows(named=True))
    got = list(polars_rows(iter([frame.head(2), frame.tail(2)]), first=5))
    assert [r.number for r in got] == [5, 6, 7, 8]
    assert [r.blank for r in got] == [False, True, False, False]
    assert repr([r.values for r in got]) == repr(expected)  # NaN, -0.0 and types alike
    assert [[type(v) for v in r.values.values()] for r in got] == \
        [[type(v) for v in r.values()] for r in expected]


_SCALAR = (st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False)
           | st.integers() | st.sampled_from([2**63, 2**64 - 1, 2**64, -(2**63) - 1, -0.0])
           | st.text(max_size=5))
_JSON = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=10)
_LINE = st.one_of(
    st.dictionaries(st.text(max_size=3), _JSON, max_size=4).map(lambda v: json.dumps(v).encode()),
    _JSON.map(lambda v: json.dumps(v).encode()),
    st.sampled_from([b'{"a": 1e400}', b'{"a": 1, "a": [2]}', b'{"a": "\\ud800"}', b'{"a": [',
                     b'{"a": {"b": {"c": []}}}', b'{"a": 1} x', b"[1]", b'"x"', b"{}",
                     b'{"a": ' + b"[" * 300 + b"]" * 300 + b"}"]),
    st.binary(max_size=12))


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_LINE)
def test_a_jsonl_row_is_read_as_any_object(line: bytes) -> None:
    # A line is first decoded as a shallow object (tables._Shallow, which spares it the depth
    # bound): the value, its types and every error are those of a decode as any object.
    from typing import Any

    import msgspec

    from evalstream._convert.tables import _ObjectLines

    reads = _ObjectLines()
    oracle = msgspec.json.Decoder(dict[str, Any]).decode
    try:
        expected: Any = oracle(line)
    except (msgspec.DecodeError, RecursionError) as exc:
        with pytest.raises(type(exc)) as caught:
            reads.kind.decode(line)
        assert str(caught.value) == str(exc)
        return
    value = reads.kind.decode(line)
    assert repr(value) == repr(expected)  # floats and ints told apart, -0.0 too
    assert reads.kind.check is not None
    if value is reads._read.last:  # spared the depth bound: three levels at most
        assert reads.kind.check(value, 1, line) is None
        assert depth.deep_path(value, 3) is None


def test_a_jsonl_row_nested_past_the_limit_is_still_one_reject(tmp_path: Path) -> None:
    src = tmp_path / "t.jsonl"
    deep = {"q": "x", "a": "y", "m": json.loads("[" * 300 + "]" * 300)}
    src.write_text(json.dumps({"q": "x", "a": "y", "m": [[1]]}) + "\n" + json.dumps(deep) + "\n")
    result = convert(tmp_path, src, maps=["input=q,output=a,metadata.m=m"])
    assert result.report.counts.cases == 1
    [reject] = result.rejects
    assert (reject["row"], reject["column"]) == (2, "m")
    assert "nested more than 256 levels deep" in reject["error"]
