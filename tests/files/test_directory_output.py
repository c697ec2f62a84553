"""``build --engine dask`` into a directory (a name ending in ``/``): an existing directory is
replaced only when it is an earlier directory output, known by its ``manifest.json``, and
holds nothing that manifest does not list (``--force``: any directory); never one that
holds an input of the run (issue 23, item 4). Refused before any cluster is asked: these run
without one. On an object store: ``tests/build/test_cluster.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstream._build.run import Options, run
from evalstream._files import parts
from evalstream.errors import UsageError
from tests.helpers import SAMPLES

CASES = SAMPLES / "cases.jsonl"


def _build(output: Path, *inputs: Path, **more: object) -> None:
    names = [str(i) for i in inputs] or [str(CASES)]
    run(Options(input=" ".join(names), inputs=names if len(names) > 1 else [],
                output=str(output) + "/", engine="dask", **more))  # type: ignore[arg-type]


def earlier(folder: Path) -> dict[str, bytes]:
    """A directory as an earlier run wrote it (two parts, rejects, report, manifest)."""
    folder.mkdir()
    files = {"part-00000.jsonl": b'{"case_id":"a"}\n', "part-00001.jsonl": b'{"case_id":"b"}\n',
             "rejects.jsonl": b'{"line":1,"offset":0,"error":"e","raw":"x"}\n',
             "report.json": b'{"command":"build","evalstream":"0"}\n'}
    files["manifest.json"] = json.dumps({
        "shape": parts.MANIFEST_SHAPE, "parts": ["part-00000.jsonl", "part-00001.jsonl"],
        "bytes": 32, "rejects": "rejects.jsonl", "report": "report.json"}).encode()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return files


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_a_directory_of_other_files_is_refused(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    (mine / "data").mkdir()
    (mine / "data" / "table.csv").write_text("a,b\n")
    with pytest.raises(UsageError, match=r"mine exists and holds data/table\.csv and notes\.txt,"
                       r" which no directory output wrote .*give --force"):
        _build(mine)
    assert tree(mine) == {"data/table.csv": b"a,b\n", "notes.txt": b"keep me"}
    # A manifest that is not a directory output's is not one either.
    (mine / "manifest.json").write_text('{"parts": []}')
    with pytest.raises(UsageError, match=r"its manifest\.json is not a directory output's"):
        _build(mine)
    assert sorted(tree(mine)) == ["data/table.csv", "manifest.json", "notes.txt"]


def test_files_an_earlier_output_did_not_write_are_named_and_kept(tmp_path: Path) -> None:
    states = tmp_path / "states"
    files = earlier(states)
    (states / "notes.txt").write_text("mine")
    (states / "empty").mkdir()
    with pytest.raises(UsageError, match=r"holds empty/ and notes\.txt, which the earlier output "
                       r"there did not write .*give --force"):
        _build(states)
    assert tree(states) == {**files, "notes.txt": b"mine"} and (states / "empty").is_dir()


@pytest.mark.parametrize("force", [False, True])
def test_no_input_may_lie_in_the_directory_even_with_force(tmp_path: Path, force: bool) -> None:
    states = tmp_path / "states"
    earlier(states)
    (states / "more").mkdir()
    inside = states / "more" / "cases.jsonl"
    inside.write_bytes(CASES.read_bytes())
    (tmp_path / "link").symlink_to(states)
    for spelling in (inside, tmp_path / "link" / "more" / "cases.jsonl",
                     states / ".." / "states" / "more" / "cases.jsonl"):
        with pytest.raises(UsageError, match=r"the input .* is inside the output folder"):
            _build(states, CASES, spelling, force=force)
        assert inside.read_bytes() == CASES.read_bytes()
    rubrics = states / "more" / "rubrics.toml"
    rubrics.write_bytes((SAMPLES / "rubrics.toml").read_bytes())
    with pytest.raises(UsageError, match=r"the rubrics .* is inside the output folder"):
        _build(states, rubric_files=[str(rubrics)], force=force)


def test_the_commit_checks_again(tmp_path: Path) -> None:
    states = tmp_path / "states"
    earlier(states)
    folder = tmp_path / "parts"
    folder.mkdir()
    out = parts.DirectoryOutput(str(states) + "/", str(folder))
    out.check_replaceable()  # an earlier output, as it was
    (states / "notes.txt").write_text("written while the run worked")
    with pytest.raises(UsageError, match=r"notes\.txt"):
        out.check_replaceable()
    parts.DirectoryOutput(str(states) + "/", str(folder), force=True).check_replaceable()
