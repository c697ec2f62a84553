"""evalstream against LLMock (PyPI ``llmock``): its real quota (RPM with an honest
``Retry-After`` and rate-limit headers), scripted faults, the OpenAI, Anthropic and Gemini
dialects, the OpenAI and Anthropic batch endpoints, a run killed with ``kill -9`` and run
again; each time LLMock's own report on the client (``/_llmock/verdict``: Retry-After kept,
no retry of what cannot succeed, backoff, no retry storm) must be clean."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.conftest import first_states
from tests.conformance.servers import KEYS, Server, llmock
from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # real servers, seconds each: see docs/testing.md

# LLMock's routes of each provider's API, below its origin.
BASES = {"openai": "/v1", "anthropic": "/anthropic/v1", "gemini": "/gemini/v1beta"}


def evalstream(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalstream", *args], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, "NO_COLOR": "1", **KEYS},
                          timeout=600, **kw)


def verdicts(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def clean(server: Server) -> dict[str, Any]:
    """LLMock's report on how the client coped: asserted without an error finding."""
    report = server.call("GET", "/_llmock/verdict")
    assert report["passed"], json.dumps(report["findings"], indent=1)
    return report  # type: ignore[no-any-return]


@pytest.fixture
def quota(tmp_path: Path) -> Any:
    server = llmock("--rpm", "60", log=tmp_path / "llmock.log")
    yield server
    server.stop()


def test_a_real_quota_is_kept_and_no_request_gives_up(
        tmp_path: Path, sample_states: Path, quota: Server) -> None:
    """60 requests a minute, 101 states: the burst, then paced by the headers (before: 8 of
    101 gave up "after 5 attempts" though every Retry-After was kept)."""
    out = tmp_path / "v.jsonl"
    started = time.monotonic()
    done = evalstream("judge", str(sample_states), str(out), "--model", "gpt-4o-mini",
                      "--base-url", quota.origin + BASES["openai"], "--max-attempts", "3")
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    judged = [v for v in verdicts(out) if v.get("kind") != "exact"]
    assert Counter(v["status"] for v in judged) == {"pass": 101}
    report = json.loads((tmp_path / "v.report.json").read_text())
    assert report["requests"]["paced_seconds"] > 20
    assert 35 < took < 180  # 60 at once, then one a second
    clean(quota)
    refused = [r for r in quota.call("GET", "/_llmock/requests")["requests"]
               if r["status"] == 429]
    assert len(refused) <= 3, len(refused)  # the pace was set by the headers, before the 429


@pytest.fixture
def server(tmp_path: Path) -> Any:
    server = llmock(log=tmp_path / "llmock.log")
    yield server
    server.stop()


@pytest.mark.parametrize("provider", list(BASES))
def test_each_dialect_answers_and_is_read(tmp_path: Path, sample_states: Path,
                                          server: Server, provider: str) -> None:
    states = first_states(sample_states, tmp_path, 6)
    out = tmp_path / "v.jsonl"
    done = evalstream("judge", str(states), str(out), "--model", "gpt-4o-mini", "--provider",
                      provider, "--base-url", server.origin + BASES[provider])
    assert done.returncode == 0, done.stderr
    assert [v["status"] for v in verdicts(out)] == ["pass"] * 6
    assert all(v["usage"]["input_tokens"] > 0 for v in verdicts(out))
    clean(server)


def test_scripted_faults_are_met_as_documented(tmp_path: Path, sample_states: Path,
                                               server: Server) -> None:
    """429s with Retry-After, 500s and a 503, then a 400 that no retry can cure."""
    server.call("POST", "/_llmock/scenario", {"behaviors": [
        {"type": "fail", "status": 429, "retry_after": 0.3, "times": 6},
        {"type": "fail", "status": 500, "times": 2},
        {"type": "fail", "status": 503, "times": 1}]})
    states = first_states(sample_states, tmp_path, 6)
    out = tmp_path / "v.jsonl"
    done = evalstream("judge", str(states), str(out), "--model", "gpt-4o-mini",
                      "--base-url", server.origin + BASES["openai"], "--max-attempts", "3",
                      "--max-connections", "2")
    assert done.returncode == 0, done.stderr
    assert [v["status"] for v in verdicts(out)] == ["pass"] * 6  # 6 polite 429s: no attempt
    report = clean(server)
    assert report["faults_injected"] == 9
    server.call("POST", "/_llmock/reset")
    server.call("POST", "/_llmock/scenario", {"behaviors": [
        {"type": "fail", "status": 400, "times": 1}]})
    again = tmp_path / "w.jsonl"
    done = evalstream("judge", str(states), str(again), "--model", "gpt-4o-mini",
                      "--base-url", server.origin + BASES["openai"], "--max-connections", "1")
    assert done.returncode == 0, done.stderr
    assert [v["status"] for v in verdicts(again)].count("unscored") == 1
    clean(server)  # the 400 was not retried


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batch_submit_status_collect(tmp_path: Path, sample_states: Path, server: Server,
                                     provider: str) -> None:
    states = first_states(sample_states, tmp_path, 5)
    folder, out = tmp_path / "batch", tmp_path / "v.jsonl"
    base = server.origin + BASES[provider]
    for args in (["prepare", str(states), str(folder), "--model", "gpt-4o-mini",
                  "--provider", provider, "--base-url", base],
                 ["submit", str(folder)], ["status", str(folder), "--wait", "--poll", "1"],
                 ["collect", str(folder), str(out)]):
        done = evalstream("batch", *args)
        if args[0] != "collect":
            assert done.returncode == 0, (args, done.stdout, done.stderr)
    # LLMock's batches answer in text whatever structured output the lines ask for: each
    # state has its verdict, read as the live one is (fail-closed: not JSON, unscored).
    got = verdicts(out)
    assert len(got) == 5 and all(v["status"] == "pass" or v["error"]["cause"] == "not_json"
                                 for v in got)
    # A collect where no verdict is usable is not a green build (docs/exit-codes.md).
    if all(v["status"] == "unscored" for v in got):
        assert done.returncode == 1 and "every verdict is unscored" in done.stderr, done.stderr
    else:
        assert done.returncode == 0, done.stderr
    assert all(v["usage"]["input_tokens"] > 0 for v in got)
    again = evalstream("batch", "submit", str(folder))  # ids saved: nothing made twice
    assert again.returncode == 0
    batches = [r for r in server.call("GET", "/_llmock/requests")["requests"]
               if r["method"] == "POST" and r["path"].endswith("batches")]
    assert len(batches) == 1
    clean(server)


def test_a_run_killed_with_kill_9_resumes_and_pays_for_nothing_twice(
        tmp_path: Path, sample_states: Path) -> None:
    server = llmock("--latency-ms", "150", log=tmp_path / "llmock.log")
    try:
        killed_and_resumed(tmp_path, sample_states, server.origin + BASES["openai"],
                           lambda: server.call("GET", "/_llmock/requests")["requests"])
        clean(server)
    finally:
        server.stop()


def killed_and_resumed(tmp_path: Path, sample_states: Path, base_url: str,
                       requests: Callable[[], list[Any]]) -> None:
    """A run of 20 states killed with ``kill -9`` after its sixth request, then the same
    command: every state asked once (but the one in flight when it died), every verdict
    written, no output of the killed run left."""
    states = first_states(sample_states, tmp_path, 20)
    out = tmp_path / "v.jsonl"
    args = [sys.executable, "-m", "evalstream", "judge", str(states), str(out), "--model",
            "gpt-4o-mini", "--base-url", base_url, "--max-connections", "1", "-q"]
    env = {**os.environ, **KEYS}
    proc = subprocess.Popen(args, cwd=ROOT, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(requests()) < 6:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    first = len(requests())
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    total = len(requests())
    assert first >= 6 and 20 <= total <= 21, (first, total)
    assert [v["status"] for v in verdicts(out)] == ["pass"] * 20
