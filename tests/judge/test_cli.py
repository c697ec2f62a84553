"""``evalstream judge`` on the command line: dry run, --show-request, stdin, errors, summary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalstream._checks.state import ANSWER_SCHEMA
from evalstream._judge import inputs
from evalstream._judge.request import JudgeConfig, build, system_text
from tests.helpers import ROOT, oracle_count
from tests.judge.support import FAKE_KEY, RUBRIC, FakeServer, cli, lines, states

SCHEMA = json.dumps(ANSWER_SCHEMA, separators=(",", ":"))  # as msgspec writes it


def args(server: FakeServer, src: Path, out: Path, *extra: str) -> list[str]:
    return ["judge", str(src), str(out), "--model", "gpt-4-turbo", "--base-url", server.url,
            *extra]


@pytest.mark.slow
def test_dry_run_sends_nothing_writes_nothing_and_counts_exactly(tmp_path: Path,
                                                                 server: FakeServer) -> None:
    src = states(tmp_path, ["a", "b", "b", "c"])
    before = sorted(tmp_path.iterdir())
    r = cli(*args(server, src, tmp_path / "v.jsonl", "--dry-run", "--price-in", "2",
                  "--price-out", "8", "--max-output-tokens", "100"))
    assert r.returncode == 0, r.stderr
    assert server.stats()["requests"] == 0 and sorted(tmp_path.iterdir()) == before
    config = JudgeConfig(model="gpt-4-turbo", base_url=server.url, max_output_tokens=100)
    seen, expected = set(), 0
    for item in inputs.read(str(src), 1 << 20):
        assert isinstance(item, inputs.JudgeState)
        key = build(config, item.question, item.state).key
        if key not in seen:
            seen.add(key)
            # tiktoken's counts of both messages, OpenAI's overhead of 3 + 3 + 3, and the
            # answer's schema as its JSON text (as build's budget counts them)
            expected += 9 + sum(oracle_count(t, "cl100k_base") for t in (
                "system", system_text(item.question), "user", item.state, SCHEMA))
    out = r.stdout
    assert "requests to send: 3; answers already stored: 0" in out
    assert "duplicates of another state's request: 1" in out
    assert f"input tokens: {expected:,} (cl100k_base, the encoding of gpt-4-turbo: exact " \
        "counts" in out
    assert "output tokens: at most 300 (100 each" in out
    cost = (expected * 2 + 300 * 8) / 1e6
    assert f"cost: at most ${cost:,.4f}" in out
    assert "No request was sent." in out
    # After a real run, everything is stored.
    assert cli(*args(server, src, tmp_path / "v.jsonl", "-q")).returncode == 0
    r = cli(*args(server, src, tmp_path / "v.jsonl", "--dry-run"))
    assert "requests to send: 0; answers already stored: 4" in r.stdout
    assert "give --price-in and --price-out" in r.stdout


@pytest.mark.slow
def test_dry_run_expects_output_tokens_from_the_answers_stored(tmp_path: Path,
                                                               server: FakeServer) -> None:
    # Issue 25: the dry run gave only the worst case (every answer at --max-output-tokens).
    import sqlite3

    first = states(tmp_path / "a", ["a", "b", "c", "d"])
    store = str(tmp_path / "s.sqlite")
    opts = ("--store", store, "--price-in", "2", "--price-out", "8", "--max-output-tokens",
            "100")
    r = cli(*args(server, first, tmp_path / "v.jsonl", "--dry-run", *opts))
    assert "expected output tokens: unknown: the store holds no answer of gpt-4-turbo yet, " \
           "so only the bound is known." in r.stdout
    assert "; no expected cost: too few answers stored." in r.stdout
    assert cli(*args(server, first, tmp_path / "v.jsonl", "-q", *opts)).returncode == 0
    with sqlite3.connect(store) as db:
        outs = sorted(n for (n,) in db.execute("SELECT output_tokens FROM answers"))
    assert len(outs) == 4
    p50, p95 = outs[1], outs[3]  # nearest rank: the 2nd and the 4th of 4
    # A dataset of the same rubric: two states answered, two new ones.
    more = states(tmp_path / "b", ["a", "b", "e", "f"])
    r = cli(*args(server, more, tmp_path / "w.jsonl", "--dry-run", *opts))
    with sqlite3.connect(store) as db:
        rows = dict(db.execute("SELECT key, output_tokens FROM answers"))
    config = JudgeConfig(model="gpt-4-turbo", base_url=server.url, max_output_tokens=100)
    own = sorted(rows[build(config, s.question, s.state).key] for s in inputs.read(str(more))
                 if isinstance(s, inputs.JudgeState) and
                 build(config, s.question, s.state).key in rows)
    assert len(own) == 2
    assert (f"expected output tokens: {2 * own[0]:,} (p50) to {2 * own[1]:,} (p95), from the "
            "answers already stored:") in r.stdout
    assert (f"helpful: 2 requests x {own[0]:,} (p50) to {own[1]:,} (p95) output tokens, from "
            "2 stored answers of this rubric") in r.stdout
    # Another rubric, with none of its own: every answer of the model in the store.
    other = states(tmp_path / "c", ["g"], RUBRIC.replace('"helpful"', '"polite"'))
    r = cli(*args(server, other, tmp_path / "x.jsonl", "--dry-run", *opts))
    assert (f"polite: 1 requests x {p50:,} (p50) to {p95:,} (p95) output tokens, from 4 stored "
            "answers of gpt-4-turbo to other rubrics (none of this one yet)") in r.stdout
    assert "expected $" in r.stdout and "(p95)." in r.stdout


@pytest.mark.slow
def test_show_request_prints_the_exact_body(tmp_path: Path, server: FakeServer) -> None:
    src = states(tmp_path, ["a", "b"])
    r = subprocess.run([sys.executable, "-m", "evalstream", *args(
        server, src, tmp_path / "v.jsonl", "--show-request", "c001", "helpful")],
        capture_output=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0
    item = list(inputs.read(str(src), 1 << 20))[1]
    assert isinstance(item, inputs.JudgeState)
    config = JudgeConfig(model="gpt-4-turbo", base_url=server.url)
    req = build(config, item.question, item.state)
    assert r.stdout == req.body + b"\n"
    assert f"POST {server.url}/chat/completions".encode() in r.stderr
    assert req.key.encode() in r.stderr
    assert server.stats()["requests"] == 0
    r2 = cli(*args(server, src, tmp_path / "v.jsonl", "--show-request", "c999", "helpful"))
    assert r2.returncode == 2 and "no judge state for case `c999`" in r2.stderr


@pytest.mark.slow
def test_stdin_is_spooled_and_judged_like_a_file(tmp_path: Path, server: FakeServer) -> None:
    src = states(tmp_path, ["a", "FAKE:fail", "c"])
    assert cli(*args(server, src, tmp_path / "file.jsonl", "-q")).returncode == 0
    r = cli(*args(server, Path("-"), tmp_path / "stdin.jsonl", "-q"), input=src.read_text())
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "stdin.jsonl").read_bytes() == (tmp_path / "file.jsonl").read_bytes()


@pytest.mark.slow
def test_summary_on_stderr(tmp_path: Path, server: FakeServer) -> None:
    src = states(tmp_path, ["a", "FAKE:fail", "FAKE:notjson", "FAKE:na"])
    r = cli(*args(server, src, tmp_path / "v.jsonl", "--price-in", "1", "--price-out", "1"))
    assert r.returncode == 0
    assert "verdicts: 4 = 1 pass + 1 fail + 1 na + 1 unscored (not_json: 1)" in r.stderr
    assert "requests: 4 sent (4 answered, 0 without an answer), 0 answers reused" in r.stderr
    assert "; cost $" in r.stderr and "latency p50" in r.stderr
    report = json.loads((tmp_path / "v.report.json").read_text())
    assert report["by_status"] == {"pass": 1, "fail": 1, "na": 1, "unscored": 1}
    assert report["exit_code"] == 0 and report["requests"]["sent"] == 4


@pytest.mark.slow
def test_max_requests_exit_3(tmp_path: Path, server: FakeServer) -> None:
    src = states(tmp_path, ["a", "b", "c"])
    r = cli(*args(server, src, tmp_path / "v.jsonl", "--max-requests", "1"))
    assert r.returncode == 3
    assert "not judged: 2 (stopped by --max-requests; run the same command again" in r.stderr
    assert len(lines(tmp_path / "v.jsonl")) == 1


@pytest.mark.slow
@pytest.mark.parametrize(("extra", "message"), [
    (["--max-cost", "5"], "--max-cost needs --price-in and --price-out"),
    (["--base-url", "localhost:8000"], "--base-url must be an http:// or https:// URL"),
    # issue 23, item 17: these were exit 70 with a traceback, or echoed the password
    (["--base-url", "http://127.0.0.1:99999/v1"], "the port must be a number from 1 to 65535"),
    (["--base-url", "http://[::1/v1"], "is not a URL"),
    (["--base-url", "ftp://user:pass@127.0.0.1/v1"], "'ftp://\u2026@127.0.0.1/v1' must not carry"),
    (["--temperature", "hot"], "is not a number (or `none`"),
    (["--max-connections", "0"], "must be positive"),
    (["--api-key-env", "NO_SUCH_VARIABLE_SET"], "set NO_SUCH_VARIABLE_SET in the environment"),
])
def test_usage_errors_exit_2(tmp_path: Path, server: FakeServer, extra: list[str],
                             message: str) -> None:
    src = states(tmp_path, ["a"])
    r = cli(*args(server, src, tmp_path / "v.jsonl"), *extra)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr and "pass@" not in r.stderr
    assert not (tmp_path / "v.jsonl").exists()


@pytest.mark.slow
def test_output_equal_to_input_and_missing_key(tmp_path: Path, server: FakeServer) -> None:
    src = states(tmp_path, ["a"])
    r = cli(*args(server, src, src))
    assert r.returncode == 2 and "the input and output paths are the same file" in r.stderr
    r = cli("judge", str(src), str(tmp_path / "v.jsonl"), "--model", "gpt-4.1-mini",
            env={"OPENAI_API_KEY": ""})
    assert r.returncode == 2 and "set OPENAI_API_KEY in the environment" in r.stderr
    assert FAKE_KEY not in r.stderr


@pytest.mark.slow  # four commands in subprocesses (~3 s)
def test_a_damaged_store_is_exit_2_naming_it(tmp_path: Path, server: FakeServer) -> None:
    """Damaged pages under an intact header, or a column another program renamed, were exit
    70 with a sqlite3 traceback (issue 23)."""
    from tests.judge.test_store import damage

    src = states(tmp_path, ["a", "b"])
    out, store = tmp_path / "v.jsonl", tmp_path / "v.judge.sqlite"
    assert cli(*args(server, src, out, "-q")).returncode == 0
    damage(store)
    for extra in ([], ["--dry-run"]):
        r = cli(*args(server, src, out, "-q", *extra))
        assert r.returncode == 2, r.stderr
        assert f"the answer store {store} cannot be read (database disk image is malformed): " \
            "it is damaged" in r.stderr and "Traceback" not in r.stderr
    renamed = tmp_path / "renamed.judge.sqlite"
    # --cache, the option's name before issue 24, is still read as --store.
    assert cli(*args(server, src, out, "-q", "--cache", str(renamed))).returncode == 0
    import sqlite3

    db = sqlite3.connect(renamed)
    db.execute("ALTER TABLE answers RENAME COLUMN request_id TO rid")
    db.close()
    for extra in ([], ["--dry-run"]):
        r = cli(*args(server, src, out, "-q", "--store", str(renamed), *extra))
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert f"the answer store {renamed} has the table answers with the columns (key, " \
            "provider, model, body, rid, " in r.stderr


@pytest.mark.slow
def test_a_stream_given_by_path_is_read_once(tmp_path: Path, server: FakeServer) -> None:
    """``judge <(...)``: pass 2 opened the pipe again and read nothing, so no state got a
    verdict (exit 0). A stream is copied once, as stdin is."""
    import os
    import shlex

    src = states(tmp_path, ["a", "FAKE:fail", "c"])
    assert cli(*args(server, src, tmp_path / "file.jsonl", "-q")).returncode == 0
    judge = args(server, Path("SRC"), tmp_path / "pipe.jsonl", "-q")
    command = " ".join([shlex.quote(sys.executable), "-m", "evalstream",
                        *(f"<(cat {shlex.quote(str(src))})" if a == "SRC" else shlex.quote(a)
                          for a in judge)])
    env = {**os.environ, "NO_COLOR": "1", "OPENAI_API_KEY": FAKE_KEY}
    r = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=ROOT,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "pipe.jsonl").read_bytes() == (tmp_path / "file.jsonl").read_bytes()
