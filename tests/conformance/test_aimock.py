"""evalstream against AIMock (npm ``@copilotkit/aimock``): every provider's dialect answered
from the suite's fixtures (Azure's deployments, Gemini's generateContent, Bedrock's
Converse), and its chaos (429 with Retry-After, a 500 dropped, a malformed 200, a cut
connection) at once: every state ends with its verdict, and no malformed answer is stored;
its OpenAI files and batches endpoints; a run killed with ``kill -9`` and run again."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.conftest import first_states
from tests.conformance.servers import Server, aimock
from tests.conformance.test_llmock import evalstream, killed_and_resumed, verdicts

pytestmark = pytest.mark.slow  # real servers, seconds each: see docs/testing.md

# AIMock's routes of each provider's API, below its origin.
BASES = {"openai": "/v1", "anthropic": "/v1", "azure": "", "gemini": "/v1beta",
         "bedrock": ""}
REASON = {"openai": "text", "azure": "text", "gemini": "text", "anthropic": "the tool",
          "bedrock": "the tool"}


@pytest.fixture
def server(tmp_path: Path) -> Any:
    server = aimock(log=tmp_path / "aimock.log")
    yield server
    server.stop()


@pytest.mark.parametrize("provider", list(BASES))
def test_every_provider_against_aimock(tmp_path: Path, sample_states: Path, server: Server,
                                       provider: str) -> None:
    states = first_states(sample_states, tmp_path, 4)
    out = tmp_path / "v.jsonl"
    done = evalstream("judge", str(states), str(out), "--model", "gpt-4o-mini", "--provider",
                      provider, "--base-url", server.origin + BASES[provider])
    assert done.returncode == 0, done.stderr
    got = verdicts(out)
    assert [v["status"] for v in got] == ["pass"] * 4
    assert {v["rationale"] for v in got} == {f"aimock fixture: {REASON[provider]}"}
    report = json.loads((tmp_path / "v.report.json").read_text())
    # text where structured output was asked for: counted (Anthropic and Bedrock got the tool)
    assert report["without_structured_output"] == 0


def test_chaos_every_state_gets_its_verdict_and_no_garbled_answer_is_stored(
        tmp_path: Path, sample_states: Path) -> None:
    server = aimock("--chaos-ratelimit", "0.2", "--chaos-drop", "0.1", "--chaos-malformed",
                    "0.15", "--chaos-disconnect", "0.1", log=tmp_path / "aimock.log")
    try:
        states = first_states(sample_states, tmp_path, 30)
        out = tmp_path / "v.jsonl"
        done = evalstream("judge", str(states), str(out), "--model", "gpt-4o-mini",
                          "--base-url", server.origin + "/v1", "--max-attempts", "10",
                          "--max-connections", "4")
        assert done.returncode == 0, done.stderr
        got = verdicts(out)
        assert Counter(v["status"] for v in got) == {"pass": 30}, Counter(
            (v.get("error") or {}).get("cause") for v in got)
        report = json.loads((tmp_path / "v.report.json").read_text())
        retried = report["requests"]["retried"]
        assert retried.get("garbled", 0) > 0 and retried.get("http 429", 0) > 0, retried
        db = sqlite3.connect(tmp_path / "v.judge.sqlite")
        bodies = [bytes(b) for (b,) in db.execute("SELECT body FROM answers")]
        db.close()
        assert len(bodies) == 30 and all(json.loads(b) for b in bodies)  # none malformed
    finally:
        server.stop()


def test_batch_submit_status_collect(tmp_path: Path, sample_states: Path,
                                     server: Server) -> None:
    states = first_states(sample_states, tmp_path, 4)
    folder, out = tmp_path / "batch", tmp_path / "v.jsonl"
    for args in (["prepare", str(states), str(folder), "--model", "gpt-4o-mini",
                  "--base-url", server.origin + "/v1"],
                 ["submit", str(folder)], ["status", str(folder), "--wait", "--poll", "1"],
                 ["collect", str(folder), str(out)]):
        done = evalstream("batch", *args)
        if args[0] != "collect":
            assert done.returncode == 0, (args, done.stdout, done.stderr)
    # AIMock's batches answer one fixed text ("Mock batch completion") whatever the lines
    # ask: each state has its verdict, read fail-closed, and a collect with no usable
    # verdict exits 1 (docs/exit-codes.md).
    got = verdicts(out)
    assert [(v["status"], v["error"]["cause"]) for v in got] == [("unscored", "not_json")] * 4
    assert done.returncode == 1 and "every verdict is unscored" in done.stderr, done.stderr
    assert evalstream("batch", "submit", str(folder)).returncode == 0  # nothing made twice
    made = [e for e in server.call("GET", "/__aimock/journal")
            if e["method"] == "POST" and e["path"].endswith("/batches")]
    assert len(made) == 1


def test_a_run_killed_with_kill_9_resumes_and_pays_for_nothing_twice(
        tmp_path: Path, sample_states: Path) -> None:
    server = aimock("--chaos-latency", "150", log=tmp_path / "aimock.log")
    try:
        killed_and_resumed(tmp_path, sample_states, server.origin + "/v1", lambda: [
            e for e in server.call("GET", "/__aimock/journal")
            if e["path"].endswith("/chat/completions")])
    finally:
        server.stop()
