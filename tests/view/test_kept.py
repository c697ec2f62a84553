"""The index kept beside the files (``view --keep-index``, issue 31): reused only while every
file is byte for byte the one indexed and the options are the same; the pages from it are
the pages from a fresh index; a changed file is never read with an old index, however it
changed (its size, its time, its inode, or only its bytes under the same size and time)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from evalstream._build.run import Options as BuildOptions
from evalstream._build.run import run as build_states
from evalstream._cli import main
from evalstream._verdicts.stale import STATE
from evalstream._view import kept
from evalstream._view.index import Options, build
from evalstream._view.kept import kept_or_built
from tests.view.support import CASES, VERDICTS, VERDICTS_B
from tests.view.test_export import tree


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Copies of the samples (cases, verdicts, the other run) the tests may change."""
    out = []
    for src in (CASES, VERDICTS, VERDICTS_B):
        dst = tmp_path / src.name
        shutil.copyfile(src, dst)
        out.append(dst)
    return out[0], out[1], out[2]


def _opts(cases: Path, verdicts: Path, other: Path | None = None, **more: object) -> Options:
    return Options(verdicts=str(verdicts), cases=str(cases),
                   compare=None if other is None else str(other), keep_index=True,
                   **more)  # type: ignore[arg-type]


def _index(opts: Options) -> kept.Index:
    return kept_or_built(opts, lambda: build(opts))


def _same(a: kept.Index, b: kept.Index) -> None:
    """Every part of two indexes is equal (arrays by value)."""
    import numpy as np

    for name in kept._ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for x, y in ((a.run, b.run), (a.other, b.other)):
        assert (x is None) == (y is None)
        if x is not None and y is not None:
            for name in kept._RUN:
                u, v = getattr(x, name), getattr(y, name)
                assert (u is None and v is None) or np.array_equal(u, v), name
    def summaries(index: kept.Index) -> list[object]:  # but the seconds each file took
        return [dataclasses.replace(f, seconds=0.0) for f in index.files.values()]

    assert summaries(a) == summaries(b) and a.unknown_where == b.unknown_where
    assert [n.names for n in (a.groups, a.rubric_names, a.causes, a.reasons)] == \
        [n.names for n in (b.groups, b.rubric_names, b.causes, b.reasons)]
    assert a.groups.of == b.groups.of and a.rejects.kinds.names == b.rejects.kinds.names
    assert a.ids.columns() == b.ids.columns() and a.ids.size == b.ids.size
    assert a.rubric_hash_mismatch == b.rubric_hash_mismatch
    assert a.unknown_rubrics == b.unknown_rubrics and a.nbytes == b.nbytes
    # The split panels (issue 26): keys, pattern codes, patterns, verdicts with votes.
    assert list(a.panels.keys) == list(b.panels.keys)
    assert list(a.panels.kinds) == list(b.panels.kinds)
    assert a.panels.patterns == b.panels.patterns
    assert a.panels.with_votes == b.panels.with_votes


def test_a_kept_index_is_reused_and_equals_a_fresh_one(files: tuple[Path, Path, Path]) -> None:
    cases, verdicts, other = files
    opts = _opts(cases, verdicts, other)
    first = _index(opts)
    assert not first.reused and first.kept is not None and first.kept.startswith(
        f"kept the index in {verdicts}.view-index (no index was kept in")
    again = _index(opts)
    assert again.reused and again.kept == (
        f"reused the index kept in {verdicts}.view-index (the files are those indexed: the "
        "same stat and xxh3-128)")
    _same(first, again)
    _same(build(opts), again)


def _rewrite_keeping_size_and_time(path: Path) -> None:
    """Change one byte of a verdict's rationale, then give the file its old time back."""
    info = path.stat()
    data = path.read_bytes()
    at = data.index(b'"rationale":"') + len(b'"rationale":"')
    changed = data[:at] + (b"X" if data[at:at + 1] != b"X" else b"Y") + data[at + 1:]
    path.write_bytes(changed)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == \
        (info.st_size, info.st_mtime_ns, info.st_ino)


def _append_a_verdict(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[0])
    record["case_id"] = "a-case-of-its-own"
    with open(path, "ab") as f:
        f.write(json.dumps(record).encode() + b"\n")


def _replace_by_a_copy(path: Path) -> None:
    copy = path.with_suffix(".copy")
    shutil.copy2(path, copy)  # the same bytes and time under another inode
    os.replace(copy, path)


@pytest.mark.parametrize(("change", "why"), [
    (_append_a_verdict, "its size"),
    (_rewrite_keeping_size_and_time, "its content, under the same size and time"),
    (_replace_by_a_copy, "its inode: another file under its name"),
])
@pytest.mark.parametrize("role", ["cases", "verdicts", "compare"])
def test_a_changed_file_is_never_read_with_the_old_index(
        files: tuple[Path, Path, Path], change: object, why: str, role: str) -> None:
    cases, verdicts, other = files
    opts = _opts(cases, verdicts, other)
    _index(opts)
    path = {"cases": cases, "verdicts": verdicts, "compare": other}[role]
    if role == "cases" and change is _rewrite_keeping_size_and_time:
        change = _rewrite_case
    change(path)  # type: ignore[operator]
    again = _index(opts)
    assert not again.reused
    assert again.kept is not None and f"({path} changed since its index was kept ({why}))" \
        in again.kept
    _same(build(opts), again)  # what the files now hold
    assert _index(opts).reused  # and kept again for the next run


def _rewrite_case(path: Path) -> None:
    info = path.stat()
    data = path.read_bytes()
    at = data.index(b'"input":"') + len(b'"input":"')
    path.write_bytes(data[:at] + (b"X" if data[at:at + 1] != b"X" else b"Y") + data[at + 1:])
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


@pytest.mark.parametrize("other", [{"by": "split"}, {"max_tokens": 100},
                                   {"max_output_tokens": 2_048},
                                   {"allow_unknown_fields": True}])
def test_other_options_index_again(files: tuple[Path, Path, Path],
                                   other: dict[str, object]) -> None:
    cases, verdicts, _ = files
    _index(_opts(cases, verdicts))
    again = _index(_opts(cases, verdicts, **other))
    assert not again.reused and again.kept is not None and \
        "was made from other files or options" in again.kept


def test_every_option_that_changes_the_index_is_in_its_key(tmp_path: Path) -> None:
    """Each field of ``Options`` but ``keep_index`` decides what the index holds (the paths,
    the budget that says which checks are over it, the group key, how lines are read); the
    rubric set is in the key by its hash. An option added to ``Options`` and left out of the
    key would let a kept index be reused under another value of it: this fails then."""
    base = Options(verdicts="v.jsonl", cases="c.jsonl")
    key = kept._options_key(base, "h")
    shards = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]  # several case files are read
    for shard in shards:
        shard.write_text("")
    for f in dataclasses.fields(Options):
        if f.name in ("keep_index", "rubrics"):
            continue
        value = getattr(base, f.name)
        other = (not value if isinstance(value, bool) else value + 1 if isinstance(value, int)
                 else [*value, *map(str, shards)] if isinstance(value, list)
                 else "other.jsonl" if value is None else f"{value}.x")
        assert kept._options_key(dataclasses.replace(base, **{f.name: other}), "h") != key, \
            f.name
    assert kept._options_key(base, "another rubric set") != key


def _split(cases: Path, parts: int = 3) -> list[Path]:
    """The cases cut into ``parts`` files beside them, in order (shard-0, shard-1, ...)."""
    lines = cases.read_text().splitlines(keepends=True)
    size = -(-len(lines) // parts)
    shards = [cases.parent / f"shard-{i}.jsonl" for i in range(parts)]
    for i, shard in enumerate(shards):
        shard.write_text("".join(lines[i * size:(i + 1) * size]))
    return shards


def test_several_case_files_are_each_stamped_and_in_the_key(
        files: tuple[Path, Path, Path]) -> None:
    """The merge of issue 30 with issue 31: view's cases read from several files (or a glob)
    and kept: every case file is stamped and named in the key, in order; a change to the
    second file alone indexes again, and the pages come from what the files now hold."""
    cases, verdicts, other = files
    shards = _split(cases)
    opts = dataclasses.replace(_opts(cases, verdicts, other),
                               cases=" ".join(map(str, shards)),
                               case_inputs=list(map(str, shards)))
    first = _index(opts)
    assert not first.reused
    stamped, _ = kept._parse(Path(kept.index_path(opts)).read_bytes())
    assert stamped is not None
    assert [s.path for s in stamped.files if s.role == "cases"] == \
        [os.path.abspath(s) for s in shards]
    assert json.loads(stamped.options)[0][:3] == \
        [["cases", os.path.abspath(s)] for s in shards]
    _same(build(opts), first)
    assert _index(opts).reused
    # The same files by a glob: the same files in the same order, so the same key.
    glob = dataclasses.replace(opts, cases=str(cases.parent / "shard-*.jsonl"),
                               case_inputs=[str(cases.parent / "shard-*.jsonl")])
    assert _index(glob).reused
    # Another order is another index (ids and offsets run on from file to file).
    turned = dataclasses.replace(opts, case_inputs=list(map(str, shards[::-1])))
    again = _index(turned)
    assert not again.reused and again.kept is not None and \
        "was made from other files or options" in again.kept
    _index(opts)
    _rewrite_case(shards[1])  # the second file only, under its old size and time
    changed = _index(opts)
    assert not changed.reused and changed.kept is not None and \
        f"({shards[1]} changed since its index was kept (its content, under the same size " \
        "and time))" in changed.kept
    _same(build(opts), changed)
    assert _index(opts).reused


@pytest.fixture
def stale_files(files: tuple[Path, Path, Path], tmp_path: Path) -> tuple[Path, Path, Path]:
    """The cases, a run with one verdict judged on another state than build makes today,
    and build's output of the cases (``--states``)."""
    cases, verdicts, _ = files
    states = tmp_path / "states.jsonl"
    build_states(BuildOptions(input=str(cases), output=str(states)))
    lines = verdicts.read_text().splitlines()
    record = json.loads(lines[0])
    record["state_hash"] = "1" * 32
    verdicts.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    return cases, verdicts, states


@pytest.mark.parametrize("with_states", [False, True])
def test_a_kept_index_holds_the_stale_verdicts(stale_files: tuple[Path, Path, Path],
                                              with_states: bool) -> None:
    """The run's stale codes (issue 25), found against the states rebuilt from the cases or
    read from ``--states``, are kept with the index and read back as they were."""
    cases, verdicts, states = stale_files
    opts = _opts(cases, verdicts, states=str(states) if with_states else None)
    first = _index(opts)
    again = _index(opts)
    assert again.reused and again.run.stale is not None
    assert int((again.run.stale == STATE).sum()) == 1
    _same(first, again)
    _same(build(opts), again)


def test_states_given_or_changed_index_again(stale_files: tuple[Path, Path, Path]) -> None:
    """``--states`` decides which verdicts are stale: an index kept without it is not reused
    with it, and a changed states file is never read with the old index."""
    cases, verdicts, states = stale_files
    _index(_opts(cases, verdicts))
    opts = _opts(cases, verdicts, states=str(states))
    again = _index(opts)
    assert not again.reused and again.kept is not None and \
        "was made from other files or options" in again.kept
    assert _index(opts).reused
    _append_a_verdict(states)
    changed = _index(opts)
    assert not changed.reused and changed.kept is not None and \
        f"({states} changed since its index was kept (its size))" in changed.kept
    _same(build(opts), changed)


def test_a_kept_index_holds_the_split_panels(tmp_path: Path, files: tuple[Path, Path, Path]) -> None:
    """A panel's split verdicts (issue 26: the "split panels" list) are kept with the index
    (format 4) and read back as they were: the same keys, pattern codes and patterns, the
    same list; a format-3 index (which had none) is indexed again."""
    from tests.view.test_panels import panel_file

    cases = files[0]
    verdicts, _ = panel_file(tmp_path)
    opts = _opts(cases, verdicts)
    first = _index(opts)
    again = _index(opts)
    assert again.reused and len(again.panels.keys) > 0 and again.panels.with_votes == 24
    _same(first, again)
    _same(build(opts), again)
    from evalstream._view.lists import Lists

    def split(index: kept.Index) -> list[tuple[int, int]]:
        found = Lists(index)["split"]
        return list(zip(found.keys.tolist(), found.kind.tolist(), strict=True))

    assert split(again) == split(first) and split(again)
    path = Path(f"{verdicts}.view-index")
    data = path.read_bytes()
    end = data.index(b"\n", len(kept.MAGIC))
    head = json.loads(data[len(kept.MAGIC):end])
    assert head["format"] == kept.FORMAT == 4
    assert {a["name"] for a in head["arrays"]} >= {"panels.keys", "panels.kinds"}
    head["format"] = 3  # an index kept before the split panels were: never used
    path.write_bytes(data[:len(kept.MAGIC)] + json.dumps(head).encode() + data[end:])
    older = _index(opts)
    assert not older.reused and older.kept is not None and \
        "is not an index this version of evalstream keeps" in older.kept
    _same(build(opts), older)


@pytest.mark.parametrize("damage", ["truncate", "flip", "foreign"])
def test_a_damaged_kept_index_is_not_used(files: tuple[Path, Path, Path], damage: str) -> None:
    cases, verdicts, other = files
    opts = _opts(cases, verdicts, other)
    _index(opts)
    path = Path(f"{verdicts}.view-index")
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[:len(data) // 2])
    elif damage == "flip":
        path.write_bytes(data[:-100] + bytes([data[-100] ^ 1]) + data[-99:])
    else:
        path.write_bytes(b"evalstream view index\n{\"format\": 99}\n")
    again = _index(opts)
    assert not again.reused and again.kept is not None and \
        "is not an index this version of evalstream keeps" in again.kept
    _same(build(opts), again)


def test_a_file_of_the_users_is_never_replaced_by_the_index(
        files: tuple[Path, Path, Path]) -> None:
    cases, verdicts, _ = files
    mine = Path(f"{verdicts}.view-index")
    mine.write_text("my notes\n")
    index = _index(_opts(cases, verdicts))
    assert mine.read_text() == "my notes\n"
    assert index.kept is not None and index.kept.startswith("could not keep the index (") \
        and "give --force" in index.kept


@pytest.mark.slow
def test_the_pages_of_a_reused_index_are_the_pages_of_a_fresh_one(
        tmp_path: Path, files: tuple[Path, Path, Path],
        capsys: pytest.CaptureFixture[str]) -> None:
    cases, verdicts, other = files
    trees = []
    for name in ("fresh", "reused"):
        folder = tmp_path / name
        assert main(["view", str(verdicts), "--cases", str(cases), "--compare", str(other),
                     "--keep-index", "--export", str(folder)]) == 0
        said = capsys.readouterr().err
        assert ("view: reused the index kept in" in said) == (name == "reused"), said
        trees.append({n: d for n, d in tree(folder).items() if n != "evalstream-view.json"})
    assert trees[0] == trees[1] and len(trees[0]) > 100
