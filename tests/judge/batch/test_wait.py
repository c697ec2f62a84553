"""``batch status --wait`` ends, whatever the provider does: a batch stuck in one state (the
fake server crashed while making its results), a status no provider documents, a server that
answers errors or no status, an ended batch whose results cannot be downloaded. Each ends with
a sentence naming the batch and an exit code of docs/exit-codes.md, against the fake server as
a real process, with short polls so that each takes seconds."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import evalstream
from evalstream._judge.batch import remote
from evalstream.errors import UsageError
from tests.judge.batch.support import prepared
from tests.judge.batch.test_remote import BATCHED, ENV, opts
from tests.judge.support import FAKE_KEY, FakeServer, cli, states

# What the fake shows of a batch that never ends (tests/judge/fake_batches.py).
STUCK = {"FAKE:endcrash": "in_progress", "FAKE:oddstatus": "paused_for_review"}


@pytest.fixture()
def batches(fake: Callable[..., FakeServer]) -> FakeServer:
    """A fake server that requires the fake key; a batch ends when asked for the 2nd time."""
    return fake("--key", FAKE_KEY, "--batch-polls", "2")


def submitted(server: FakeServer, tmp: Path, markers: list[str], provider: str) -> Path:
    folder = tmp / f"batch-{provider}"
    prepared(states(tmp / "in", markers), folder, provider, server.url)
    assert remote.submit(opts(folder)).exit_code == 0
    return folder


@pytest.mark.parametrize("provider", BATCHED)
@pytest.mark.parametrize("marker", sorted(STUCK))
def test_a_batch_that_never_ends_stops_the_wait_at_max_wait_with_exit_3(
        tmp_path: Path, batches: FakeServer, provider: str, marker: str) -> None:
    folder = submitted(batches, tmp_path, ["a", marker], provider)
    started = time.monotonic()
    summary = evalstream.batch_status(folder, wait=True, poll=0.02, max_wait=0.2, environ=ENV)
    assert time.monotonic() - started < 10
    state = STUCK[marker]
    assert summary.exit_code == 3 and summary.ended == 0
    assert [e.status for e in summary.files] == [state]
    batch_id = summary.files[0].batch_id
    assert summary.stopped is not None
    assert f"requests-00001.jsonl (batch {batch_id}) is still {state!r}" in summary.stopped
    assert "--wait gave up after 0." in summary.stopped and "(--max-wait 0.2)" in summary.stopped
    assert f"evalstream batch status {folder} --wait` again" in summary.stopped
    assert "--only-missing" in summary.stopped
    # It asked more than once, and stopped asking.
    asked = batches.stats()["batch_calls"]
    time.sleep(0.1)
    assert batches.stats()["batch_calls"] == asked


def test_no_sleep_goes_past_max_wait(tmp_path: Path, batches: FakeServer) -> None:
    folder = submitted(batches, tmp_path, ["FAKE:oddstatus"], "openai")
    started = time.monotonic()
    summary = evalstream.batch_status(folder, wait=True, poll=3600, max_wait=0.2, environ=ENV)
    assert time.monotonic() - started < 5 and summary.exit_code == 3


def test_without_wait_max_wait_changes_nothing(tmp_path: Path, batches: FakeServer) -> None:
    folder = submitted(batches, tmp_path, ["FAKE:oddstatus"], "openai")
    summary = evalstream.batch_status(folder, max_wait=0.01, environ=ENV)
    assert (summary.exit_code, summary.stopped) == (3, None)


def test_a_batch_that_ends_within_max_wait_is_downloaded(
        tmp_path: Path, batches: FakeServer) -> None:
    folder = submitted(batches, tmp_path, ["a", "b"], "openai")
    summary = evalstream.batch_status(folder, wait=True, poll=0.02, max_wait=30, environ=ENV)
    assert (summary.exit_code, summary.stopped, summary.ended) == (0, None, 1)


@pytest.mark.parametrize("value", [0, -1, float("inf"), float("nan"), "1h", True])
def test_max_wait_must_be_a_number_of_seconds_above_0(tmp_path: Path, value: object) -> None:
    with pytest.raises(UsageError, match=r"^--max-wait: .* (above 0|not a number)"):
        evalstream.batch_status(tmp_path, wait=True, max_wait=value,  # type: ignore[arg-type]
                                environ=ENV)


@pytest.mark.slow  # the command as a CI job runs it (~2 s)
def test_the_command_stops_at_max_wait_with_exit_3_and_a_sentence(
        tmp_path: Path, batches: FakeServer) -> None:
    folder = submitted(batches, tmp_path, ["FAKE:endcrash"], "openai")
    r = cli("batch", "status", str(folder), "--wait", "--poll", "0.05", "--max-wait", "0.5")
    assert r.returncode == 3, r.stderr
    assert "requests-00001.jsonl: 1 requests; in_progress" in r.stdout
    assert "evalstream: --wait gave up after " in r.stderr and "'in_progress'" in r.stderr
    assert "Traceback" not in r.stderr
    r = cli("batch", "status", str(folder), "--wait", "--max-wait", "0")
    assert r.returncode == 2 and "--max-wait" in r.stderr


@pytest.mark.slow  # on the unfixed code this waited for ever: the subprocess timeout ends it
@pytest.mark.parametrize("provider", BATCHED)
def test_a_batch_shown_without_a_status_stops_at_once_with_exit_2(
        tmp_path: Path, batches: FakeServer, provider: str) -> None:
    folder = submitted(batches, tmp_path, ["FAKE:nostatus"], provider)
    r = cli("batch", "status", str(folder), "--wait", "--poll", "0.05")
    assert r.returncode == 2, r.stderr
    assert re.search(r"answered for requests-00001\.jsonl's batch (msg)?batch_[0-9a-f]+ with "
                     r"no status: \{", r.stderr)
    assert "Traceback" not in r.stderr


@pytest.mark.slow  # retries with backoff (~1 s)
def test_a_server_answering_errors_ends_the_wait_with_exit_2(
        tmp_path: Path, batches: FakeServer) -> None:
    folder = submitted(batches, tmp_path, ["FAKE:batch500"], "openai")
    r = cli("batch", "status", str(folder), "--wait", "--poll", "0.05", "--max-attempts", "2")
    assert r.returncode == 2, r.stderr
    assert "failed after 2 attempts" in r.stderr and "HTTP 500" in r.stderr
    assert "run the command again" in r.stderr


@pytest.mark.parametrize("provider", BATCHED)
def test_an_ended_batch_whose_results_are_not_there_names_the_batch(
        tmp_path: Path, batches: FakeServer, provider: str) -> None:
    folder = submitted(batches, tmp_path, ["a", "FAKE:nofile"], provider)
    with pytest.raises(UsageError) as caught:  # HTTP 404: exit 2, as before
        evalstream.batch_status(folder, wait=True, poll=0.02, max_wait=30, environ=ENV)
    message = str(caught.value)
    state = "ended" if provider == "anthropic" else "completed"
    assert re.search(rf"requests-00001\.jsonl's batch (msg)?batch_[0-9a-f]+ has ended "
                     rf"\('{state}'\) but its results could not be downloaded", message)
    assert "HTTP 404" in message and f"with `--only-missing {folder}`." in message
    # Not marked downloaded: the next status asks again.
    again = evalstream.batch_status(folder, download=False, environ=ENV)
    assert again.exit_code == 0 and not again.files[0].downloaded
