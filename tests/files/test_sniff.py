"""The sniffer: a table of first bytes -> diagnosis, real JSONL that must pass, streams peeked
without losing a byte, and the one sentence a wrong file gets."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import re
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path

import polars as pl
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from evalstream._files.sniff import (
    HEAD_BYTES,
    check_cases_input,
    check_cases_stream,
    check_input,
    decompressed_head,
    diagnose,
    head_of,
    jsonl_kind,
)
from evalstream.errors import EXIT_WRONG_FILE, WrongFileError
from tests.helpers import CORPUS, SAMPLES

CASE = b'{"id":"a","input":"hi","output":"hello"}'
CASES = b"\n".join([CASE, CASE.replace(b'"a"', b'"b"')]) + b"\n"


def _zip(names: list[str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in names:
            z.writestr(name, "{}")
    return buf.getvalue()


def _parquet() -> bytes:
    buf = io.BytesIO()
    pl.DataFrame({"question": ["q"], "answer": ["a"]}).write_parquet(buf)
    return buf.getvalue()


def _tar(form: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=form) as t:
        info = tarfile.TarInfo("cases.jsonl")
        info.size = len(CASES)
        t.addfile(info, io.BytesIO(CASES))
    return buf.getvalue()


# A real PNG (one 64x64 RGB picture), made by hand: signature, IHDR, IDAT, IEND.
def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    pixels = b"".join(b"\x00" + bytes(range(192)) for _ in range(64))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 64, 64, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(pixels)) + chunk(b"IEND", b""))


PNG = _png()
_HEAD = b'{"id":"p","input":"'
MUSTARD = _HEAD + b"x" * (256 - len(_HEAD)) + b'mustard","output":"o"}\n' + CASES
assert MUSTARD[257:262] == b"ustar"

PRETTY = json.dumps({"id": "a", "input": "hi", "output": "hello"}, indent=2).encode()
PRETTY_ARRAY = json.dumps([{"id": "a", "input": "hi", "output": "x"}], indent=2).encode()

# (label, bytes, name, kind or None): None = may be JSONL, left to per-line rejects.
TABLE = [
    ("jsonl", CASES, "cases.jsonl", None),
    ("jsonl with a BOM and CRLF", b"\xef\xbb\xbf" + CASES.replace(b"\n", b"\r\n"), "c.jsonl", None),
    ("jsonl, blank lines first", b"\n\n  \n" + CASES, "c.jsonl", None),
    ("jsonl with a bad first line", b"not json at all\n" + CASES, "c.jsonl", None),
    ("jsonl with a comment line first", b"# my cases\n" + CASES, "c.jsonl", None),
    ("jsonl cut in its first line", b'{"id":"a","inp\n' + CASES, "c.jsonl", None),
    ("one-line array among case lines", b"[1, 2]\n" + CASES, "c.jsonl", None),
    ("a single case line, no newline", CASE, "c.jsonl", None),
    ("empty file", b"", "c.jsonl", None),
    ("plain text lines", b"hello world\nsecond line\n", "c.txt", None),
    ("CSV", b'question,answer\n"What, exactly?",4\nhi,there\n', "data.csv", "csv"),
    ("CSV with embedded newline", b'q,a\n"line one\nline two",x\ny,z\n', "x.jsonl", "csv"),
    ("CSV header only", b"question,answer,context\n", "d.jsonl", "csv"),
    ("TSV", b"question\tanswer\nq1\ta1\n", "data.tsv", "tsv"),
    ("semicolon CSV", b"question;answer\nq1;a1\nq2;a2\n", "data.csv", "csv"),
    ("pretty-printed object", PRETTY, "case.json", "json-document"),
    ("pretty-printed object, key on the first line", b'{"id": "a",\n  "input": "x"\n}\n',
     "c.jsonl", "json-document"),
    ("pretty-printed array", PRETTY_ARRAY, "cases.json", "json-array"),
    ("one-line JSON array", json.dumps([{"id": "a"}, {"id": "b"}]).encode(), "c.json",
     "json-array"),
    ("gzip without .gz", gzip.compress(CASES), "cases.jsonl", "gzip"),
    ("gzip with .gz", gzip.compress(CASES), "cases.jsonl.gz", None),
    ("zstd without .zst", zstandard.compress(CASES), "cases.jsonl", "zstd"),
    ("zstd with .zst", zstandard.compress(CASES), "cases.jsonl.zst", None),
    ("plain text named .gz", CASES, "cases.jsonl.gz", "not-compressed"),
    ("bzip2", bz2.compress(CASES), "cases.jsonl.bz2", "bzip2"),
    ("xz", lzma.compress(CASES), "cases.jsonl.xz", "xz"),
    ("zip", _zip(["cases.jsonl"]), "cases.zip", "zip"),
    ("inspect .eval", _zip(["_journal/start.json", "samples/1_epoch_1.json"]), "x.eval",
     "inspect-eval"),
    ("xlsx", _zip(["[Content_Types].xml", "xl/workbook.xml"]), "data.xlsx", "xlsx"),
    ("parquet", _parquet(), "data.jsonl", "parquet"),
    ("utf-16 with BOM", "\ufeff".encode("utf-16-le") + CASES.decode().encode("utf-16-le"),
     "c.jsonl", "utf-16"),
    ("utf-16 without BOM", CASES.decode().encode("utf-16-be"), "c.jsonl", "utf-16"),
    ("html", b"<!DOCTYPE html>\n<html><body>Not found</body></html>", "c.jsonl", "html"),
    ("xml", b'<?xml version="1.0"?>\n<cases/>', "c.jsonl", "html"),
    ("inspect JSON log", b'{\n  "version": 2,\n  "status": "success",\n  "eval": {\n', "l.json",
     "inspect-json"),
    ("promptfoo results", b'{\n  "evalId": "eval-6eH",\n  "results": {\n    "version": 3,\n',
     "results.json", "promptfoo-results"),
    ("sqlite", b"SQLite format 3\x00" + bytes(100), "c.db", "sqlite"),
    ("pdf", b"%PDF-1.7\n", "c.pdf", "pdf"),
    ("png", PNG, "c.jsonl", "image"),
    ("jpeg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(600), "c.jsonl", "image"),
    ("gif", b"GIF89a\x01\x00\x01\x00" + bytes(40), "c.jsonl", "image"),
    ("gif87", b"GIF87a\x01\x00\x01\x00" + bytes(40), "c.jsonl", "image"),
    ("tar", _tar(tarfile.USTAR_FORMAT), "cases.jsonl", "tar"),
    ("gnu tar", _tar(tarfile.GNU_FORMAT), "cases.tar", "tar"),
    ("tar.gz", gzip.compress(_tar(tarfile.PAX_FORMAT)), "cases.tar.gz", "tar"),
    # "ustar" at byte 257 of text ("mustard"): a JSONL file, never an archive.
    ("jsonl with ustar at byte 257", MUSTARD, "c.jsonl", None),
]


@pytest.mark.parametrize(("label", "data", "name", "kind"), TABLE, ids=[t[0] for t in TABLE])
def test_diagnosis_table(label: str, data: bytes, name: str, kind: str | None) -> None:
    head = data[:HEAD_BYTES]
    found = diagnose(head, name) or diagnose(decompressed_head(head, name), "")
    assert (found.kind if found else None) == kind, label


@pytest.mark.parametrize(("label", "data", "name", "kind"),
                         [t for t in TABLE if t[3] is not None], ids=[t[0] for t in TABLE if t[3]])
def test_wrong_files_raise_one_sentence_with_the_fix(tmp_path: Path, label: str, data: bytes,
                                                     name: str, kind: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(WrongFileError) as info:
        check_cases_input(str(path))
    message = str(info.value)
    assert info.value.exit_code == EXIT_WRONG_FILE == 4
    assert message.startswith(str(path)) and message.endswith(".")
    assert "not JSONL cases" in message
    assert "\n" not in message
    # Every diagnosis says what to run or do: a command in backticks, or a plain step.
    assert "`" in message or any(w in message for w in ("rename", "extract", "must be", "download"))


FIXES = {
    "image": "give the dataset, not a picture", "tar": "tar -xf",
    "promptfoo-results": "--from promptfoo-grades",
    "csv": "evalstream convert", "tsv": "--from tsv", "json-array": "jq -c '.[]'",
    "gzip": "rename it to end in .gz", "zstd": ".zst", "bzip2": "bzip2 -dc",
    "parquet": "--from parquet", "inspect-eval": "--from inspect", "utf-16": "iconv",
    "json-document": "jq -c", "not-compressed": "rename it without .gz",
}


@pytest.mark.parametrize(("label", "data", "name", "kind"),
                         [t for t in TABLE if t[3] in FIXES], ids=[t[0] for t in TABLE if t[3] in FIXES])
def test_each_fix_names_the_command(tmp_path: Path, label: str, data: bytes, name: str,
                                    kind: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(WrongFileError, match="not JSONL cases") as info:
        check_cases_input(str(path))
    assert FIXES[kind] in str(info.value)


def test_csv_sentence_lists_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    path.write_bytes(b"question,answer\nq,a\n")
    with pytest.raises(WrongFileError) as info:
        check_cases_input(str(path))
    assert str(info.value) == (
        f"{path} is a CSV table (first row: question, answer), not JSONL cases (one JSON object "
        f"per line); convert it: `evalstream convert {path} cases.jsonl --from csv --map "
        "input=COLUMN,output=COLUMN`.")


def test_real_jsonl_passes() -> None:
    files = sorted(SAMPLES.glob("*.jsonl"))
    if CORPUS.is_dir():
        files += sorted(CORPUS.glob("*.jsonl"))
    assert any(f.name == "bad.jsonl" for f in files)  # per-line rejects, not a wrong file
    for f in files:
        head = f.read_bytes()[:HEAD_BYTES]
        assert diagnose(head, f.name) is None, f.name
        kind = jsonl_kind(head)
        if kind in (None, "cases"):
            check_cases_input(str(f))
        else:  # the other JSONL of evalstream, named for what it is
            with pytest.raises(WrongFileError, match=f"looks like .*{kind.split()[0]}"):
                check_cases_input(str(f))
    assert jsonl_kind((SAMPLES / "verdicts.jsonl").read_bytes()) == "verdicts"
    assert jsonl_kind((SAMPLES / "chats.jsonl").read_bytes()) == "openai chat"
    assert jsonl_kind((SAMPLES / "cases.jsonl").read_bytes()) == "cases"


@pytest.mark.parametrize(("line", "want", "kind", "fix"), [
    (b'{"case_id":"c","rubric_id":"r","status":"pass"}', "cases", "a verdicts file", "read cases"),
    (b'{"case_id":"c","rubric_id":"r","question":"q","state":{}}', "cases",
     "a judge-states file", "read cases"),
    (b'{"line":1,"offset":0,"id":null,"path":"$","error":"e","raw":"x"}', "cases",
     "a rejects file", "read cases"),
    (b'{"messages":[{"role":"user","content":"hi"}]}', "cases", "OpenAI chat transcripts",
     "--from openai-chat"),
    (b'{"id":"c","input":"i","output":"o"}', "verdicts", "a cases file", "agree VERDICTS"),
    (b'{"id":"c","input":"i","output":"o"}', "judge states", "a cases file", "evalstream build"),
])
def test_another_evalstream_file_is_named(tmp_path: Path, line: bytes, want: str, kind: str,
                                          fix: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(line + b"\n")
    usage = {"verdicts": "; usage: evalstream agree VERDICTS CASES",
             "judge states": "; judge reads build's output: run `evalstream build X` first"}
    with pytest.raises(WrongFileError, match=f"looks like {kind}.*{re.escape(fix)}"):
        if want == "cases":
            check_cases_input(str(path))
        else:
            check_input(str(path), want, usage[want])


def test_each_reader_takes_its_own_kind(tmp_path: Path) -> None:
    files = {"cases": b'{"id":"c","input":"i","output":"o"}',
             "verdicts": b'{"case_id":"c","rubric_id":"r","status":"pass"}',
             "states": b'{"case_id":"c","rubric_id":"r","question":"q","state":{}}'}
    for name, line in files.items():
        (tmp_path / f"{name}.jsonl").write_bytes(line + b"\n")
    check_input(str(tmp_path / "cases.jsonl"), "cases")
    # agree and compare read verdicts, and build's output (exact verdicts, judge states).
    check_input(str(tmp_path / "verdicts.jsonl"), "verdicts")
    check_input(str(tmp_path / "states.jsonl"), "verdicts")
    # judge reads build's output, whose exact verdicts are verdicts.
    check_input(str(tmp_path / "states.jsonl"), "judge states")
    check_input(str(tmp_path / "verdicts.jsonl"), "judge states")


def test_real_jsonl_compressed_passes(tmp_path: Path) -> None:
    data = (SAMPLES / "cases.jsonl").read_bytes()
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(data))
    (tmp_path / "c.jsonl.zst").write_bytes(zstandard.compress(data))
    check_cases_input(str(tmp_path / "c.jsonl.gz"))
    check_cases_input(str(tmp_path / "c.jsonl.zst"))


def test_a_csv_inside_gzip_is_diagnosed(tmp_path: Path) -> None:
    path = tmp_path / "data.csv.gz"
    path.write_bytes(gzip.compress(b"question,answer\nq,a\n"))
    with pytest.raises(WrongFileError, match="CSV table"):
        check_cases_input(str(path))


def test_head_longer_than_a_line_still_decides(tmp_path: Path) -> None:
    # The first line is longer than the head: a JSONL case line must still pass.
    line = json.dumps({"id": "a", "input": "x" * (HEAD_BYTES * 2), "output": "y"}).encode()
    path = tmp_path / "long.jsonl"
    path.write_bytes(line + b"\n" + CASES)
    check_cases_input(str(path))


class _Pipe(io.RawIOBase):
    """A stream that can neither peek nor seek, returning few bytes a read (like a pipe)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), 7, len(self._data))
        buffer[:n] = self._data[:n]
        self._data = self._data[n:]
        return n


@given(st.binary(max_size=3 * HEAD_BYTES // 2), st.sampled_from(["raw", "buffered", "bytesio"]))
def test_head_of_loses_no_byte(data: bytes, kind: str) -> None:
    stream: io.IOBase
    if kind == "raw":
        stream = _Pipe(data)
    elif kind == "buffered":
        stream = io.BufferedReader(_Pipe(data), 1 << 12)
    else:
        stream = io.BytesIO(data)
    head, rest = head_of(stream)  # type: ignore[arg-type]
    assert data.startswith(head)
    assert len(head) == min(len(data), HEAD_BYTES)
    assert rest.read() == data


def test_stdin_stream_is_checked_and_kept_whole() -> None:
    data = CASES * 3
    stream = check_cases_stream(io.BufferedReader(_Pipe(data)))  # type: ignore[arg-type]
    assert stream.read() == data
    with pytest.raises(WrongFileError, match="^the standard input is a CSV table.*"
                                             "`evalstream convert - cases.jsonl"):
        check_cases_stream(io.BytesIO(b"q,a\n1,2\n"))
    with pytest.raises(WrongFileError, match="gzip -dc"):
        check_cases_stream(io.BytesIO(gzip.compress(CASES)))


@given(st.binary(max_size=4096), st.sampled_from(["c.jsonl", "c.jsonl.gz", "c.csv", "-", ""]))
def test_diagnose_never_raises(data: bytes, name: str) -> None:
    found = diagnose(data, name)
    # What to do: the file's own fix, or how convert takes it (the way in, said from above).
    assert found is None or (found.kind and found.what and found.remedy())


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@pytest.mark.slow
@given(st.lists(st.fixed_dictionaries({"id": _TEXT, "input": _TEXT, "output": _TEXT,
                                       "metadata": st.dictionaries(_TEXT, _TEXT, max_size=3)}),
                min_size=1, max_size=20),
       st.booleans(), st.sampled_from([b"\n", b"\r\n"]))
def test_any_jsonl_of_objects_passes(rows: list[dict[str, object]], ascii_only: bool,
                                     newline: bytes) -> None:
    data = newline.join(json.dumps(r, ensure_ascii=ascii_only).encode() for r in rows)
    assert diagnose(data[:HEAD_BYTES], "cases.jsonl") is None


@pytest.mark.parametrize(("module", "allowed"), [
    ("sniff", {"evalstream.errors", "evalstream._files.sniffed"}),
    ("sniffed", set()),  # the root imports it: nothing of evalstream, nothing costly
])
def test_sniff_is_bottom_layer(module: str, allowed: set[str]) -> None:
    # files/ is the bottom layer: the sniffer may use evalstream's errors and nothing above
    # (how a file of another format becomes cases is handed in: sniffed.way_in).
    import ast

    from tests.helpers import ROOT

    tree = ast.parse((ROOT / "evalstream" / "_files" / f"{module}.py").read_text())
    names = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    ours = {n for n in names if n.startswith("evalstream")}
    assert ours == allowed
