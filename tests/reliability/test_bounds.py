"""Resource bounds: huge lines, deep nesting, the largest fields the caps allow.

Memory is measured on a child process (``ru_maxrss`` from ``wait4``), so the figures are
the peak of one evalstream run, not of the test runner.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from evalstream._build.run import Options, run
from evalstream._cases import schema
from evalstream._checks import encodings, tokens

from .support import ROOT, assert_actionable, assert_counts_add_up, cli_env, run_on

pytestmark = pytest.mark.slow  # see pyproject.toml: `-m "not slow"` skips it

MiB = 1 << 20


# Runs its arguments as a child and prints the child's peak RSS. Measuring through this
# small process matters: Linux carries a process's peak RSS across fork and exec, so a child
# forked straight from the (large) test runner would report the runner's peak.
_MEASURE = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
            "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
            "file=sys.stderr); sys.exit(code)")


def _run_measured(args: list[str], cwd: Path, feed: Any = None) -> tuple[int, int]:
    """Run ``python -m evalstream ARGS``; return (exit code, peak RSS in MiB).

    ``feed`` is a generator of byte blocks written to the child's stdin from a thread.
    """
    proc = subprocess.Popen([sys.executable, "-c", _MEASURE, sys.executable, "-m", "evalstream",
                             *args], cwd=cwd, env=cli_env(),
                            stdin=subprocess.PIPE if feed else subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    writer = None
    if feed is not None:
        assert proc.stdin is not None
        stdin = proc.stdin

        def pump() -> None:
            with stdin:
                for block in feed:
                    stdin.write(block)

        writer = threading.Thread(target=pump)
        writer.start()
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.stderr.close()
    code = proc.wait(timeout=300)
    if writer is not None:
        writer.join()
    assert "Traceback" not in err, err
    peak_kib = int(err.rsplit("PEAK ", 1)[1].split()[0])
    return code, peak_kib // 1024


HEAD, TAIL = b'{"id":"huge","input":"', b'","output":"y"}'
GIB_LINE = len(HEAD) + 1024 * MiB + len(TAIL)


def _gib_line() -> Any:
    yield HEAD
    block = b"a" * MiB
    for _ in range(1024):
        yield block
    yield TAIL + b'\n{"id":"after","input":"x","output":"y"}\n'


@pytest.mark.parametrize(("limit", "max_rss_mib"), [("16MiB", 120), ("256MiB", 400)])
def test_a_1_gib_line_is_rejected_without_being_held(tmp_path: Path, limit: str,
                                                     max_rss_mib: int) -> None:
    # Measured here: 50 MiB peak with a 16 MiB limit, 290 MiB with the default 256 MiB
    # (a line is held up to the limit, never beyond it).
    code, rss = _run_measured(["validate", "-", "--rejects", "r.jsonl", "--report", "r.json",
                               "--max-line-bytes", limit, "-q"], tmp_path, _gib_line())
    assert code == 1
    assert rss < max_rss_mib, f"peak RSS {rss} MiB"
    rejects = (tmp_path / "r.jsonl").read_text().splitlines()
    assert len(rejects) == 1 and '"line":1,' in rejects[0]
    assert f"The line is {GIB_LINE:,} bytes, over the limit" in rejects[0]
    assert '"lines": 2' in (tmp_path / "r.json").read_text()


def test_500_messages_of_200000_characters(tmp_path: Path) -> None:
    content = "a" * schema.MAX_TEXT_CHARS
    messages = ",".join(f'{{"id":"m{i}","role":"user","content":"{content}"}}' for i in range(500))
    src = tmp_path / "many.jsonl"
    src.write_text(f'{{"id":"many","input":"x","output":"y","messages":[{messages}]}}\n')
    size_mib = src.stat().st_size / MiB  # 95 MiB on one line
    code, rss = _run_measured(["validate", str(src), "-q"], tmp_path)
    # Measured here: 229 MiB peak for a 95 MiB line (the line, its decoded strings, ~35 MiB
    # of interpreter and libraries).
    assert code == 0
    assert rss < 3 * size_mib + 80, f"peak RSS {rss} MiB"


def test_a_200000_character_field_of_4_byte_characters(tmp_path: Path) -> None:
    text = "\U0001F600" * schema.MAX_TEXT_CHARS  # 800,000 bytes
    lines = [b'{"id":"wide","input":"%s","output":"y"}' % text.encode(),
             b'{"id":"wider","input":"%sx","output":"y"}' % text.encode()]
    result = run_on(tmp_path, b"\n".join(lines) + b"\n",
                    rubric_files=[str(_write(tmp_path / "r.toml", RUBRIC))])
    assert [(r["line"], r["path"]) for r in result.rejects] == [(2, "$.input")]
    assert result.report.counts.cases == 1
    # 800 kB of state is over the default budget: counted, never cut.
    assert result.report.skipped == {"input-only": {"over budget": 1}}
    assert result.report.over_budget[0].tokens > tokens.DEFAULT_BUDGET


RUBRIC = '[[rubric]]\nid = "input-only"\nquestion = "Q?"\nshows = ["user_input"]\n'


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("opening", [b"[", b'{"a":', b'[{"b":'])
@pytest.mark.parametrize("depth", [5_000, 200_000])
def test_deep_nesting_is_a_reject(tmp_path: Path, opening: bytes, depth: int) -> None:
    closing = {b"[": b"]", b'{"a":': b"}", b'[{"b":': b"}]"}[opening]
    deep = opening * depth + b"1" + closing * depth
    # A valid case first: a file that opens with a deep array is plainly a JSON array
    # (exit 4, tested in test_any_bytes); here each deep line must be its own reject.
    lines = [b'{"id":"ok","input":"x","output":"y"}', deep,
             b'{"id":"m","input":"x","output":"y","metadata":{"k":' + deep + b"}}",
             b'{"id":"s","input":"\\ud800","output":"y","metadata":{"k":' + deep + b"}}",
             b'{"id":"n","input":"x","output":NaN,"metadata":{"k":' + deep + b"}}"]
    result = run_on(tmp_path, b"\n".join(lines) + b"\n", build=False)
    assert_counts_add_up(result.report)
    assert [r["line"] for r in result.rejects] == [2, 3, 4, 5]
    for reject in result.rejects:
        assert_actionable(reject)


def test_nesting_near_the_parser_limit_is_read_or_rejected_never_a_crash(tmp_path: Path) -> None:
    # Around msgspec's limit a value may decode and then be re-read by the lenient parser
    # that finds the field of a lone surrogate: that path must not overflow either.
    lines = []
    for depth in range(960, 1_010, 5):
        nest = b"[" * depth + b"]" * depth
        lines.append(b'{"id":"d%d","input":"\\udc00","output":"y","toolEvents":[{"id":"t",'
                     b'"name":"n","status":"success","input":%s}]}' % (depth, nest))
        lines.append(b'{"id":"e%d","input":"x","output":"y","toolEvents":[{"id":"t",'
                     b'"name":"n","status":"success","input":%s}]}' % (depth, nest))
    result = run_on(tmp_path, b"\n".join(lines) + b"\n")
    assert_counts_add_up(result.report)
    assert {r["line"] for r in result.rejects} >= set(range(1, len(lines) + 1, 2))
    for reject in result.rejects:
        assert_actionable(reject)


def _tokenized_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str,
                     budget: int) -> list[int]:
    """Build one case whose input is ``text``; return the size of every text tokenized."""
    counted: list[int] = []
    pieces = tokens.PieceCounts(encodings.tokenizer("o200k_base"))
    real_count = pieces.count_text

    def count(piece: str) -> int:
        counted.append(len(piece.encode()))
        return real_count(piece)

    pieces.count_text = count
    monkeypatch.setattr(tokens, "piece_counts", lambda name: pieces)
    src = tmp_path / "in.jsonl"
    src.write_text('{"id":"far","input":"%s","output":"y"}\n' % text)
    report, _ = run(Options(input=str(src), output=str(tmp_path / "out.jsonl"),
                            rubric_files=[str(_write(tmp_path / "r.toml", RUBRIC))],
                            max_tokens=budget))
    assert report.skipped == {"input-only": {"over budget": 1}}
    return counted


def test_states_far_over_budget_stop_being_tokenized(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    counted = _tokenized_sizes(tmp_path, monkeypatch, "word " * 40_000, 1_000)
    assert sum(counted) <= 128 * 1_000 + (64 << 10)


@pytest.mark.parametrize("text", ["\u5b57" * 200_000, "a" * 200_000, "\U0001F600" * 200_000],
                         ids=["cjk", "one-run", "emoji"])
def test_states_far_over_budget_are_not_tokenized_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    counted = _tokenized_sizes(tmp_path, monkeypatch, text, 1_000)
    assert sum(counted) <= 128 * 1_000 + (64 << 10)


def test_repo_root_is_importable_by_children() -> None:
    # The measured runs above use the checkout, not an installed copy.
    assert (ROOT / "evalstream" / "__init__.py").is_file()


# -- work that data alone must not make unbounded (issue 14) ----------------------------------
def _labels_file(path: Path, cases: int, per_case: int = 500) -> None:
    """Cases each labelled for ``per_case`` rubric ids no other case names."""
    label = {"status": "pass", "source": "human"}
    with open(path, "w") as f:
        for i in range(cases):
            f.write(json.dumps({"id": f"c{i}", "input": "q", "output": "a", "expected": {
                f"r{i}-{j}": label for j in range(per_case)}}) + "\n")


def test_many_distinct_rubric_ids_in_stats_stay_bounded(tmp_path: Path) -> None:
    # 100,000 distinct rubric ids (12 MB): 1.2 GB and 9 s before the cap (6 KB an id).
    _labels_file(tmp_path / "c.jsonl", 200)
    started = time.monotonic()
    code, rss = _run_measured(["stats", "c.jsonl", "--format", "json", "-o", "s.json",
                               "--workers", "1", "-q"], tmp_path)
    seconds = time.monotonic() - started
    assert code == 0
    assert rss < 300, f"peak RSS {rss} MiB"  # measured 75 MiB
    assert seconds < 60, seconds  # measured 0.7 s
    stats = json.loads((tmp_path / "s.json").read_text())
    listed = [r for r in stats["labels"] if not r["in_rubrics"]]
    assert len(listed) == 1_000 and listed[0]["rubric"] == "r0-0"
    assert sum(r["total"]["labels"] for r in listed) == 1_000
    assert ("labels name more than 1,000 rubric ids that are not in the rubric set; the "
            "99,000 labels of further ids are counted here only, not per rubric.") in \
        stats["warnings"]
    assert any(w.startswith("100,000 labels name rubrics that are not in the rubric set ("
                            "r0-0, r0-1,") and ", ...)" in w for w in stats["warnings"])


def test_many_distinct_rubric_ids_in_agree_stay_bounded(tmp_path: Path) -> None:
    _labels_file(tmp_path / "c.jsonl", 200)
    with open(tmp_path / "v.jsonl", "w") as f:
        for i in range(200):
            for j in range(0, 500, 50):
                f.write(json.dumps({"case_id": f"c{i}", "rubric_id": f"r{i}-{j}",
                                    "status": "fail"}) + "\n")
    started = time.monotonic()
    code, rss = _run_measured(["agree", "v.jsonl", "c.jsonl", "--format", "json", "-o",
                               "a.json"], tmp_path)
    seconds = time.monotonic() - started
    assert code == 0
    assert rss < 300, f"peak RSS {rss} MiB"  # measured 80 MiB (1 GB and 10 s before)
    assert seconds < 60, seconds
    report = json.loads((tmp_path / "a.json").read_text())
    # The first 1,000 rubric ids met (the verdicts' r0-0 ... r99-450) are analysed.
    assert len(report["rubrics"]) == 1_000
    assert report["verdicts"]["verdicts"] == 1_000
    assert report["verdicts"]["unlisted_rubric"] == 2_000 - 1_000
    assert report["cases"]["labels"] == 1_000
    assert report["cases"]["unlisted_rubric"] == 100_000 - 1_000
    assert sum(r["all"]["pairs"] for r in report["rubrics"]) == 1_000


def test_a_regex_over_a_field_at_the_cap_is_fast(tmp_path: Path) -> None:
    (tmp_path / "r.toml").write_text(
        '[[rubric]]\nid = "slow"\nkind = "exact"\n'
        'check = { last_call = "t", field = "output", matches = "x.*y" }\n')
    (tmp_path / "c.jsonl").write_text(json.dumps({
        "id": "a", "input": "i", "output": "o", "toolEvents": [
            {"id": "t1", "name": "t", "status": "success", "output": "x" * 200_000}]}) + "\n")
    started = time.monotonic()
    code, _ = _run_measured(["build", "c.jsonl", "o.jsonl", "--rubrics", "r.toml", "-q"],
                            tmp_path)
    seconds = time.monotonic() - started
    assert code == 0
    assert seconds < 5, seconds  # measured 0.3 s; 22.8 s with Python's re
    assert json.loads((tmp_path / "o.jsonl").read_text())["status"] == "fail"


@pytest.mark.slow
def test_a_1_gib_line_with_workers_takes_linear_time(tmp_path: Path) -> None:
    src = tmp_path / "long.jsonl"
    with open(src, "wb") as f:
        for block in _gib_line():  # real bytes: a sparse file reads faster than any disk
            f.write(block)
    seconds = {}
    for workers in ("1", "2"):
        started = time.monotonic()
        code, _ = _run_measured(["build", str(src), f"out{workers}.jsonl", "--workers", workers,
                                 "-q"], tmp_path)
        seconds[workers] = time.monotonic() - started
        assert code == 1
    # Measured 0.6 s and 0.8 s; each range searching on its own took 12 s with 2 workers.
    assert seconds["2"] < 2 * seconds["1"] + 3, seconds
    assert (tmp_path / "out2.report.json").read_bytes().replace(b"out2", b"out1").split(
        b'"seconds"')[0] == (tmp_path / "out1.report.json").read_bytes().split(b'"seconds"')[0]
