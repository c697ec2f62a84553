"""Peer corpora: every JSONTestSuite file, and the real datasets of /work/shared/corpus.

JSONTestSuite (nst/JSONTestSuite) holds y_ files every parser must accept, n_ files every
parser must refuse and i_ files where parsers may differ. None is a case, so every y_ line
is a well-formed JSON value that is not a case, every n_ line is malformed JSON, and no
file may crash evalstream or produce a message a person cannot act on.
"""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest

from evalstream._build.run import Options, run

from .support import (
    CORPUS,
    JSONTESTSUITE,
    assert_actionable,
    assert_counts_add_up,
    cli,
    run_on,
    run_or_diagnosis,
)

pytestmark = pytest.mark.slow  # see pyproject.toml: `-m "not slow"` skips it

SUITE = sorted(JSONTESTSUITE.glob("*.json")) if JSONTESTSUITE.is_dir() else []
DATASETS = sorted(CORPUS.glob("*.jsonl")) if CORPUS.is_dir() else []
needs_suite = pytest.mark.skipif(not SUITE, reason=f"JSONTestSuite not found in {JSONTESTSUITE}")
needs_corpus = pytest.mark.skipif(not DATASETS, reason=f"no corpus in {CORPUS}")

# The beginnings of the sentences validate.py writes for a line that is not JSON at all.
MALFORMED = ("The line is not valid JSON", "The JSON ends before", "Unexpected text after",
             "The line is not valid UTF-8", "A string holds a lone UTF-16 surrogate",
             "The line starts with a UTF-8 byte order mark", "The line holds a raw control",
             "The line looks like UTF-16", "The JSON is nested too deeply", "The value ")


def _is_malformed_message(error: str) -> bool:
    return error.startswith(MALFORMED)


def _as_one_line(data: bytes) -> bytes:
    # A raw LF in a JSON text is whitespace or (n_ files) a control character inside a
    # string; CR is the same in both places, so the file keeps its meaning on one line.
    return data.replace(b"\n", b"\r")


@needs_suite
@pytest.mark.parametrize("build", [False, True], ids=["validate", "build"])
def test_jsontestsuite_each_file_as_one_line(tmp_path: Path, build: bool) -> None:
    texts = [_as_one_line(p.read_bytes()) for p in SUITE]
    # A valid case between suite lines shows that nothing leaks from one line to the next.
    good = [b'{"id":"good-%d","input":"x","output":"y","policy":"p"}' % i
            for i in range(len(texts))]
    data = b"\n".join(line for pair in zip(texts, good, strict=True) for line in pair) + b"\n"
    result = run_on(tmp_path, data, build=build)
    assert_counts_add_up(result.report)
    assert result.report.counts.lines == 2 * len(SUITE)
    assert result.report.counts.cases == len(SUITE)
    by_line = {r["line"]: r for r in result.rejects}
    for n, path in enumerate(SUITE):
        line_no, text = 2 * n + 1, texts[n]
        reject = by_line.get(line_no)
        if not text.strip(b" \t\r"):  # n_single_space, n_structure_no_data
            assert reject is None
            continue
        assert reject is not None, f"{path.name} was accepted"
        assert_actionable(reject)
        if path.name.startswith("n_"):
            assert _is_malformed_message(reject["error"]), (path.name, reject["error"])
        elif path.name.startswith("y_"):
            assert not _is_malformed_message(reject["error"]), (path.name, reject["error"])
    assert sorted(r["line"] for r in result.rejects if r["line"] % 2 == 0) == []
    if build:
        # Every valid case got its checks (policy-compliance and escalation apply).
        assert {r["case_id"] for r in result.records} == {f"good-{i}" for i in range(len(SUITE))}


@needs_suite
@pytest.mark.parametrize("path", SUITE, ids=[p.name for p in SUITE])
def test_jsontestsuite_each_file_as_a_whole_dataset(tmp_path: Path, path: Path) -> None:
    data = path.read_bytes()
    for build in (False, True):
        result = run_or_diagnosis(tmp_path, data, build=build)
        if result is None:
            continue  # plainly a JSON array, a bare value, a document: one sentence, exit 4
        assert_counts_add_up(result.report)
        assert result.report.counts.cases == 0  # no suite file is a case
        for reject in result.rejects:
            assert_actionable(reject)
        if path.name.startswith("n_") and data.removeprefix(b"\xef\xbb\xbf").strip():
            assert result.report.counts.rejected >= 1
            assert any(_is_malformed_message(r["error"]) for r in result.rejects)
        assert result.records == []


@needs_corpus
def test_real_datasets_build_and_counts_add_up(tmp_path: Path) -> None:
    total = 0
    for dataset in DATASETS:
        out = tmp_path / f"{dataset.stem}.states.jsonl"
        report, _ = run(Options(input=str(dataset), output=str(out)))
        assert_counts_add_up(report)
        lines = _count_lines(dataset)
        assert report.counts.lines == lines
        assert report.counts.rejected == 0, dataset.name
        records = out.read_bytes().splitlines()
        assert len(records) == report.counts.checks == sum(report.checks_by_rubric.values())
        total += report.counts.cases
    assert total == sum(map(_count_lines, DATASETS))


def _count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def _damage(line: bytes, rng: random.Random) -> bytes:
    """One realistic kind of damage to a real case line."""
    kind = rng.randrange(8)
    if kind == 0:  # cut short (a partial write)
        return line[: rng.randrange(1, len(line))]
    if kind == 1:  # one bit flipped
        at = rng.randrange(len(line))
        return line[:at] + bytes([line[at] ^ (1 << rng.randrange(8))]) + line[at + 1:]
    if kind == 2:  # two lines glued together
        return line + line[: rng.randrange(1, len(line))]
    if kind == 3:  # a field renamed by a script
        return line.replace(b'"toolEvents"', b'"tool_events"').replace(b'"input"', b'"prompt"', 1)
    if kind == 4:  # a Python repr instead of JSON
        return line.replace(b"null", b"None").replace(b"true", b"True").replace(b'"', b"'")
    if kind == 5:  # a lone surrogate escape in the middle of a string
        at = line.find(b'"input":"') + 9
        return line[:at] + b"\\ud83d" + line[at:]
    if kind == 6:  # a stray NUL byte
        at = rng.randrange(len(line))
        return line[:at] + b"\x00" + line[at:]
    return b"\xef\xbb\xbf" + line  # a BOM from concatenated files


@needs_corpus
def test_damaged_real_cases_get_messages_a_person_can_act_on(tmp_path: Path) -> None:
    rng = random.Random(5)
    lines: list[bytes] = []
    for dataset in DATASETS:
        with dataset.open("rb") as f:
            lines += [f.readline().rstrip(b"\n") for _ in range(60)]
    damaged = [_damage(line, rng) for line in lines]
    result = run_on(tmp_path, b"\n".join(damaged) + b"\n", build=False)
    assert_counts_add_up(result.report)
    assert result.report.counts.lines == len(damaged)
    for reject in result.rejects:
        assert_actionable(reject)
    # A bit flip can leave a line valid (a letter's case in a text), nothing else can.
    assert result.report.counts.rejected >= len(damaged) * 0.75


@needs_corpus
@pytest.mark.skipif(importlib.util.find_spec("evalstream._cli.stats") is None,
                    reason="evalstream/stats_cli.py is not written yet")
def test_stats_over_the_real_datasets(tmp_path: Path) -> None:
    for dataset in DATASETS:
        out = tmp_path / f"{dataset.stem}.stats.json"
        done = cli("stats", str(dataset), "--format", "json", "-o", str(out), cwd=tmp_path)
        assert done.returncode == 0, done.stderr.decode()
        overview = json.loads(out.read_text())["overview"]
        lines = _count_lines(dataset)
        assert overview["lines"] == lines == overview["cases"] + overview["rejected"] + \
            overview["blank"]
