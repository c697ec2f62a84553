"""The ranged engine with a command of its own (not build's, not stats'): what one process
reading the file in order finds, for any range size and number of workers (late duplicates
rejected and left out, lines renumbered, rejects in order, a range read again without its
late duplicates)."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest

from evalstream._cases.ids import CaseLog
from evalstream._cases.reading import FIRST_REJECTS_KEPT, Record, case_reader
from evalstream._cases.rejects import Reject
from evalstream._checks.checker import Checker
from evalstream._engines import local
from evalstream._engines import ranges as engine
from evalstream._files.lines import read_chunks
from evalstream._files.outputs import escape_line_breaks
from tests.helpers import SAMPLES


@dataclass
class Ids:
    """A command that makes, of each range, the list of its case ids with their lines."""

    allow_unknown_fields: bool = False
    max_line_bytes: int = 1 << 20

    def checker(self) -> Checker | None:
        return None

    def read(self, records: Iterator[Record[Any] | Reject], checker: Checker | None,
             reject: Callable[[bytes], object], log: CaseLog,
             files: engine.PartFiles) -> list[tuple[int, str]]:
        encode = msgspec.json.Encoder().encode
        ids = []
        for item in records:
            if type(item) is Reject:
                reject(encode(item) + b"\n")
                continue
            line, offset, _, case = item  # type: ignore[misc]
            log.add(case.id, line, offset, 0)
            ids.append((line, case.id))
        return ids


@dataclass
class Collect:
    """Joins the parts' ids in order, the late duplicates left out, checking that a range
    read again without them gives the same ids."""

    ids: list[tuple[int, str]] = field(default_factory=list)
    read_again: int = 0

    def arrived(self, part: engine.Part[list[tuple[int, str]]]) -> None:
        return None

    def take(self, part: engine.Part[list[tuple[int, str]]], late: list[engine.Late],
             merger: engine.Merger[list[tuple[int, str]]]) -> None:
        skip = {d.line for d, _, _ in late}
        assert {case.id for _, _, case in late} <= {i for _, i in part.made}
        kept = [(line, i) for line, i in part.made if line not in skip]
        if late:
            again = [(line, case.id) for line, _, _, case in merger.again(part, skip)]
            assert again == kept
            self.read_again += 1
        base = merger.lines.lines
        self.ids += [(line + base, i) for line, i in kept]


def _one_process(path: Path) -> tuple[list[tuple[int, str]], bytes, Any, list[Reject]]:
    reader = case_reader()
    ids, rejects = [], []
    with open(path, "rb") as f:
        for item in reader.read(read_chunks(f)):
            if type(item) is Reject:
                rejects.append(escape_line_breaks(msgspec.json.encode(item)) + b"\n")
            else:
                ids.append((item[0], item[3].id))  # type: ignore[index]
    return ids, b"".join(rejects), reader.counts, reader.first_rejects


def _dataset(tmp_path: Path) -> Path:
    good = (SAMPLES / "cases.jsonl").read_bytes().splitlines()
    bad = [line for line in (SAMPLES / "bad.jsonl").read_bytes().splitlines() if line]
    lines = []
    for n in range(6):
        lines += [line.replace(b'"id":"', b'"id":"r%d-' % n, 1) for line in good]
        lines += bad + [b""]
        lines += [line.replace(b'"id":"', b'"id":"r0-', 1) for line in good[n::5]]  # late
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize("range_size, workers", [(2_000, 2), (7_000, 3)])
def test_the_parts_add_up_to_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         range_size: int, workers: int) -> None:
    monkeypatch.setattr(engine, "range_bytes", lambda size, workers: range_size)
    monkeypatch.setattr(local, "start_method", lambda: "fork")
    path = _dataset(tmp_path)
    ids, rejects, counts, first = _one_process(path)
    assert counts.rejected_by_kind["duplicate id"] >= 6 and len(first) == FIRST_REJECTS_KEPT
    collect, out = Collect(), io.BytesIO()
    merged = engine.on_workers(Ids(), collect, path=str(path), size=path.stat().st_size,
                               workers=workers, where=(str(tmp_path), "parts-", ""),
                               counts_checks=False, rejects_out=out)
    assert collect.ids == ids
    assert out.getvalue() == rejects
    assert merged.lines == counts and merged.checks is None
    assert merged.first_rejects == first
    assert collect.read_again >= 2  # late duplicates in several ranges
    assert merged.bytes == path.stat().st_size and not merged.stopped
    assert not list(tmp_path.glob("parts-*"))  # the part files are gone


def test_a_part_file_written_over_a_spare_holds_only_its_own_bytes(tmp_path: Path) -> None:
    spares = engine.Spares(str(tmp_path), most=2)
    for n, size in enumerate((3 << 20, 2 << 20, 1 << 20, 10)):
        (tmp_path / f"{n}.out").write_bytes(b"x" * size)
        spares.add(str(tmp_path / f"{n}.out"))
    # two kept (at most two), the third removed; a small one is never kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spare-00000000", "spare-00000001"]
    claimed = []
    for n, data in enumerate([b"short\n", b"y" * (4 << 20), b"fresh\n"]):
        part = engine._LocalPart(str(tmp_path / f"p{n}.out"))
        claimed.append(sorted(p.name for p in tmp_path.glob("spare-*")))
        part.write_all([data[:3], data[3:]])
        assert part.commit() == len(data)
        assert (tmp_path / f"p{n}.out").read_bytes() == data
    # the first two took the spares, the third found none and made a new file
    assert claimed == [["spare-00000001"], [], []] or claimed == [["spare-00000000"], [], []]
    # a rejects part file never takes a spare (it would free the spare's pages at once)
    (tmp_path / "r.out").write_bytes(b"z" * (2 << 20))
    spares.add(str(tmp_path / "r.out"))
    files = engine.PartFiles(str(tmp_path), 9, local=True)
    rejects = files.open(engine.REJECTS)
    assert rejects is not None and len(list(tmp_path.glob("spare-*"))) == 1
    files.abort()
