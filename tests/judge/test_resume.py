"""kill -9, Ctrl-C and SIGTERM mid-run, then the same command again: no stored request is
sent twice, and the verdicts are byte-identical to an uninterrupted run. The API key is in
no file and no log a run leaves."""

from __future__ import annotations

import hashlib
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from evalstream._judge import inputs
from evalstream._judge.request import JudgeConfig, build, request_key
from tests.helpers import ROOT
from tests.judge.support import FAKE_KEY, FakeServer, cli, lines, states

N = 120


def judge_args(server: FakeServer, src: Path, out: Path, *extra: str) -> list[str]:
    return ["judge", str(src), str(out), "--model", "fake-judge-1", "--base-url", server.url,
            "--max-connections", "4", *extra]


def start(args: list[str]) -> subprocess.Popen[bytes]:
    import os

    env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY}
    return subprocess.Popen([sys.executable, "-m", "evalstream", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for(server: FakeServer, requests: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while server.stats()["requests"] < requests:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)


def stored_keys(store: Path) -> set[str]:
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return {k for (k,) in db.execute("SELECT key FROM answers")}
    finally:
        db.close()


@pytest.fixture()
def slow_server(fake: Callable[..., FakeServer]) -> FakeServer:
    return fake("--key", FAKE_KEY, "--latency", "0.03")


@pytest.mark.slow
def test_kill_9_then_rerun_pays_nothing_twice_and_ends_identical(
        tmp_path: Path, slow_server: FakeServer) -> None:
    src = states(tmp_path / "in", [f"state {i}" for i in range(N)])
    clean = tmp_path / "clean.jsonl"
    r = cli(*judge_args(slow_server, src, clean, "-q"))
    assert r.returncode == 0, r.stderr
    slow_server.reset()

    out = tmp_path / "v.jsonl"
    proc = start(judge_args(slow_server, src, out, "-q"))
    wait_for(slow_server, N // 3, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()  # outputs appear whole or not at all
    before = stored_keys(tmp_path / "v.judge.sqlite")
    assert len(before) >= N // 3 - 4  # all but those in flight

    r = cli(*judge_args(slow_server, src, out, "-q"))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == clean.read_bytes()
    config = JudgeConfig(model="fake-judge-1", base_url=slow_server.url)
    counts = slow_server.stats()["by_body"]
    for item in inputs.read(str(src), 1 << 20):
        assert isinstance(item, inputs.JudgeState)
        req = build(config, item.question, item.state)
        sent = counts[hashlib.sha256(req.body).hexdigest()]
        if req.key in before:
            assert sent == 1, "a stored answer was paid for again"
        else:
            assert sent in (1, 2)  # in flight at the kill: sent, not stored, sent again
    assert request_key(config, req.body) == req.key
    assert sum(counts.values()) <= N + 4


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code", "said"), [(signal.SIGINT, 130, "interrupted"),
                                                     (signal.SIGTERM, 143, "terminated"),
                                                     (signal.SIGHUP, 129, "hung up")])
def test_interrupted_run_keeps_answers_and_writes_no_output(
        tmp_path: Path, slow_server: FakeServer, signum: int, code: int, said: str) -> None:
    src = states(tmp_path / "in", [f"state {i}" for i in range(N)])
    out = tmp_path / "v.jsonl"
    proc = start(judge_args(slow_server, src, out))
    wait_for(slow_server, 20, proc)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=20)  # at once, not after the remaining states
    assert proc.returncode == code, err
    assert f"{said}; no output was written".encode() in err
    assert b"run the same command again to continue" in err
    assert b"Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "v.judge.sqlite"] or \
        sorted(p.name for p in tmp_path.iterdir()) == ["in", "v.judge.sqlite",
                                                       "v.judge.sqlite-shm",
                                                       "v.judge.sqlite-wal"]
    kept = stored_keys(tmp_path / "v.judge.sqlite")
    assert len(kept) >= 10
    r = cli(*judge_args(slow_server, src, out, "-q"))
    assert r.returncode == 0
    assert slow_server.stats()["requests"] <= N + 8


@pytest.mark.slow
def test_the_api_key_is_in_no_output_store_report_or_log(tmp_path: Path,
                                                          server: FakeServer) -> None:
    markers = ["FAKE:pass", "FAKE:echokey", "FAKE:400", "FAKE:503x1", "FAKE:notjson",
               "FAKE:429x1", "FAKE:refusal"]
    src = states(tmp_path / "in", markers)
    out = tmp_path / "v.jsonl"
    logs = []
    for extra in ([], ["--retry-unscored"], ["--dry-run", "--price-in", "1", "--price-out", "1"],
                  ["--show-request", "c001", "helpful"]):
        r = cli(*judge_args(server, src, out, *extra))
        assert r.returncode in (0, 1), r.stderr
        logs += [r.stdout, r.stderr]
    assert server.stats()["by_status"]["400"] >= 2  # the echo happened
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and FAKE_KEY.encode() in p.read_bytes()]
    assert leaked == []
    assert not [log for log in logs if FAKE_KEY in log]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "v.judge.sqlite" in names and "v.report.json" in names


@pytest.mark.slow
def test_kill_9_of_judge_on_stdin_leaves_no_copy_of_the_states(
        tmp_path: Path, slow_server: FakeServer) -> None:
    """``judge -`` killed with -9 left a full copy of the states in /tmp, never removed
    (issue 23). The copy is removed as soon as it is opened; one a dead run of an older
    version left under a run's name is removed by the next run."""
    import os

    from evalstream._files import temporaries

    src = states(tmp_path / "in", [f"state {i}" for i in range(N)])
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp / f"evalstream-input-{dead}-{temporaries._machine()}.abcd_123.jsonl"
    stale.write_bytes(src.read_bytes())
    env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY, "TMPDIR": str(tmp)}
    with open(src, "rb") as stdin:
        proc = subprocess.Popen([sys.executable, "-m", "evalstream",
                                 *judge_args(slow_server, Path("-"), tmp_path / "v.jsonl",
                                             "-q", "--store", str(tmp_path / "s.sqlite"))],
                                cwd=ROOT, env=env, stdin=stdin, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        wait_for(slow_server, 10, proc)
        assert list(tmp.iterdir()) == []  # the stale copy went first, this run's at once
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    assert list(tmp.iterdir()) == []


@pytest.mark.slow
def test_two_runs_on_one_store_never_send_the_same_request(
        tmp_path: Path, slow_server: FakeServer) -> None:
    """Two judge runs at once on one store (a second terminal, overlapping cron jobs, two
    datasets sharing --cache, now --store) each kept their own table of requests in flight, so both sent
    nearly every request (issue 23). They now claim requests in the store."""
    import json

    src = states(tmp_path / "in", [f"state {i}" for i in range(N)])
    cache = str(tmp_path / "shared.sqlite")
    outs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    procs = [start(judge_args(slow_server, src, out, "--store", cache)) for out in outs]
    errs = []
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        errs.append(err.decode())
    counts = slow_server.stats()["by_body"]
    assert len(counts) == N and set(counts.values()) == {1}  # each request paid once
    assert outs[0].read_bytes() == outs[1].read_bytes()
    reports = [json.loads(out.with_suffix(".report.json").read_text())["requests"]
               for out in outs]
    assert sum(r["sent"] for r in reports) == N
    # What one run did not send, it read: stored before it looked, or waited for.
    assert all(r["sent"] + r["reused"] + r["from_other_runs"] == N for r in reports)
    for r, err in zip(reports, errs, strict=True):  # the summary says so
        said = f"({r['from_other_runs']:,} more sent by another run on it)"
        assert (said in err) == (r["from_other_runs"] > 0), err


@pytest.mark.slow
def test_the_claims_of_a_run_killed_with_9_are_taken_at_once(
        tmp_path: Path, fake: Callable[..., FakeServer]) -> None:
    server = fake("--key", FAKE_KEY, "--latency", "0.5")
    src = states(tmp_path / "in", [f"state {i}" for i in range(24)])
    out = tmp_path / "v.jsonl"
    proc = start(judge_args(server, src, out, "-q"))
    wait_for(server, 4, proc)  # four requests in flight, claimed
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    db = sqlite3.connect(tmp_path / "v.judge.sqlite")
    # The four in flight, and the next one, claimed while it waited for a connection.
    assert db.execute("SELECT count(*) FROM claims").fetchone()[0] in (4, 5)
    db.close()
    started = time.monotonic()
    r = cli(*judge_args(server, src, out, "-q"))
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - started < 15  # not the 60 s lease: the owner is known dead
    assert len(lines(out)) == 24
    db = sqlite3.connect(tmp_path / "v.judge.sqlite")
    assert db.execute("SELECT count(*) FROM claims").fetchone()[0] == 0  # released at the end
    db.close()
