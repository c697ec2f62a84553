"""The registry of ``convert`` formats: every format listed, documented, recognised by what it
declares, its options checked against its declaration, and the wrong-file sentences of every
command read from it."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import re
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
import zstandard

from evalstream._cli import main
from evalstream._convert import Options, formats
from evalstream._convert.formats import FORMATS, NAMES, Format
from evalstream._convert.formats.base import OPTIONS
from evalstream._files import sniff
from evalstream._files.sniffed import Sniffed
from evalstream.errors import UsageError, WrongFileError
from tests.convert.support import GOLDEN, convert
from tests.files.test_sniff import PNG
from tests.helpers import ROOT, golden

DOCS = ROOT / "docs" / "convert.md"


def _zip(names: list[str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in names:
            z.writestr(name, "{}")
    return buf.getvalue()


def _frame(write: str) -> bytes:
    buf = io.BytesIO()
    getattr(pl.DataFrame({"q": ["x"], "a": ["y"]}), write)(buf)
    return buf.getvalue()


# A small file of each format (a new format adds one): what its names and first bytes say.
SAMPLES = {
    "openai-chat": b'{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}\n',
    "otel": b'{"resourceSpans":[{"resource":{},"scopeSpans":[{"scope":{},"spans":[]}]}]}\n',
    "csv": b"q,a\nx,y\n",
    "tsv": b"q\ta\nx\ty\n",
    "parquet": _frame("write_parquet"),
    "json": b'[{"q": "x", "a": "y"}]',
    "jsonl": b'{"q": "x", "a": "y"}\n',
    "inspect": _zip(["_journal/start.json", "samples/1_epoch_1.json"]),
    "hf": _frame("write_ipc_stream"),
    "inspect-grades": _zip(["_journal/start.json", "samples/1_epoch_1.json"]),
    "promptfoo-grades": b'{\n  "evalId": "eval-x",\n  "results": {\n    "version": 3,\n    "results": []}}',
}
# A value for each option a format may take or refuse (by the field of convert's Options).
VALUES = {"maps": ["input=q,output=a"], "sets": ["metadata.x=1"], "values": ["input=a:b"],
          "parse_json": ["q"], "keep_unmapped": True, "id_from": "q",
          "tool_failure_when": ["never"], "split": "test", "separator": ";", "quoting": False}


def test_every_format_has_a_sample_here() -> None:
    assert set(SAMPLES) == set(NAMES)
    assert len(set(NAMES)) == len(NAMES)


def test_every_format_is_listed_and_documented(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "--list-formats"]) == 0
    listed = capsys.readouterr().out
    assert listed == formats.list_formats()
    docs = DOCS.read_text()
    # The transcript in docs/convert.md is this very list (the slow transcript test runs it).
    block = re.search(r"\$ python -m evalstream convert --list-formats\n(.*?)```", docs, re.S)
    assert block is not None and block[1] == listed
    row = next(line for line in docs.splitlines() if line.startswith("| `--from FORMAT`"))
    sources = docs[docs.index("## Sources"):docs.index("## Options")]
    for fmt in FORMATS:
        assert re.search(rf"^{re.escape(fmt.name)} +{re.escape(fmt.reads)}$", listed, re.M)
        assert f"`{fmt.name}`" in row, f"--from {fmt.name} is not in the options table"
        assert f"`{fmt.name}`" in sources or f"**{fmt.name}**" in sources, \
            f"docs/convert.md does not describe --from {fmt.name}"


def _sample(tmp_path: Path, fmt: Format, name: str) -> Path:
    path = tmp_path / name
    path.write_bytes(SAMPLES[fmt.name])
    return path


@pytest.mark.parametrize("fmt", FORMATS, ids=NAMES)
def test_each_format_is_inferred_from_what_it_declares(tmp_path: Path, fmt: Format) -> None:
    for suffix in fmt.suffixes:
        path = _sample(tmp_path, fmt, f"data{suffix}")
        assert formats.infer(str(path))[0] is fmt, suffix
        formats.check(str(path), fmt)  # its own bytes are never a wrong file
    if fmt.magic or fmt.guess:  # by its first bytes, under a name that says nothing
        found, how = formats.infer(str(_sample(tmp_path, fmt, "data.bin")))
        assert found is fmt and how.startswith("its content: ")
    if fmt.folder:
        (tmp_path / "folder").mkdir()
        assert formats.infer(str(tmp_path / "folder")) == (fmt, f"a folder: {fmt.folder}")
    if fmt.stream:
        formats.check_options(fmt, Options(input="-", output="-"))
    else:
        with pytest.raises(UsageError, match=f"--from {fmt.name} cannot read stdin"):
            formats.check_options(fmt, Options(input="-", output="-"))


@pytest.mark.parametrize("option", list(OPTIONS))
@pytest.mark.parametrize("fmt", FORMATS, ids=NAMES)
def test_options_are_checked_against_each_format(fmt: Format, option: str) -> None:
    for flag in OPTIONS[option].flags:
        opts = Options(input="x", output="y", **{flag.field: VALUES[flag.field]})
        if fmt.takes(option):
            formats.check_options(fmt, opts)
            continue
        with pytest.raises(UsageError) as info:
            formats.check_options(fmt, opts)
        takers = ", ".join(f.name for f in FORMATS if f.takes(option))
        assert str(info.value).startswith(f"{flag.flag} applies to ")
        assert f"--from {takers}" in str(info.value)
        assert str(info.value).endswith(f"; {fmt.refuses[option]}." if option in fmt.refuses
                                        else " only.")


def test_an_option_sentence_is_grammatical(tmp_path: Path) -> None:
    # It said "--map apply to tables" for one option.
    chats = _sample(tmp_path, formats.named("openai-chat"), "chats.jsonl")
    with pytest.raises(UsageError, match=r"^--map applies to tables \(--from csv, tsv, parquet, "
                                         r"json, jsonl, hf\); openai-chat has its own fixed "):
        convert(tmp_path, chats, maps=["input=q"])
    with pytest.raises(UsageError, match="^--map, --set apply to tables"):
        convert(tmp_path, chats, maps=["input=q"], sets=["input=q"])


def test_a_json_document_gets_one_sentence_named_or_inferred(tmp_path: Path) -> None:
    # --from json said what a case reader says (write it as cases.jsonl) where the inferred
    # format said what convert reads (rows, as an array or as JSONL).
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"q": 1}, indent=2))
    said = []
    for given in (None, "json"):
        with pytest.raises(WrongFileError) as info:
            convert(tmp_path, path, format=given, maps=["input=q,output=a"])
        said.append(str(info.value))
    assert said[0] == said[1] == (f"{path} is one JSON document, not a JSON array of rows; give "
                                  "the rows as an array or as JSONL (`jq -c '.KEY[]' FILE`).")


def test_the_way_in_reads_the_registry() -> None:
    for fmt in FORMATS:
        for kind in fmt.kinds:
            if kind == "jsonl":  # a file that may be JSONL: cases, never a wrong file
                continue
            said = formats.way_in(Sniffed(kind, "", "")) or ""
            if fmt.writes == "cases":
                assert f"--from {fmt.name}" in said, kind
            else:  # a peer's verdicts: the way into cases, else into verdicts
                takers = [f for f in FORMATS if kind in f.kinds and f.writes == "cases"]
                assert f"--from {(takers or [fmt])[0].name}" in said, kind
    assert formats.way_in(Sniffed("zip", "a zip archive", "extract it")) is None
    # The bottom layer says what a file is; which --from reads it is convert's to say.
    sniff = (ROOT / "evalstream" / "_files" / "sniff.py").read_text()
    assert "evalstream convert" not in sniff and not re.search(r"--from \w", sniff)


def test_every_process_gets_the_way_in(tmp_path: Path) -> None:
    # A process that imports only the sniffer (a Dask worker's task) says the same sentence.
    path = _sample(tmp_path, formats.named("csv"), "t.csv")
    code = ("from evalstream._files.sniff import check_cases_input\n"
            f"try: check_cases_input({str(path)!r})\n"
            "except Exception as exc: print(exc)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)
    assert done.stdout.strip().endswith(
        f"convert it: `evalstream convert {path} cases.jsonl --from csv --map "
        "input=COLUMN,output=COLUMN`.")


_CASE = b'{"id":"a","input":"hi","output":"hello"}\n'


def _tar(data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        info = tarfile.TarInfo("cases.jsonl")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return buf.getvalue()

# Files of every kind the sniffer names, and some it does not, under names that say each format
# or none: what every command says about them is kept in a golden file.
CONTENTS = {
    **{f"sample-{name}": data for name, data in SAMPLES.items()},
    "cases": _CASE * 2, "semicolons": b"q;a\nx;y\nz;w\n", "pipes": b"q|a\nx|y\n",
    "document": json.dumps({"q": 1, "a": 2}, indent=2).encode(),
    "pretty-array": json.dumps([{"q": 1}], indent=2).encode(),
    "gzip": gzip.compress(_CASE), "zstd": zstandard.compress(_CASE), "bzip2": bz2.compress(_CASE),
    "xz": lzma.compress(_CASE), "zip": _zip(["a.jsonl"]),
    "xlsx": _zip(["[Content_Types].xml", "xl/workbook.xml"]), "arrow-file": _frame("write_ipc"),
    "sqlite": b"SQLite format 3\x00" + bytes(100), "pdf": b"%PDF-1.7\n",
    "html": b"<!DOCTYPE html>\n<html></html>", "utf-16": _CASE.decode().encode("utf-16"),
    "inspect-json": b'{\n  "version": 2,\n  "status": "success",\n  "eval": {\n',
    "text": b"hello world\nsecond\n", "empty": b"",
    "verdicts": b'{"case_id":"c","rubric_id":"r","status":"pass"}\n',
    "gzip-csv": gzip.compress(b"q,a\nx,y\n"),
    "png": PNG, "tar": _tar(_CASE),
}
NAMES_TRIED = ["", ".jsonl", ".csv", ".tab", ".json", ".parquet", ".eval", ".arrow", ".gz",
               ".csv.gz", ".db"]


def _said(call: Callable[..., object], *args: object) -> str:
    try:
        result = call(*args)
    except (UsageError, WrongFileError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return f"ok {result[0].name} ({result[1]})" if isinstance(result, tuple) else "ok"


def test_every_sentence_about_a_file_is_kept(tmp_path: Path) -> None:
    # What convert infers and says for each format, and what a command that reads cases (or
    # verdicts) says, for every file here: the golden was checked, sentence by sentence,
    # against the code before the registry (the same but for test_a_json_document_...).
    lines = []
    for content, data in CONTENTS.items():
        for suffix in NAMES_TRIED:
            path = tmp_path / f"{content}{suffix}"
            path.write_bytes(data)
            name = str(path)
            said = [f"infer: {_said(formats.infer, name)}"]
            said += [f"{f.name}: {_said(formats.check, name, f)}" for f in FORMATS]
            said.append(f"cases: {_said(sniff.check_cases_input, name)}")
            said.append(f"verdicts: {_said(sniff.check_input, name, 'verdicts')}")
            lines += [f"{path.name}\n", *(f"  {x}\n" for x in said)]
            path.unlink()
    golden("wrong_files.golden.txt", "".join(lines).replace(str(tmp_path), "DIR").encode(),
           GOLDEN)
