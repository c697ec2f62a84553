"""The index read in two processes (issue 31: the run's verdicts in a worker while the cases
are read) is byte for byte the index of one process: the kept index of each (its JSON line
and every array) is the same file but for the seconds each reading took, on generated
datasets with everything the merge recodes (rejects of both files, rubric ids outside the
set named by labels and verdicts, causes, split panels, judge states, a compare run, ids no
case has); and an error on either side is the one a single process raises."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest

from evalstream._checks.rubrics import load_rubrics
from evalstream._engines import local
from evalstream._view import index as view_index
from evalstream._view import kept
from evalstream._view.index import Index, Options, build
from evalstream.errors import InputError

RUBRICS = """
[[rubric]]
id = "r-any"
question = "Is assistant_response polite? Answer pass or fail."
shows = ["user_input", "assistant_response"]

[[rubric]]
id = "r-policy"
question = "Does assistant_response follow policy? Answer pass or fail."
shows = ["assistant_response", "policy"]
requires = ["policy"]
"""
RUBRIC_IDS = ["r-any", "r-policy", "r-label-only", "r-verdict-only", "r-both"]
JUNK = [b"{oops", b"[]", b'{"id": 5}', b"\xff\xfe", b"   ", b'{"case_id": "c1"}']


def dataset(folder: Path, seed: int) -> dict[str, Path]:
    """Cases and two verdict runs drawn from ``seed``: duplicate and unknown ids, labels and
    verdicts of rubrics outside the set, errors, votes, judge-state lines and junk lines."""
    rng = random.Random(seed)
    ids = [f"c{i}" for i in range(40)] + ["ünï-cödé"]
    cases, run, other = [], {}, {}
    for n in range(60):
        case: dict[str, Any] = {"id": rng.choice(ids) if n else "c0", "input": f"q{n}",
                                "output": rng.choice(["yes", "no", "ok"]),
                                "metadata": {"scenario": rng.choice("abc")}}
        if rng.random() < 0.5:
            case["policy"] = "be kind"
        if rng.random() < 0.6:
            case["expected"] = {r: {"status": rng.choice(["pass", "fail", "na"]),
                                    "source": rng.choice(["human", "synthetic"])}
                                for r in rng.sample(RUBRIC_IDS, 2)}
        cases.append(case)
    for records in (run, other):
        for _ in range(70):
            key = (rng.choice(ids + ["unknown-1", "unknown-2"]), rng.choice(RUBRIC_IDS))
            status = rng.choice(["pass", "fail", "na", "unscored"])
            v: dict[str, Any] = {"case_id": key[0], "rubric_id": key[1], "status": status,
                                 "rubric_hash": rng.choice(["h1", "h2"]),
                                 "state_hash": rng.choice(["s1", "s2"]),
                                 "exposure": {"shown": ["user_input"]}}
            if status == "unscored":
                v["error"] = {"cause": rng.choice(["timeout", "not_json", "http_error"]),
                              "detail": "x"}
            if rng.random() < 0.2:
                v["votes"] = [{"judge": f"j{k}", "status": rng.choice(["pass", "fail"])}
                              for k in range(3)]
            records.setdefault(key, v)
    states = [{"case_id": rng.choice(ids), "rubric_id": rng.choice(RUBRIC_IDS),
               "question": "q", "state": {}} for _ in range(4)]

    def lines(records: list[dict[str, Any]]) -> bytes:
        out = [json.dumps(r).encode() for r in records]
        for junk in rng.sample(JUNK, 3):  # after the first line: the sniffer reads it
            out.insert(rng.randint(1, len(out)), junk)
        return b"\n".join(out) + b"\n"

    paths = {name: folder / f"{name}.jsonl" for name in ("cases", "verdicts", "compare")}
    paths["cases"].write_bytes(lines(cases))
    states = [s for s in states if (s["case_id"], s["rubric_id"]) not in run]
    paths["verdicts"].write_bytes(lines([*run.values(), *states]))
    paths["compare"].write_bytes(lines(list(other.values())))
    return paths


def kept_bytes(index: Index, opts: Options) -> bytes:
    """The index as ``--keep-index`` writes it, with the seconds each reading took set to 0."""
    for summary in index.files.values():
        summary.seconds = 0.0
    index.seconds = 0.0
    stamps = [kept.stamp(role, path) for role, path in kept._files(opts) if path]
    assert opts.rubrics is not None
    path = kept.save(index, stamps, opts.rubrics.hash)
    data = Path(path).read_bytes()
    Path(path).unlink()
    return data


@pytest.fixture(autouse=True)
def forked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers forked, as in ``evalstream view`` (this test process has loaded Polars, which
    makes ``map_ordered`` spawn them; the worker never uses Polars) on two CPUs."""
    monkeypatch.setattr(local, "start_method", lambda: "fork")
    monkeypatch.setattr(view_index, "start_method", lambda: "fork")
    monkeypatch.setattr(view_index, "default_workers", lambda: 2)


def both_ways(monkeypatch: pytest.MonkeyPatch, opts: Options) -> tuple[Index, Index]:
    """The index of one process, then the index read in two (the worker seen to run)."""
    monkeypatch.setattr(view_index, "APART_BYTES", 1 << 60)
    alone = build(opts)
    started = []

    class Seen(view_index._Apart):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            started.append(self)

    monkeypatch.setattr(view_index, "APART_BYTES", 0)
    monkeypatch.setattr(view_index, "_Apart", Seen)
    apart = build(opts)
    assert len(started) == 1 and started[0].result is not None  # the worker read the run
    return alone, apart


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("with_compare", [False, True])
def test_two_processes_give_the_index_of_one_byte_for_byte(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, with_compare: bool) -> None:
    paths = dataset(tmp_path, seed)
    rubric_file = tmp_path / "rubrics.toml"
    rubric_file.write_text(RUBRICS)
    opts = Options(verdicts=str(paths["verdicts"]), cases=str(paths["cases"]),
                   compare=str(paths["compare"]) if with_compare else None,
                   rubrics=load_rubrics([str(rubric_file)]))
    alone, apart = both_ways(monkeypatch, opts)
    # The dataset has what the merge recodes (else the comparison proves little).
    assert alone.files["cases"].rejected and alone.files["verdicts"].rejected
    assert alone.unknown_rubrics and alone.causes.names and alone.panels.with_votes
    assert len(alone.rubric_names.names) > len(opts.rubrics.rubrics)  # type: ignore[union-attr]
    assert alone.unknown_where
    a, b = kept_bytes(alone, opts), kept_bytes(apart, opts)
    head_a, head_b = (msgspec.json.decode(x.split(b"\n", 2)[1]) for x in (a, b))
    assert head_a == head_b  # (said first: a readable difference)
    assert a == b


def test_an_error_in_either_file_is_the_one_a_single_process_raises(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = dataset(tmp_path, 0)
    rubric_file = tmp_path / "rubrics.toml"
    rubric_file.write_text(RUBRICS)
    opts = Options(verdicts=str(paths["verdicts"]), cases=str(paths["cases"]),
                   rubrics=load_rubrics([str(rubric_file)]))
    cases = len(paths["cases"].read_bytes().splitlines())
    assert len(paths["verdicts"].read_bytes().splitlines()) > cases
    # Past the line limit: the cases file (both files are read at once, the cases' error
    # is raised and the worker stopped), then the verdict file alone.
    for limit, named in ((cases - 1, paths["cases"]), (cases, paths["verdicts"])):
        monkeypatch.setattr(view_index, "MAX_LINE_NUMBER", limit)
        errors = []
        for apart in (1 << 60, 0):
            monkeypatch.setattr(view_index, "APART_BYTES", apart)
            with pytest.raises(InputError) as raised:
                build(opts)
            errors.append(str(raised.value))
        assert errors[0] == errors[1]
        assert errors[0].startswith(f"{named}: more than")


@pytest.mark.slow
def test_the_command_draws_the_workers_progress_and_counts_every_line(tmp_path: Path) -> None:
    """``evalstream view`` on files past ``APART_BYTES`` (its verdicts read by the worker):
    on a terminal the bar of the verdicts is drawn from the worker's bytes done, and the
    summary counts every line of both files."""
    from tests.cli.test_progress import BAR, _big_cases, _run
    from tests.helpers import SAMPLES

    cases = _big_cases(tmp_path)  # 30,000 cases of n{i}-case-NN
    sample = (SAMPLES / "verdicts.jsonl").read_bytes()
    verdicts = tmp_path / "verdicts.jsonl"
    with open(verdicts, "wb") as f:
        for i in range(130):
            f.write(sample.replace(b'"case_id":"', b'"case_id":"n%d-' % i))
    lines = 130 * len(sample.splitlines())
    assert min(cases.stat().st_size, verdicts.stat().st_size) >= view_index.APART_BYTES
    said = _run(["view", str(verdicts), "--cases", str(cases), "--export",
                 str(tmp_path / "pages"), "--limit", "1"], tmp_path / "stdout", True)
    assert BAR in said and b"view: cases" in said and b"view: verdicts" in said, said[-300:]
    assert f"verdicts {lines:,} lines (0 rejected)".encode() in said, said[-300:]


@pytest.mark.slow
def test_a_worker_that_dies_leaves_the_verdicts_to_the_parent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed (the OOM killer, a kill -9): the parent reads the verdicts itself, and the
    index is the same."""
    import os

    paths = dataset(tmp_path, 3)
    rubric_file = tmp_path / "rubrics.toml"
    rubric_file.write_text(RUBRICS)
    opts = Options(verdicts=str(paths["verdicts"]), cases=str(paths["cases"]),
                   rubrics=load_rubrics([str(rubric_file)]))
    monkeypatch.setattr(view_index, "APART_BYTES", 1 << 60)
    alone = build(opts)

    def killed(settings: Any, path: str) -> Any:
        os.kill(os.getpid(), 9)

    monkeypatch.setattr(view_index, "APART_BYTES", 0)
    monkeypatch.setattr(view_index, "_read_apart", killed)
    assert kept_bytes(build(opts), opts) == kept_bytes(alone, opts)


def test_ctrl_c_while_the_worker_starts_leaves_no_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted while it waits for the worker to be forked (before build reads on), the
    parent stops it: no process is left reading the verdicts."""
    import multiprocessing
    import time as real_time
    import types

    paths = dataset(tmp_path, 1)
    rubric_file = tmp_path / "rubrics.toml"
    rubric_file.write_text(RUBRICS)
    opts = Options(verdicts=str(paths["verdicts"]), cases=str(paths["cases"]),
                   rubrics=load_rubrics([str(rubric_file)]))
    init = view_index._init_apart

    def slow_start(settings: Any) -> Any:
        real_time.sleep(0.5)  # in the worker: the parent is still waiting when interrupted
        return init(settings)

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(view_index, "APART_BYTES", 0)
    monkeypatch.setattr(view_index, "_init_apart", slow_start)
    monkeypatch.setattr(view_index, "time", types.SimpleNamespace(
        sleep=interrupted, perf_counter=real_time.perf_counter, time=real_time.time,
        monotonic=real_time.monotonic))
    with pytest.raises(KeyboardInterrupt):
        build(opts)
    assert multiprocessing.active_children() == []
