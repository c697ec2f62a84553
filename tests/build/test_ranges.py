"""--workers N: byte-identical output, rejects and report for any N, duplicates exact."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from evalstream._build import ranges
from evalstream._build.run import Options, run
from evalstream._engines import ranges as engine
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


@pytest.mark.slow
@pytest.mark.parametrize("workers", [2, 3])
def test_workers_give_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     workers: int, worker_runs: list[str]) -> None:
    # many ranges, lines crossing bounds
    monkeypatch.setattr(engine, "range_bytes", lambda size, workers: 8192)
    # every part file kept as a spare: parts written over longer and shorter ones
    monkeypatch.setattr(engine, "MIN_SPARE", 0)
    src = dataset(tmp_path)
    one, _ = run(Options(input=str(src), output=str(tmp_path / "one.jsonl"), max_tokens=500))
    many, first = run(Options(input=str(src), output=str(tmp_path / "many.jsonl"),
                              max_tokens=500, workers=workers))
    assert len(worker_runs) == 1  # the second run, over worker processes
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
    assert not list(tmp_path.glob(".*evalstream-parts*"))  # part files cleaned up


def test_small_or_compressed_inputs_run_in_one_process(tmp_path: Path) -> None:
    assert not ranges.worthwhile(Options(input="x.jsonl.gz", output="o", workers=2), 1 << 30)
    assert not ranges.worthwhile(Options(input="-", output="o", workers=2), None)
    assert not ranges.worthwhile(Options(input="x.jsonl", output="o", workers=2), 1000)
    assert ranges.worthwhile(Options(input="x.jsonl", output="o", workers=2), 1 << 30)


@pytest.mark.slow  # about a second: three builds of 2,800 cases, two over workers
def test_duplicates_filling_a_workers_over_budget_list(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       worker_runs: list[str]) -> None:
    # Every check is over budget. The second range starts with 1,200 late duplicates: its
    # worker's list of 1,000 is all duplicates, so once they are dropped the checks after
    # them must still be listed, up to 1,000 in all, as with one process.
    monkeypatch.setattr(engine, "range_bytes", lambda size, workers: 60_000)
    rubric = tmp_path / "r.toml"
    rubric.write_text('[[rubric]]\nid = "r"\nquestion = "Q?"\nshows = ["user_input"]\n')

    def case(i: int, text: str = "x") -> str:
        return json.dumps({"id": f"c{i}", "input": text * 10, "output": "y"})

    lines = [case(i) for i in range(700)] + [case(i % 700, "d") for i in range(1_200)] + \
        [case(700 + i) for i in range(900)]
    src = tmp_path / "cases.jsonl"
    src.write_text("\n".join(lines) + "\n")
    reports = {}
    for workers in (1, 2, 3):
        report, _ = run(Options(input=str(src), output=str(tmp_path / f"o{workers}.jsonl"),
                                rubric_files=[str(rubric)], max_tokens=5, workers=workers))
        reports[workers] = json.loads((tmp_path / f"o{workers}.report.json").read_text())
        for key in ("seconds", "output", "rejects", "report"):
            reports[workers].pop(key, None)
    assert len(worker_runs) == 2  # workers 2 and 3
    listed = reports[1]["over_budget"]
    assert len(listed) == 1_000
    assert [o["line"] for o in listed] == [*range(1, 701), *range(1_901, 2_201)]
    assert reports[2] == reports[1] and reports[3] == reports[1]


def test_a_when_key_seen_only_in_late_duplicates_is_still_warned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker_runs: list[str]) -> None:
    monkeypatch.setattr(engine, "range_bytes", lambda size, workers: 4_000)
    rubric = tmp_path / "r.toml"
    rubric.write_text('[[rubric]]\nid = "r"\nquestion = "Q?"\nshows = ["user_input"]\n'
                      'when = { lang = "fr" }\n')
    lines = [json.dumps({"id": f"c{i}", "input": "x", "output": "y"}) for i in range(300)]
    lines += [json.dumps({"id": f"c{i}", "input": "x", "output": "y",
                          "metadata": {"lang": "fr"}}) for i in range(300)]  # duplicates
    src = tmp_path / "cases.jsonl"
    src.write_text("\n".join(lines) + "\n")
    warning = ("no case has metadata key `lang`, named by a `when` rule: the rubrics that use "
               "it never apply.")  # (and how to see the keys the cases have)
    for workers in (1, 2):
        report, _ = run(Options(input=str(src), output=str(tmp_path / f"o{workers}.jsonl"),
                                rubric_files=[str(rubric)], workers=workers))
        assert report.counts.rejected == 300
        assert len(report.warnings) == 1 and report.warnings[0].startswith(warning), workers
    assert len(worker_runs) == 1


def test_ranges_give_every_worker_several_tasks() -> None:
    """A skewed file (the corpus: its tau-bench cases fill one 16 MiB range of 35 MB) keeps
    every worker busy only with several tasks a worker: ranges of a MiB up to 16 MiB."""
    from evalstream._engines.local import MAX_RANGE, MIN_RANGE, range_bytes

    mb = 1 << 20
    assert range_bytes(35 * mb, 2) == -(-35 * mb // 16)  # 16 tasks for 2 workers
    assert range_bytes(1 << 30, 2) == MAX_RANGE  # large files: 16 MiB ranges
    assert range_bytes(20 * mb, 8) == MIN_RANGE  # never below a MiB
    for size in (17 * mb, 35 * mb, 300 * mb, 5 << 30):
        for workers in (2, 3, 8):
            r = range_bytes(size, workers)
            assert MIN_RANGE <= r <= MAX_RANGE
            tasks = -(-size // r)
            assert tasks >= min(2 * workers, size // MIN_RANGE)


def test_forked_workers_share_the_tokenizer_of_exact_counts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker_runs: list[str],
        tokenizer_loads: Path) -> None:
    """--exact-tokens counts every state, as stats does: the parent loads the tokenizer once,
    before forking the workers, which share it."""
    import os

    from evalstream._engines import local

    monkeypatch.setattr(local, "start_method", lambda: "fork")
    monkeypatch.setattr(engine, "range_bytes", lambda size, workers: 3_000)
    src = SAMPLES / "cases.jsonl"
    run(Options(input=str(src), output=str(tmp_path / "many.jsonl"), exact_tokens=True,
                workers=2))
    assert len(worker_runs) == 1
    assert tokenizer_loads.read_text().split() == [str(os.getpid())]
    run(Options(input=str(src), output=str(tmp_path / "one.jsonl"), exact_tokens=True))
    assert (tmp_path / "many.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
