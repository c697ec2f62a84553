"""Any bytes at all: every line becomes a case, a reject with a clear error, or a counted blank.

The reference for "what are the lines" is ``bytes.split`` on the raw input, computed here
independently of the reader; nothing the reader or processor reports is trusted by itself.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstream._cli import main
from evalstream._files.lines import BOM, Chunk, read_chunks

from .strategies import cases, dumps
from .support import assert_actionable, assert_counts_add_up, examples, run_on, run_or_diagnosis

pytestmark = pytest.mark.slow  # see pyproject.toml: `-m "not slow"` skips it

NOISE = [b"", b" ", b"\t\r", b"\r", b"\x0c", b"\x00", b"{", b"}", b"[]", b"null", b"\xff",
         b"\xef\xbb\xbf", b"\\ud800", b'"', b",", b"\xc3", b"\xe2\x80\xa8", b"NaN", b"1e999"]


def _lines(data: bytes) -> list[bytes]:
    """The dataset's lines as a person reads them: a BOM at the start dropped, split on LF."""
    parts = data.removeprefix(BOM).split(b"\n")
    return parts[:-1] if parts[-1] == b"" else parts


@st.composite
def datasets(draw: st.DrawFn) -> bytes:
    """Lines mixing valid cases, damaged cases, noise and random bytes."""
    out = []
    for i in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["case", "cut", "flip", "noise", "bytes", "splice"]))
        good = dumps(dict(draw(cases()), id=f"c{i}"))
        if kind == "case":
            line = good
        elif kind == "cut":
            line = good[: draw(st.integers(0, len(good)))]
        elif kind == "flip":
            at = draw(st.integers(0, len(good) - 1))
            line = good[:at] + bytes([good[at] ^ (1 << draw(st.integers(0, 7)))]) + good[at + 1:]
        elif kind == "noise":
            line = b"".join(draw(st.lists(st.sampled_from(NOISE), max_size=5)))
        elif kind == "bytes":
            line = draw(st.binary(max_size=60))
        else:
            at = draw(st.integers(0, len(good)))
            line = good[:at] + draw(st.sampled_from(NOISE)) + good[at:]
        out.append(line.replace(b"\n", b" "))
    data = b"\n".join(out)
    if draw(st.booleans()):
        data += b"\n"
    if draw(st.booleans()):
        data = BOM + data
    return data


def _check_every_line_accounted(data: bytes, tmp_path: Path, build: bool) -> None:
    result = run_or_diagnosis(tmp_path, data, build=build)
    if result is None:
        return  # plainly not JSONL: one sentence, exit 4, nothing written (checked there)
    lines = _lines(data)
    report = result.report
    assert_counts_add_up(report)
    assert report.counts.lines == len(lines)
    blank = {n for n, line in enumerate(lines, 1) if not line.strip(b" \t\r")}  # JSON whitespace only
    rejected = [r["line"] for r in result.rejects]
    assert len(rejected) == len(set(rejected)) == report.counts.rejected
    assert not blank & set(rejected), "a blank line was also rejected"
    assert report.counts.blank == len(blank)
    # A run where no line is a case (an empty file too) is not clean: exit 1, said.
    assert report.exit_code == (1 if rejected or not report.counts.cases else 0)
    for r in result.rejects:
        assert_actionable(r)
        assert r["raw"] == lines[r["line"] - 1][:8000].decode("utf-8", "replace")[:2000]
    if build:
        # Every record belongs to a line that was neither blank nor rejected (a flipped
        # bit may have changed that line's id: read it back with the standard library).
        accepted = [json.loads(line) for n, line in enumerate(lines, 1)
                    if n not in blank and n not in set(rejected)]
        assert len(accepted) == report.counts.cases
        assert {rec["case_id"] for rec in result.records} <= {c["id"] for c in accepted}


@settings(max_examples=examples(300), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=datasets())
def test_every_line_is_a_case_a_reject_or_a_blank(tmp_path: Path, data: bytes) -> None:
    _check_every_line_accounted(data, tmp_path, build=False)


@settings(max_examples=examples(120), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=datasets())
def test_build_writes_only_for_accepted_lines(tmp_path: Path, data: bytes) -> None:
    _check_every_line_accounted(data, tmp_path, build=True)


@settings(max_examples=examples(200), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400))
def test_random_bytes_never_crash(tmp_path: Path, data: bytes) -> None:
    result = run_or_diagnosis(tmp_path, data, build=False)
    if result is None:
        return
    assert_counts_add_up(result.report)
    assert result.report.counts.lines == len(_lines(data))
    for r in result.rejects:
        assert_actionable(r)


def _reference(data: bytes, limit: int) -> list[tuple[int, int, int, bytes]]:
    """(line number, offset, size, bytes kept) per line, as read_chunks should report them."""
    start = len(BOM) if data.startswith(BOM) else 0
    out, offset = [], start
    for n, line in enumerate(_lines(data), 1):
        kept = line if len(line) <= limit else line[:8000]
        out.append((n, offset, len(line), kept))
        offset += len(line) + 1
    return out


PIECES = st.lists(st.sampled_from([b"\n", b"a", b"bc", BOM, b"{}", b"\r\n", b"x" * 9, b"\n\n"]),
                  max_size=40).map(b"".join)


@settings(max_examples=examples(800), deadline=None)
@given(data=st.one_of(PIECES, st.binary(max_size=200)), block=st.integers(1, 40),
       limit=st.integers(1, 30))
def test_reader_numbers_every_line_for_any_block_size(data: bytes, block: int, limit: int) -> None:
    got = []
    for item in read_chunks(io.BytesIO(data), limit, block_size=block):
        if isinstance(item, Chunk):
            got += [(item.line + i, off, len(line), line)
                    for i, (off, line) in enumerate(zip(item.offsets(), item.lines, strict=True))]
        else:
            got.append((item.line, item.offset, item.size, item.head))
    assert got == _reference(data, limit)


@pytest.mark.parametrize(("data", "code"), [
    (b'{"id":"a","input":"x","output":"y"}\n', 0),
    (b'{"id":"a","input":"x","output":"y"}\n\n \n\t\n', 0),
    (b"\n \n\t\n", 1),  # no line is a case: said, exit 1
    (b"", 1),
    (b'{"id":"a","input":"x","output":"y"}\n\xff\xfe\x00garbage\n', 1),
    (b'{"id":"a","input":"x","output":"y"}\n{"id":"a","input":"x","output":"y"}\n', 1),
    (b'{"id":"a","input":"x","output":"y"}\n' + b"[" * 100_000 + b"\n", 1),
    (b"\xff\xfe\x00garbage\n", 4),  # plainly UTF-16: one sentence, exit 4
    (b"[" * 100_000 + b"\n", 4),  # plainly a JSON array
])
def test_bad_content_exits_1_never_2(tmp_path: Path, data: bytes, code: int,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    assert main(["validate", str(src), "-q"]) == code
    assert main(["build", str(src), str(tmp_path / "out.jsonl"), "-q"]) == code
    err = capsys.readouterr().err
    if code == 4:  # the whole file is the problem: one sentence each run
        assert err.count("error:") == 2 and "not JSONL cases" in err
    else:
        assert "error" not in err


# Lines that crashed evalstream or got a wrong or unusable message before this suite; each
# with the path its reject must name and words its message must hold.
FOUND = [
    (rb'{"id":"\ud800","input":"x","output":"y"}', "$.id", "lone UTF-16 surrogate"),
    (rb'{"\udfaa":1}', '$["\\udfaa"]', "lone UTF-16 surrogate"),
    (rb'{"id":"k","input":"x","output":"y","metadata":{"a\ud800":1}}',
     '$.metadata["a\\ud800"]', "lone UTF-16 surrogate"),
    (rb'{"id":"k","input":"x","output":"y","expected":{"\ud800":{"status":"pass"}}}',
     '$.expected["\\ud800"]', "lone UTF-16 surrogate"),
    (b'{"id":"a","input":"' + b"x" * 200_001 + b'","input":5,"output":"y"}', "$.input",
     "given more than once"),
    (b'{"id":"' + b"a" * 513 + b'","id":null,"input":"x","output":"y"}', "$.id",
     "given more than once"),
    (b'{"a":"b"}/**/', "$", "Unexpected text after the JSON object at byte 9 ('/**/')"),
    (b'{"id":"k15","input":"x","output":"y"}\x00', "$", "at byte 37 ('\\x00')"),
    (b'{"a":"a', "$", "The JSON ends before the object is closed"),
    (b'{"id":"x","inptu":"hel', "$", "The JSON ends before the object is closed"),
    (b'{"output":"\\u0000","input":"\x00","id":"v"}', "$.input", "raw control character U+0000"),
    (b'{"id":"k","input":"x","output":"y","metadata":{"a":{"b":1e400}}}', "$.metadata.a.b",
     "out of range"),
    (b'{"id":"k","input":"x","output":"y","metadata":{"a.b":[1,-1e999]}}',
     '$.metadata["a.b"][1]', "out of range"),
    (b'\xc0\x80', "$", "not valid UTF-8 at byte 0"),
    (b'\xff\xfe{\x00}\x00', "$", "looks like UTF-16"),
    (b'{"i"-NaN}', "$", "The line is not valid JSON: unexpected character at byte 4"),
    (b'{"id":"k","input":-Infinity,"output":"y"}', "$.input", "The value -Infinity is not valid JSON (byte 18)"),
    # Holding every character the control-character finder once tried as its marker.
    (b'{\x02id":"c2","input":"","output":"","context":[{"id":"0","text":"'
     b'\xef\xbf\xbf\xf3\xbf\xbf\xbd\xf4\x8f\xbf\xbc\xf4\x8f\xbf\xbd"}]}', "$",
     "raw control character U+0002 at byte 1"),
]


@pytest.mark.parametrize(("line", "path", "words"), FOUND, ids=range(len(FOUND)))
def test_lines_that_once_crashed_or_misled(tmp_path: Path, line: bytes, path: str,
                                           words: str) -> None:
    # After a valid case, so that the file is JSONL and the line gets its own reject.
    result = run_on(tmp_path, b'{"id":"ok","input":"x","output":"y"}\n' + line + b"\n")
    (reject,) = result.rejects
    assert_actionable(reject)
    assert reject["path"] == path
    assert words in reject["error"], reject["error"]


def test_unnamed_key_points_at_its_object(tmp_path: Path) -> None:
    # Out of range and malformed: the lenient reader cannot name the key either.
    line = b'{"metadata":{"k\xc2\x80":1e999null},"input":"","output":"","id":"c3"}'
    (reject,) = run_on(tmp_path, line + b"\n").rejects
    assert_actionable(reject)
    assert reject["path"] == "$.metadata"
