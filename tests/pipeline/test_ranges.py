"""--workers N: byte-identical output, rejects and report for any N, duplicates exact."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from evalstream.pipeline import ranges as parallel
from evalstream.pipeline.run import Options, run
from tests.helpers import SAMPLES


def dataset(tmp_path: Path) -> Path:
    """Samples, bad lines and repeats, shuffled deterministically, long enough for many ranges."""
    good = (SAMPLES / "cases.jsonl").read_text().splitlines()
    bad = (SAMPLES / "bad.jsonl").read_bytes().split(b"\n")
    rng = random.Random(7)
    lines: list[bytes] = []
    for n in range(40):
        for line in good:
            lines.append(line.replace('"id":"case-', f'"id":"r{n}-case-').encode())
    lines += [b for b in bad if b] + [good[3].encode(), good[16].encode()]  # duplicates
    lines += [line.replace(b'"id":"r', b'"id":"r') for line in rng.sample(lines[:500], 30)]
    rng.shuffle(lines)
    lines.append(b'{"id":"r0-case-01","input":"last line, no newline","output":"x"}')
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b"\n".join(lines))
    return path


@pytest.mark.parametrize("workers", [2, 3])
def test_workers_give_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     workers: int) -> None:
    monkeypatch.setattr(parallel, "RANGE_BYTES", 8192)  # many ranges, lines crossing bounds
    src = dataset(tmp_path)
    one, _ = run(Options(input=str(src), output=str(tmp_path / "one.jsonl"), max_tokens=500))
    many, first = run(Options(input=str(src), output=str(tmp_path / "many.jsonl"),
                              max_tokens=500, workers=workers))
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "many.jsonl").read_bytes()
    assert ((tmp_path / "one.rejects.jsonl").read_bytes()
            == (tmp_path / "many.rejects.jsonl").read_bytes())
    strip = {"seconds", "output", "rejects", "report"}
    a = {k: v for k, v in json.loads((tmp_path / "one.report.json").read_text()).items()
         if k not in strip}
    b = {k: v for k, v in json.loads((tmp_path / "many.report.json").read_text()).items()
         if k not in strip}
    assert a == b
    c = one.counts
    assert c.lines == c.blank + c.cases + c.rejected
    assert one.rejected_by_kind["duplicate id"] > 30
    assert one.over_budget  # the budget is tight enough that some checks are skipped
    assert [r.line for r in first] == sorted(r.line for r in first)
    assert not list(tmp_path.glob(".evalstream-parts-*"))  # part files cleaned up


def test_small_or_compressed_inputs_run_in_one_process(tmp_path: Path) -> None:
    assert not parallel.worthwhile(Options(input="x.jsonl.gz", output="o", workers=2), 1 << 30)
    assert not parallel.worthwhile(Options(input="-", output="o", workers=2), None)
    assert not parallel.worthwhile(Options(input="x.jsonl", output="o", workers=2), 1000)
    assert parallel.worthwhile(Options(input="x.jsonl", output="o", workers=2), 1 << 30)
