"""Reading verdict files: rejects with line, path and sentence; counts that add up; judge
states told apart; duplicate keys; compact columns whatever the text."""

from __future__ import annotations

import ast
import gzip
import json
import re
import tracemalloc
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstream._verdicts.records import (
    FLUSH_ROWS,
    STATUSES,
    Codes,
    DuplicateKeyError,
    RejectSink,
    VerdictFile,
    read_verdicts,
)
from tests.helpers import ROOT

GOOD = b'{"case_id":"c1","rubric_id":"r1","status":"pass"}'

# (line, JSON path, a regex of the sentence, kind in the summary)
BAD = [
    (b'{"case_id":"c1","rubric_id":"r1","status":"pass"', "$",
     r"ends before the object is closed.*each verdict must be one complete", "malformed JSON"),
    (b'{"case_id":"c2","rubric_id":"r1","status":"pass"} x', "$",
     r"Unexpected text after the JSON object at byte 50", "malformed JSON"),
    (b'["c3","r1","pass"]', "$", r"The line is an array, not a verdict", "not an object"),
    (b'{"rubric_id":"r1","status":"pass"}', "$.case_id",
     r"Required field `case_id` is missing; every verdict needs", "missing field"),
    (b'{"case_id":"c5","rubric_id":"r1"}', "$.status",
     r"Required field `status` is missing or null; .* `pass`, `fail`, `na` or `unscored`",
     "missing field"),
    (b'{"case_id":"c6","rubric_id":"r1","status":"PASS"}', "$.status",
     r"`\$.status` is 'PASS'; allowed values are: pass, fail, na, unscored\.", "invalid value"),
    (b'{"case_id":"c7","rubric_id":"r1","status":null}', "$.status",
     r"missing or null", "missing field"),
    (b'{"case_id":"c8","rubric_id":7,"status":"fail"}', "$.rubric_id",
     r"`\$.rubric_id` must be a string, not an integer\.", "invalid value"),
    (b'{"case_id":"c 9","rubric_id":"r1","status":"fail"}', "$.case_id",
     r"Case id 'c 9' is not a slug: ids must be non-empty, at most 512 characters, without "
     r"whitespace", "invalid id"),
    (b'{"case_id":"","rubric_id":"r1","status":"fail"}', "$.case_id",
     r"The id at `\$\.case_id` is empty; ids must be non-empty\.", "invalid id"),
    (b'{"case_id":"c10","rubric_id":"r1","status":"fail","rationle":"x"}', "$.rationle",
     r"Unknown field `rationle` in the verdict\. Did you mean `rationale`\?.*"
     r"--allow-unknown-fields", "unknown field"),
    (b'{"case_id":"c11","rubric_id":"r1","status":"fail","exposure":{"shown":[],"hidden":[]}}',
     "$.exposure.hidden", r"Unknown field `hidden` in `\$.exposure`\. Known fields: `shown`",
     "unknown field"),
    (b'{"case_id":"c12","rubric_id":"r1","status":"fail","judge":"gpt-4o"}', "$.judge",
     r"`\$.judge` must be an object or null, not a string\.", "invalid value"),
    (b'{"case_id":"c13","rubric_id":"r1","status":"fail","judge":{"temperature":0}}',
     "$.judge.model", r"`\$.judge` is missing its required field `model`\.", "missing field"),
    (b'{"case_id":"c14","rubric_id":"r1","status":"fail","rationale":"\xff"}', "$",
     r"not valid UTF-8 at byte 63", "invalid UTF-8"),
    (b'\xef\xbb\xbf{"case_id":"c15","rubric_id":"r1","status":"fail"}', "$",
     r"starts with a UTF-8 byte order mark", "malformed JSON"),
    (b'{"case_id":"c16","rubric_id":"r1","status":"fail","judge":{"model":"m","t":NaN}}',
     "$.judge.t", r"NaN is not valid JSON", "malformed JSON"),
    (b'{"case_id":"c17","rubric_id":"r1","status":"fail","rationale":"\\ud800"}',
     "$.rationale", r"lone UTF-16 surrogate", "malformed JSON"),
    (b'{"case_id":"c18","rubric_id":"r1","status":"fail","judge":{"model":"m","x":'
     + b"[" * 2000 + b"]" * 2000 + b"}}", "$", r"nested too deeply", "too deep"),
    (b'{"case_id":"c19","rubric_id":"r1","status":"fail","kind":"llm"}', "$.kind",
     r"allowed values are: judge, exact\.", "invalid value"),
    (b'{"case_id":"c20","rubric_id":"r1","status":"fail","evidence":"t1"}', "$.evidence",
     r"must be an array or null, not a string", "invalid value"),
]


def read(path: Path, **kw: object) -> VerdictFile:
    return read_verdicts(str(path), Codes(), RejectSink(None), **kw)  # type: ignore[arg-type]


def write(tmp_path: Path, lines: list[bytes], name: str = "v.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize(("line", "path", "message", "kind"), BAD,
                         ids=[f"line{i}" for i in range(len(BAD))])
def test_every_kind_of_reject(tmp_path: Path, line: bytes, path: str, message: str,
                              kind: str) -> None:
    src = write(tmp_path, [GOOD.replace(b"c1", b"c0"), line])
    rejects = tmp_path / "rejects.jsonl"
    sink = RejectSink(str(rejects))
    result = read_verdicts(str(src), Codes(), sink)
    sink.commit()
    (record,) = [json.loads(x) for x in rejects.read_text().splitlines()]
    assert record["file"] == str(src)
    assert record["line"] == 2
    assert record["offset"] == len(GOOD) + 1
    assert record["path"] == path
    assert re.search(message, record["error"]), record["error"]
    assert record["raw"] == line[:2000].decode("utf-8", "replace")[:2000]
    assert result.summary.rejected_by_kind == {kind: 1}
    assert result.summary.verdicts == 1
    assert result.summary.first_rejects[0].error == record["error"]


def test_reject_names_the_case_id_when_it_can(tmp_path: Path) -> None:
    src = write(tmp_path, [b'{"case_id":"c6","rubric_id":"r1","status":"PASS"}',
                           b'{"case_id":"c16","rubric_id":"r1","status":"fail","x":NaN}'])
    first = read(src).summary.first_rejects
    assert [r.id for r in first] == ["c6", "c16"]


def test_long_line_is_rejected_without_reading_it_whole(tmp_path: Path) -> None:
    long = b'{"case_id":"c1","rubric_id":"r1","status":"pass","rationale":"' + b"x" * 9000 + b'"}'
    src = write(tmp_path, [long, GOOD.replace(b"c1", b"c2")])
    result = read(src, max_line_bytes=4096)
    (rej,) = result.summary.first_rejects
    assert (rej.line, rej.path) == (1, None)
    assert f"{len(long):,} bytes, over the limit of 4,096 bytes" in rej.error
    assert result.summary.rejected_by_kind == {"line too long": 1}
    assert result.frame["case_id"].to_list() == ["c2"]


def test_counts_add_up_and_judge_states_are_counted_apart(tmp_path: Path) -> None:
    state = (b'{"case_id":"c9","rubric_id":"r1","question":"Q","state":{"user_input":"hi"},'
             b'"exposure":{"shown":["user_input"],"withheld":[],"never_shown":[]},'
             b'"rubric_hash":"a","state_hash":"b"}')
    lines = [GOOD, b"", b"  \t", state, *(line for line, *_ in BAD),
             b'{"case_id":"c2","rubric_id":"r1","status":"unscored","judge":{"model":"m"}}']
    s = read(write(tmp_path, lines)).summary
    assert s.lines == len(lines)
    assert (s.blank, s.verdicts, s.judge_states, s.rejected) == (2, 2, 1, len(BAD))
    assert s.lines == s.blank + s.verdicts + s.judge_states + s.rejected
    assert s.by_status == {"pass": 1, "fail": 0, "unscored": 1, "na": 0}
    assert sum(s.rejected_by_kind.values()) == s.rejected
    assert len(s.first_rejects) == 20  # the first 20; the rest are counted (and in --rejects)
    assert (s.judges, s.no_judge) == ({"m": 1}, 1)


def test_exact_verdicts_from_build_are_verdicts(tmp_path: Path) -> None:
    exact = (b'{"case_id":"case-01","rubric_id":"booking-succeeded","kind":"exact",'
             b'"status":"pass","evidence":["t2"],"exposure":{"shown":["tool_events"],'
             b'"withheld":["user_input"],"never_shown":["expected","metadata"]},'
             b'"rubric_hash":"df6b4cc5f9c8fd21c6f8aeaef022401b"}')
    result = read(write(tmp_path, [exact]), with_hashes=True)
    row = result.frame.row(0, named=True)
    assert (row["case_id"], row["status"], row["line"]) == ("case-01", 0, 1)
    assert row["state_hash"] is None and row["rubric_hash"] is not None


def test_allow_unknown_fields(tmp_path: Path) -> None:
    line = (b'{"case_id":"c1","rubric_id":"r1","status":"fail","score":0.2,'
            b'"exposure":{"shown":["user_input"],"extra":1}}')
    assert read(write(tmp_path, [line])).summary.rejected == 1
    lenient = read(write(tmp_path, [line]), allow_unknown_fields=True).summary
    assert (lenient.rejected, lenient.verdicts) == (0, 1)


def test_judge_models_are_listed_up_to_twenty(tmp_path: Path) -> None:
    lines = [json.dumps({"case_id": f"c{i}", "rubric_id": "r", "status": "pass",
                         "judge": {"model": f"m{i % 25}"}}).encode() for i in range(50)]
    s = read(write(tmp_path, lines)).summary
    assert len(s.judges) == 20
    assert sum(s.judges.values()) + s.judges_unlisted == 50
    assert s.judges_unlisted == 10  # m20..m24, twice each


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_compressed_input(tmp_path: Path, suffix: str) -> None:
    data = b"\n".join([GOOD, GOOD.replace(b"c1", b"c2")]) + b"\n"
    path = tmp_path / f"v.jsonl{suffix}"
    path.write_bytes(gzip.compress(data) if suffix == ".gz"
                     else zstandard.ZstdCompressor().compress(data))
    assert read(path).frame["case_id"].to_list() == ["c1", "c2"]


@pytest.mark.slow
def test_columns_equal_a_plain_reading(tmp_path: Path) -> None:
    lines = []
    for i in range(2 * FLUSH_ROWS + 17):  # three frames
        status = STATUSES[i % 3]
        lines.append(json.dumps({"case_id": f"case-{i // 3}", "rubric_id": f"r{i % 3}",
                                 "status": status, "rationale": "why " * (i % 5)}).encode())
    lines.insert(100, b"not json")
    rubrics = Codes()
    frame = read_verdicts(str(write(tmp_path, lines)), rubrics, RejectSink(None)).frame
    expected = [(d["case_id"], d["rubric_id"], d["status"], n)
                for n, d in ((n, json.loads(x)) for n, x in enumerate(lines, 1) if x != b"not json")]
    got = [(c, rubrics.names[r], STATUSES[s], n) for c, r, s, n in frame.iter_rows()]
    assert got == expected
    assert frame.columns == ["case_id", "rubric", "status", "line"]


# -- duplicate keys ------------------------------------------------------------------------------
def test_duplicate_key_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    lines = [GOOD, GOOD.replace(b"c1", b"c2"), GOOD.replace(b'"pass"', b'"fail"')]
    with pytest.raises(DuplicateKeyError, match=r"lines 1 and 3 are both verdicts for case `c1`, "
                                                r"rubric `r1`\. A file may hold one verdict"):
        read(write(tmp_path, lines))


def test_duplicates_far_apart_are_found(tmp_path: Path) -> None:
    lines = [json.dumps({"case_id": f"c{i}", "rubric_id": "r", "status": "pass"}).encode()
             for i in range(FLUSH_ROWS + 10)]
    lines += [lines[5], lines[7]]
    with pytest.raises(DuplicateKeyError,
                       match=rf"lines 6 and {FLUSH_ROWS + 11} .* case `c5`.* \(2 keys are "):
        read(write(tmp_path, lines))


def test_same_case_other_rubric_is_no_duplicate(tmp_path: Path) -> None:
    lines = [GOOD, GOOD.replace(b"r1", b"r2"), GOOD.replace(b"c1", b"r1").replace(b"r1\",", b"c1\",")]
    assert read(write(tmp_path, lines)).summary.verdicts == 3


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture],
          deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "a-1", "é"]),
                          st.sampled_from(["r1", "r2"])), max_size=12))
def test_duplicates_match_a_plain_check(tmp_path: Path, keys: list[tuple[str, str]]) -> None:
    lines = [json.dumps({"case_id": c, "rubric_id": r, "status": "pass"}).encode()
             for c, r in keys]
    first: dict[tuple[str, str], int] = {}
    repeat = None
    for n, key in enumerate(keys, 1):
        if key in first:
            repeat = repeat or (first[key], n, key)
        first.setdefault(key, n)
    path = write(tmp_path, lines or [b""])
    if repeat is None:
        assert read(path).summary.verdicts == len(keys)
        return
    with pytest.raises(DuplicateKeyError) as err:
        read(path)
    a, b, (case, rubric) = repeat
    assert f"lines {a} and {b} are both verdicts for case `{case}`, rubric `{rubric}`" in str(
        err.value)


# -- memory --------------------------------------------------------------------------------------
def test_rationale_text_is_not_kept(tmp_path: Path) -> None:
    """Python-side memory stays near one block while 24 MB of rationales stream past."""
    rationale = "x" * 80_000
    path = tmp_path / "long.jsonl"
    with path.open("w") as f:
        for i in range(300):
            f.write(json.dumps({"case_id": f"c{i}", "rubric_id": "r", "status": "fail",
                                "rationale": rationale, "judge": {"model": "m",
                                                                  "notes": rationale}}) + "\n")
    assert path.stat().st_size > 48_000_000
    tracemalloc.start()
    try:
        result = read(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.summary.verdicts == 300
    assert peak < 6_000_000, f"peak {peak:,} bytes"


# -- the first ids of each kind ------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["x", "y"]),
                          st.integers(0, 10_000)), max_size=200, unique_by=lambda r: r[2]),
       st.integers(1, 4))
def test_first_rows_both_ways_match_a_plain_sort(rows: list[tuple[int, str, int]],
                                                 k: int) -> None:
    import polars as pl

    from evalstream._verdicts.records import first_rows

    frame = pl.LazyFrame(rows, schema={"rubric": pl.UInt32, "kind": pl.String,
                                       "order": pl.UInt32}, orient="row")
    expected = []
    for group in sorted({(r, kind) for r, kind, _ in rows}):
        expected += sorted(x for x in rows if (x[0], x[1]) == group)[:k]
    for batched in (True, False):
        assert first_rows(frame, ["rubric", "kind"], "order", k, batched).rows() == expected


@pytest.mark.parametrize(("line", "path", "start"), [
    ('{"case_id":"a","rubric_id":"r","status":null,"state":null}', "$.status",
     "Required field `status` is missing or null"),
    ('{"case_id":"a","rubric_id":"r","state":null}', "$.status", "Required field `status`"),
    ('{"case_id":"a","rubric_id":"r"}', "$.status", "Required field `status`"),
    ('{"case_id":"a","rubric_id":"r","state":[{"x":1}]}', "$.state",
     "`$.state` is an array, but a judge state is an object"),
    ('{"case_id":"a","rubric_id":"r","state":"text"}', "$.state", "`$.state` is a string"),
    ('{"case_id":"a","rubric_id":"r","state":7}', "$.state", "`$.state` is a number"),
])
def test_a_line_without_status_is_a_judge_state_only_with_an_object_state(
        line: str, path: str, start: str) -> None:
    from evalstream._cases.reading import RecordReader
    from evalstream._files.lines import chunks_of
    from evalstream._verdicts.records import verdict_kind

    reader = RecordReader(verdict_kind())
    judge_state = '{"case_id":"a","rubric_id":"r","question":"Q?","state":{"user_input":"x"}}'
    items = list(reader.read(chunks_of([judge_state, line])))
    assert reader.counts.records == 1 and reader.counts.rejected == 1
    reject = items[1]
    assert (reject.line, reject.path) == (2, path)  # type: ignore[union-attr]
    assert reject.error.startswith(start)  # type: ignore[union-attr]


# -- the statuses, each meaning defined once -------------------------------------------------------
_STATUS_WORDS = {"pass", "fail", "na", "unscored"}
_SOURCE_WORDS = {"synthetic", "human", "imported"}
# Where a list of statuses or label sources may still be written out, and why. Any other
# module takes them from ``_verdicts.records`` (or ``_cases.schema``, below it).
_WRITTEN_OUT = {
    "evalstream/_cases/schema.py": "the case format's Literals: a label's statuses, sources",
    "evalstream/_verdicts/records.py": "the verdict's Literal, VerdictStatus",
    "evalstream/_judge/logprobs.py": "the providers' registry must not load the records",
    "evalstream/_judge/answer.py": "the answer's Literal; the registry's light path too",
    "evalstream/_judge/inputs.py": "a judge state's Literal (judge's own module)",
    "evalstream/_checks/state.py": "below _verdicts: the statuses a judge may answer",
}


def _written_out(tree: ast.AST) -> list[int]:
    """The lines of literal tuples, lists or sets of three or more statuses or sources."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 3 and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            words = {e.value for e in node.elts}  # type: ignore[attr-defined]
            if (words <= _STATUS_WORDS and len(words) >= 3) or words == _SOURCE_WORDS:
                lines.append(node.lineno)
    return lines


def test_statuses_and_sources_are_written_once() -> None:
    found = []
    for path in sorted((ROOT / "evalstream").rglob("*.py")):
        name = str(path.relative_to(ROOT))
        if name not in _WRITTEN_OUT:
            found += [f"{name}:{n}" for n in _written_out(ast.parse(path.read_text()))]
    assert found == [], ("take the statuses from `_verdicts.records` (LABEL_STATUSES, "
                         f"LABEL_SOURCES, STATUSES, VOTE_STATUSES): {found}")


def test_the_status_orders_stay() -> None:
    """Codes kept in columns (view's kept index) and report keys follow these orders."""
    from evalstream._judge import logprobs
    from evalstream._stats import rows
    from evalstream._verdicts import records

    assert records.LABEL_STATUSES == ("pass", "fail", "na")
    assert records.LABEL_SOURCES == ("synthetic", "human", "imported")
    assert records.STATUSES == ("pass", "fail", "unscored", "na")
    assert records.VOTE_STATUSES == ("pass", "fail", "na", "unscored")
    # The copies kept below or beside the records, for a reason (``_WRITTEN_OUT``).
    assert logprobs.STATUSES == records.LABEL_STATUSES
    assert (rows.STATUSES, rows.SOURCES) == (records.LABEL_STATUSES, records.LABEL_SOURCES)
