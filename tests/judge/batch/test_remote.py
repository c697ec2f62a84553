"""``batch submit`` and ``batch status`` against the fake server's files and batches endpoints
(a real process on 127.0.0.1): a batch verdict is the live verdict of the same state, byte for
byte but for usage and request id; ids are saved at once and a second submit (or one after a
lost reply, or after kill -9) creates no second batch; results are downloaded once, with the
API key removed."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstream._judge import live
from evalstream._judge.batch import remote
from evalstream._judge.batch.client import _Redactor
from evalstream._judge.providers import REGISTRY
from evalstream.errors import OutputError, UsageError
from tests.helpers import ROOT
from tests.judge.batch.support import CONTENT_FAULTS, collected, lines, prepared
from tests.judge.support import (
    FAKE_KEY,
    KEYS,
    FakeServer,
    cli,
    holds_key,
    options,
    states,
    store_holds_key,
)

ENV = KEYS
# What may differ between a live verdict and a batch verdict of the same state.
_USAGE_AND_ID = re.compile(rb'"usage":(null|\{[^{}]*\}),"request_id":(null|"[^"]*")')

# The providers whose batch form evalstream speaks (the others refuse `batch`).
BATCHED = [name for name, p in REGISTRY.items() if not p.batch_none]


def opts(folder: Path, **kw: object) -> remote.Options:
    return remote.Options(folder=str(folder), environ=ENV, poll=0.02, **kw)  # type: ignore[arg-type]


def run_batch(server: FakeServer, src: Path, tmp: Path, provider: str,
              **prepare_kw: object) -> Path:
    folder = tmp / f"batch-{provider}"
    prepared(src, folder, provider, server.url, **prepare_kw)
    assert remote.submit(opts(folder)).exit_code == 0
    assert remote.status(opts(folder, wait=True)).exit_code == 0
    return folder


@pytest.fixture()
def batches(fake: Callable[..., FakeServer]) -> FakeServer:
    """A fake server that requires the fake key; a batch ends when asked for the 2nd time."""
    return fake("--key", FAKE_KEY, "--batch-polls", "2")


@pytest.mark.slow
@pytest.mark.parametrize("provider", BATCHED)
def test_a_batch_verdict_is_the_live_verdict_but_for_usage_and_request_id(
        tmp_path: Path, batches: FakeServer, provider: str) -> None:
    markers = CONTENT_FAULTS + [f"plain {i}" for i in range(25)] + ["plain 3"]
    src = states(tmp_path / "in", markers)
    live_out = tmp_path / "live.jsonl"
    report = live.run(options(batches, src, live_out, provider))
    assert report.counts.verdicts == len(markers)
    folder = run_batch(batches, src, tmp_path, provider, max_requests_per_file=10)
    out = tmp_path / "batch.jsonl"
    done = collected(folder, out, [])
    assert done.exit_code == 0 and done.counts.verdicts == len(markers)
    assert done.results.answers == len(markers) - 1  # "plain 3" twice: one request
    live_lines = live_out.read_bytes().splitlines()
    batch_lines = out.read_bytes().splitlines()
    assert len(live_lines) == len(batch_lines) == len(markers)
    statuses = set()
    for a, b in zip(live_lines, batch_lines, strict=True):
        assert _USAGE_AND_ID.sub(b"", a) == _USAGE_AND_ID.sub(b"", b)
        assert _USAGE_AND_ID.search(a) and _USAGE_AND_ID.search(b)
        statuses.add(re.search(rb'"status":"(\w+)"', a)[1])  # type: ignore[index]
    assert statuses == {b"pass", b"fail", b"na", b"unscored"}


@pytest.mark.parametrize("provider", BATCHED)
def test_ids_are_saved_and_a_second_submit_or_status_repeats_nothing(
        tmp_path: Path, batches: FakeServer, provider: str) -> None:
    src = states(tmp_path / "in", [f"s{i}" for i in range(7)])
    folder = tmp_path / "b"
    prepared(src, folder, provider, batches.url, max_requests_per_file=3)
    first = remote.submit(opts(folder))
    assert first.submitted_now == 3 and first.exit_code == 0
    assert all(e.batch_id for e in first.files)
    again = remote.submit(opts(folder))
    assert again.submitted_now == 0
    stats = batches.stats()
    assert stats["batches_created"] == 3
    assert stats["files_uploaded"] >= (3 if provider == "openai" else 0)
    # Not ended at the first status (a batch ends when asked for the second time): exit 3.
    early = remote.status(opts(folder))
    assert early.exit_code == 3 and early.ended == 0
    done = remote.status(opts(folder))
    assert done.exit_code == 0 and done.ended == 3 and done.downloaded_now == 3
    calls = batches.stats()["batch_calls"]
    later = remote.status(opts(folder))
    assert later.exit_code == 0 and later.downloaded_now == 0
    assert batches.stats()["batch_calls"] == calls  # ended and downloaded: nothing asked
    names = sorted(p.name for p in (folder / "results").iterdir())
    kind = "results" if provider == "anthropic" else "output"
    assert names == [f"requests-0000{n}.{kind}.jsonl" for n in (1, 2, 3)]


@pytest.mark.slow
def test_a_lost_create_reply_is_found_again_not_created_twice(
        tmp_path: Path, fake: Callable[..., FakeServer]) -> None:
    server = fake("--key", FAKE_KEY, "--lose-create", "2", "--batch-polls", "1")
    src = states(tmp_path / "in", [f"s{i}" for i in range(4)])
    folder = tmp_path / "b"
    prepared(src, folder, "openai", server.url, max_requests_per_file=2)
    summary = remote.submit(opts(folder))
    assert summary.exit_code == 0 and all(e.batch_id for e in summary.files)
    stats = server.stats()
    assert stats["batches_created"] == 2  # one a file, though both replies were lost
    assert stats["batch_calls"]["GET /v1/batches"] >= 2  # looked up by the uploaded file


def test_anthropic_lost_create_reply_stops_until_told_to_resubmit(
        tmp_path: Path, fake: Callable[..., FakeServer]) -> None:
    server = fake("--key", FAKE_KEY, "--lose-create", "1", "--batch-polls", "1", "--slow", "4")
    src = states(tmp_path / "in", ["a", "b"])
    folder = tmp_path / "b"
    prepared(src, folder, "anthropic", server.url)
    with pytest.raises(OutputError, match="ended without an answer"):
        remote.submit(opts(folder))
    with pytest.raises(OutputError, match="--resubmit-unconfirmed"):
        remote.submit(opts(folder))
    status = remote.status(opts(folder))
    assert [e.status for e in status.files] == ["unconfirmed"] and status.exit_code == 3
    assert server.stats()["batches_created"] == 1
    summary = remote.submit(opts(folder, resubmit_unconfirmed=True))
    assert summary.exit_code == 0 and server.stats()["batches_created"] == 2


@pytest.mark.slow  # a submit killed mid-way, then run again (~8 s)
def test_kill_9_during_submit_then_submit_again_creates_one_batch_a_file(
        tmp_path: Path, fake: Callable[..., FakeServer]) -> None:
    import os

    server = fake("--key", FAKE_KEY, "--latency", "0.15", "--batch-polls", "1")
    src = states(tmp_path / "in", [f"s{i}" for i in range(6)])
    folder = tmp_path / "b"
    prepared(src, folder, "openai", server.url, max_requests_per_file=1)
    env = {**os.environ, **ENV}
    proc = subprocess.Popen([sys.executable, "-m", "evalstream", "batch", "submit", str(folder)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while server.stats()["batches_created"] < 2:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    r = cli("batch", "submit", str(folder))
    assert r.returncode == 0, r.stderr
    assert server.stats()["batches_created"] == 6
    assert remote.status(opts(folder, wait=True)).exit_code == 0
    assert collected(folder, tmp_path / "v.jsonl", []).counts.verdicts == 6


def test_an_expired_batch_gives_its_partial_results_and_the_rest_expired(
        tmp_path: Path, batches: FakeServer) -> None:
    markers = ["FAKE:pass", "FAKE:expired", "FAKE:fail", "FAKE:batcherror"]
    src = states(tmp_path / "in", markers)
    folder = run_batch(batches, src, tmp_path, "openai")
    summary = remote.status(opts(folder))
    e = summary.files[0]
    assert e.status == "expired" and e.results == ["requests-00001.output.jsonl",
                                                   "requests-00001.errors.jsonl"]
    done = collected(folder, tmp_path / "v.jsonl", [])
    got = [(v["status"], (v.get("error") or {}).get("cause")) for v in lines(tmp_path / "v.jsonl")]
    assert got == [("pass", None), ("unscored", "expired"), ("fail", None),
                   ("unscored", "errored")]
    assert done.by_type == {"succeeded": 2, "errored": 1, "canceled": 0, "expired": 1}


def test_a_batch_that_fails_validation_says_why(tmp_path: Path, batches: FakeServer) -> None:
    src = states(tmp_path / "in", ["a", "FAKE:batchfail"])
    folder = tmp_path / "b"
    prepared(src, folder, "openai", batches.url)
    remote.submit(opts(folder))
    summary = remote.status(opts(folder, wait=True))
    e = summary.files[0]
    assert (e.status, e.results, summary.exit_code) == ("failed", [], 0)
    assert e.error == "invalid_request: fake validation failure (line 2)"
    # Nothing came back: collect lists every state as missing (status saw the batch end).
    done = collected(folder, tmp_path / "v.jsonl", [])
    assert (done.counts.missing, done.counts.verdicts, done.exit_code) == (2, 0, 3)


def test_a_completed_batch_without_result_files_is_asked_again_with_a_sentence(
        tmp_path: Path, batches: FakeServer) -> None:
    """OpenAI says `completed` but gives neither an output file nor an error file: no state
    is judged or lost. status exits 3 with a sentence naming the batch and leaves it to be
    asked again (its files may come later); collect lists every state missing, exit 3."""
    src = states(tmp_path / "in", ["a", "FAKE:nofiles", "FAKE:fail"])
    folder = tmp_path / "b"
    prepared(src, folder, "openai", batches.url)
    remote.submit(opts(folder))
    summary = remote.status(opts(folder, wait=True))
    e = summary.files[0]
    assert (e.status, e.results, e.downloaded, summary.exit_code) == ("completed", [], False, 3)
    assert e.error is not None and re.fullmatch(
        r"the provider says the batch is 'completed' but gave no result file: its 3 "
        r"requests have no result yet\. Run `evalstream batch "
        rf"status {re.escape(str(folder))}` again later; if none ever comes, `evalstream batch "
        r"collect` and prepare the states without a verdict again into a new folder by "
        rf"`evalstream batch prepare` with `--only-missing {re.escape(str(folder))}`\.",
        e.error), e.error
    # Asked again by the next status (not marked downloaded), with the same sentence.
    asked = batches.stats()["batch_calls"]["GET /v1/batches/{id}"]
    again = remote.status(opts(folder))
    assert batches.stats()["batch_calls"]["GET /v1/batches/{id}"] == asked + 1
    assert (again.exit_code, again.files[0].error) == (3, e.error)
    done = collected(folder, tmp_path / "v.jsonl", [])
    assert (done.counts.missing, done.counts.verdicts, done.exit_code) == (3, 0, 3)
    assert [m.reason for m in done.missing] == ["no result"] * 3
    # On the command line: the sentence on stdout's line of the file, and exit 3.
    r = cli("batch", "status", str(folder))
    assert r.returncode == 3 and "gave no result file" in r.stdout


@pytest.mark.parametrize("provider", BATCHED)
def test_results_that_leave_a_request_out_leave_its_state_missing(
        tmp_path: Path, batches: FakeServer, provider: str) -> None:
    """A batch that says it completed every request, whose result files lack one: that state
    is listed missing (exit 3, the sentence to collect more or prepare it again), never
    judged; the others are judged as always."""
    src = states(tmp_path / "in", ["FAKE:pass", "FAKE:dropped", "FAKE:fail"])
    folder = run_batch(batches, src, tmp_path, provider)
    done = collected(folder, tmp_path / "v.jsonl", [])
    assert (done.counts.verdicts, done.counts.missing, done.exit_code) == (2, 1, 3)
    assert [(m.case_id, m.reason) for m in done.missing] == [("c001", "no result")]
    assert [(v["case_id"], v["status"]) for v in lines(tmp_path / "v.jsonl")] == [
        ("c000", "pass"), ("c002", "fail")]
    r = cli("batch", "collect", str(folder), str(tmp_path / "v2.jsonl"))
    assert r.returncode == 3 and "missing: 1 judge states have no verdict" in r.stderr
    assert f"--only-missing {folder}" in r.stderr


@pytest.mark.slow
def test_a_wrong_key_stops_with_exit_2_and_keeps_what_was_saved(
        tmp_path: Path, batches: FakeServer) -> None:
    src = states(tmp_path / "in", ["a"])
    folder = tmp_path / "b"
    prepared(src, folder, "openai", batches.url)
    with pytest.raises(UsageError, match="refused"):
        remote.submit(remote.Options(folder=str(folder), environ={"OPENAI_API_KEY": "wrong"}))
    r = cli("batch", "submit", str(folder), env={"OPENAI_API_KEY": "wrong"})
    assert r.returncode == 2 and "HTTP 401" in r.stderr and "Traceback" not in r.stderr
    assert remote.submit(opts(folder)).exit_code == 0


def test_a_changed_request_file_is_not_sent(tmp_path: Path, batches: FakeServer) -> None:
    src = states(tmp_path / "in", ["a"])
    folder = tmp_path / "b"
    prepared(src, folder, "openai", batches.url)
    with open(folder / "requests-00001.jsonl", "ab") as f:
        f.write(b"\n")
    r = cli("batch", "submit", str(folder))
    assert r.returncode == 2 and "changed since it was prepared" in r.stderr
    assert batches.stats()["batches_created"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("provider", BATCHED)
def test_the_api_key_is_in_no_file_and_no_log(tmp_path: Path, batches: FakeServer,
                                              provider: str) -> None:
    markers = ["FAKE:pass", "FAKE:echokey", "FAKE:notjson"]
    src = states(tmp_path / "in", markers)
    folder = tmp_path / "b"
    logs = []
    for args in (["prepare", str(src), str(folder), "--model", "fake-judge-1", "--provider",
                  provider, "--base-url", batches.url],
                 ["submit", str(folder)], ["status", str(folder), "--wait", "--poll", "0.02"],
                 ["status", str(folder), "--format", "json"],
                 # Two of the three are unscored on purpose: no limit on the rate.
                 ["collect", str(folder), str(tmp_path / "v.jsonl"), "--max-unscored-rate",
                  "1"]):
        r = cli("batch", *args)
        assert r.returncode == 0, (args, r.stderr)
        logs += [r.stdout, r.stderr]
    echoed = lines(tmp_path / "v.jsonl")[1]
    assert echoed["error"]["cause"] == "errored" and "[redacted]" in echoed["error"]["detail"]
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and FAKE_KEY.encode() in p.read_bytes()]
    assert leaked == []
    assert not [log for log in logs if FAKE_KEY in log]


_ESCAPED = "".join(f"\\u{ord(c):04x}" for c in "sk-KEY-1234").encode()


@given(data=st.lists(st.sampled_from([b"sk-KEY-1234", b"x", b"sk-", b"\n", b"KEY", b"\\",
                                      b"\\u0073k-KEY-1234", _ESCAPED, b"\\" + _ESCAPED]),
                     max_size=30).map(b"".join),
       cuts=st.lists(st.integers(0, 1200), max_size=8))
def test_the_key_is_removed_even_when_a_block_boundary_cuts_it(data: bytes,
                                                              cuts: list[int]) -> None:
    from evalstream._judge.transport import Secret

    secret = Secret("sk-KEY-1234")
    redact = _Redactor(secret)
    out, start = b"", 0
    for cut in sorted(min(c, len(data)) for c in cuts) + [len(data)]:
        out += redact(data[start:cut])
        start = cut
    out += redact.rest()
    assert out == secret.redact(data)  # as if read whole: every form of the key replaced
    assert b"sk-KEY-1234" not in out and _ESCAPED[6:] not in out


def test_status_wait_does_not_wait_for_files_never_submitted(tmp_path: Path,
                                                            batches: FakeServer) -> None:
    src = states(tmp_path / "in", ["a"])
    folder = tmp_path / "b"
    prepared(src, folder, "openai", batches.url)
    summary = remote.status(opts(folder, wait=True))
    assert summary.exit_code == 3 and [e.status for e in summary.files] == ["not submitted"]
    assert batches.stats()["batch_calls"] == {}


# -- issue 23: a hostile server ------------------------------------------------------------------
@pytest.mark.slow  # a batch through submit and status (~0.6 s with OpenAI's upload)
@pytest.mark.parametrize("provider", BATCHED)
def test_a_redirect_of_the_results_is_not_followed(tmp_path: Path, batches: FakeServer,
                                                   provider: str) -> None:
    """A 302 from the results endpoint (Anthropic) or the file content (OpenAI) was followed
    to another origin, with Anthropic's ``x-api-key``; docs/batch.md promised the results URL
    "is followed only on the API's own host"."""
    src = states(tmp_path / "in", ["a", "FAKE:redirect"])
    folder = tmp_path / "b"
    prepared(src, folder, provider, batches.url)
    assert remote.submit(opts(folder)).exit_code == 0
    with pytest.raises(UsageError, match=r"HTTP 302: a redirect to 'http://127\.0\.0\.1:\d+/v1/"
                                         r".*', not followed") as caught:
        remote.status(opts(folder, wait=True))
    assert batches.stats()["foreign"] == {"requests": 0, "credentials": 0}
    assert FAKE_KEY not in str(caught.value)
    assert not list((folder / "results").glob("*.jsonl"))


@pytest.mark.slow  # two batches through submit, status and collect (~0.7 s)
@pytest.mark.parametrize("provider", BATCHED)
def test_the_key_echoed_escaped_in_results_or_a_batch_error_is_kept_nowhere(
        tmp_path: Path, batches: FakeServer, provider: str) -> None:
    """Only the key's raw bytes were removed from downloads: escaped in an answer it was
    decoded into the rationale; raw in a batch's error it went into the manifest and the
    summary (the batch objects were not redacted at all)."""
    src = states(tmp_path / "in", ["FAKE:pass", "FAKE:echoescaped", "FAKE:echokey"])
    folder = run_batch(batches, src, tmp_path, provider)
    out = tmp_path / "v.jsonl"
    done = collected(folder, out, [])
    assert done.counts.verdicts == 3
    echoed = lines(out)[1]
    assert echoed["status"] == "pass" and "[redacted]" in echoed["rationale"]
    failing = tmp_path / "failing"
    prepared(states(tmp_path / "in2", ["a", "FAKE:echofail"]), failing, "openai", batches.url)
    remote.submit(opts(failing))
    summary = remote.status(opts(failing, wait=True))
    assert summary.files[0].error == ("invalid_request: fake validation failure for key "
                                      "[redacted] (line 2)")
    held = [p.name for p in tmp_path.rglob("*") if p.is_file() and holds_key(p.read_bytes())]
    assert held == [] and not store_holds_key(tmp_path / "v.judge.sqlite")


@pytest.mark.parametrize("provider", BATCHED)
def test_a_batch_answer_nested_past_the_parser_is_a_sentence(tmp_path: Path,
                                                             batches: FakeServer,
                                                             provider: str) -> None:
    """It was a RecursionError: exit 70 with a traceback."""
    src = states(tmp_path / "in", ["FAKE:deepbatch"])
    folder = tmp_path / "b"
    prepared(src, folder, provider, batches.url)
    remote.submit(opts(folder))
    with pytest.raises(OutputError, match=r"answered JSON nested too deeply to read"):
        remote.status(opts(folder))
