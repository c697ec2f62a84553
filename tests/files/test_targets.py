"""``check_targets``: no target is an input, no two targets are one file or one stream,
whatever the spelling of the paths, for files that exist and files still to be created."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._files.outputs import check_targets
from evalstream.errors import UsageError

# Spellings of three places, relative to a folder holding `real/` (with `real/old.jsonl`),
# `link -> real`, `real/alias.jsonl -> old.jsonl` and `hard.jsonl`, a hard link to the old file.
SPELLINGS = {
    "old": ["real/old.jsonl", "./real/old.jsonl", "link/old.jsonl", "real/../real/old.jsonl",
            "real/alias.jsonl", "link/alias.jsonl", "hard.jsonl", "{abs}/real/old.jsonl"],
    "new": ["real/new.jsonl", "link/new.jsonl", "./link/../real/new.jsonl",
            "link/./new.jsonl", "{abs}/link/new.jsonl"],
    "other": ["real/other.jsonl", "link/other.jsonl", "./real/other.jsonl"],
    "top": ["top.jsonl", "./top.jsonl", "real/../top.jsonl", "link/../top.jsonl"],
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("targets")
    (root / "real").mkdir()
    (root / "real" / "old.jsonl").write_text("{}\n")
    (root / "link").symlink_to("real")
    (root / "real" / "alias.jsonl").symlink_to("old.jsonl")
    os.link(root / "real" / "old.jsonl", root / "hard.jsonl")
    return root


def _spell(tree: Path, path: str) -> str:
    # Joined as text: pathlib would tidy `./` away.
    return path.format(abs=tree) if path.startswith("{abs}") else os.path.join(str(tree), path)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(SPELLINGS)), st.sampled_from(sorted(SPELLINGS)), st.data())
def test_two_targets_collide_exactly_when_they_name_one_file(
        tree: Path, place_a: str, place_b: str, data: st.DataObject) -> None:
    a = _spell(tree, data.draw(st.sampled_from(SPELLINGS[place_a])))
    b = _spell(tree, data.draw(st.sampled_from(SPELLINGS[place_b])))
    if place_a == place_b:
        with pytest.raises(UsageError, match="the rejects and report paths are the same file"):
            check_targets([], [("rejects", a), ("report", b)])
        with pytest.raises(UsageError, match="the input and report paths are the same file.*"
                                             "replace its own input"):
            check_targets([("input", a)], [("report", b)])
    else:
        check_targets([("input", a)], [("report", b)])
        check_targets([], [("rejects", a), ("report", b)])
    assert sorted(p.name for p in (tree / "real").iterdir()) == ["alias.jsonl", "old.jsonl"]


def test_an_input_may_be_read_twice(tree: Path) -> None:
    check_targets([("run-a", str(tree / "real/old.jsonl")), ("run-b", str(tree / "hard.jsonl"))],
                  [("output", str(tree / "out.json"))])


@pytest.mark.parametrize("other", ["-", "/dev/stdout", "/proc/self/fd/1", "/dev/fd/1"])
def test_stdout_takes_one_target(other: str) -> None:
    with pytest.raises(UsageError, match=r"the output and the rejects cannot both go to "
                                         r"stdout|the output and rejects paths are the same"):
        check_targets([], [("output", "-"), ("rejects", other)])


def test_stdout_redirected_to_a_file_is_that_file(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    saved = os.dup(1)
    try:
        with open(target, "wb") as f:
            os.dup2(f.fileno(), 1)
        with pytest.raises(UsageError, match="cannot both go to stdout"):
            check_targets([], [("output", "-"), ("rejects", str(target))])
        with pytest.raises(UsageError, match="the input and output paths are the same file"):
            check_targets([("input", str(target))], [("output", "-")])
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def test_dev_null_takes_any_number_of_targets() -> None:
    check_targets([("input", "/dev/null")],
                  [("output", "/dev/null"), ("rejects", "/dev/null"), ("report", os.devnull)])


def test_stdin_is_not_a_place_and_none_is_skipped() -> None:
    check_targets([("input", "-")], [("output", "-"), ("rejects", None), ("report", None)])
