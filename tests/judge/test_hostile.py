"""The live judge against a hostile server on 127.0.0.1 (issue 23): redirects to another
origin, the key echoed in a header or JSON-escaped in the body, a huge 200 body, absurd
``Retry-After`` dates, bodies nested past the parser, negative usage, a key no header can
carry, and any exception inside one request's task. Each was a defect before this test."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from evalstream._judge import live
from evalstream._judge.providers import REGISTRY
from evalstream._judge.transport import Transport
from evalstream.errors import UsageError
from tests.judge.support import (
    FAKE_KEY,
    FakeServer,
    cli,
    holds_key,
    lines,
    options,
    states,
    store_holds_key,
)

PROVIDERS = list(REGISTRY)


def files_holding_the_key(folder: Path) -> list[str]:
    found = [p.name for p in folder.rglob("*") if p.is_file() and holds_key(p.read_bytes())]
    stores = [p for p in folder.rglob("*.sqlite")]
    return found + [p.name + " (decoded)" for p in stores if store_holds_key(p)]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_redirect_is_never_followed(tmp_path: Path, server: FakeServer,
                                      provider: str) -> None:
    """aiohttp followed a 307 to another origin with the state, and with Anthropic's
    ``x-api-key`` (a session header it does not drop)."""
    path = states(tmp_path, ["FAKE:pass", "FAKE:redirect", "FAKE:pass"])
    with pytest.raises(UsageError, match=r"HTTP 307: a redirect to 'http://127\.0\.0\.1:\d+/v1/"
                                         r"[^']+', not followed") as caught:
        live.run(options(server, path, tmp_path / "v.jsonl", provider, max_connections=1))
    assert server.stats()["foreign"] == {"requests": 0, "credentials": 0}
    assert "Answers received so far are kept" in str(caught.value)
    assert FAKE_KEY not in str(caught.value)
    assert not (tmp_path / "v.jsonl").exists()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_key_echoed_in_a_header_or_escaped_in_the_body_is_stored_and_written_nowhere(
        tmp_path: Path, server: FakeServer, provider: str) -> None:
    """An echo in the request-id header went into the store and every verdict's request_id;
    one JSON-escaped in the body was stored escaped and decoded into the rationale."""
    path = states(tmp_path / "in", ["FAKE:echoheader", "FAKE:echoescaped", "FAKE:pass"])
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out, provider))
    header, escaped, plain = lines(out)
    assert [v["status"] for v in (header, escaped, plain)] == ["pass", "pass", "pass"]
    assert header["request_id"] == "[redacted]"
    assert "[redacted]" in escaped["rationale"]
    if provider == "openai":  # no request-id header: the body's id, escaped once, is used
        assert escaped["request_id"] == "[redacted]"
    assert plain["request_id"].startswith("req_")
    assert report.counts.verdicts == 3
    assert files_holding_the_key(tmp_path) == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_huge_answer_is_read_no_further_than_an_answer_can_be(
        tmp_path: Path, server: FakeServer, provider: str) -> None:
    """A 200 body was read whole and stored as one blob (1.1 GiB: 4.8 GB of RSS, then
    "string or blob too big"), and every re-run paid for it again."""
    from evalstream._judge.transport import answer_bytes

    path = states(tmp_path, ["FAKE:huge", "FAKE:pass"])
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out, provider, max_output_tokens=16))
    huge, plain = lines(out)
    assert (huge["status"], huge["error"]["cause"]) == ("unscored", "bad_response")
    assert plain["status"] == "pass"
    assert server.stats()["huge_sent"] < 16 << 20  # of 64 MiB: the client hung up
    db = sqlite3.connect(tmp_path / "v.judge.sqlite")
    sizes = [n for (n,) in db.execute("SELECT length(body) FROM answers")]
    db.close()
    assert max(sizes) == answer_bytes(16) and report.counts.verdicts == 2
    assert report.warnings == [f"answers longer than an answer of --max-output-tokens can be "
                               f"({answer_bytes(16):,} bytes), read no further, stored cut "
                               "there and unscored (bad_response): 1"]
    # Stored: the same command again pays nothing, and writes the same verdicts.
    first = out.read_bytes()
    server.reset()
    report = live.run(options(server, path, out, provider, max_output_tokens=16))
    assert server.stats()["requests"] == 0 and report.requests.reused == 2
    assert out.read_bytes() == first


def test_an_absurd_retry_after_date_is_retried_like_none(tmp_path: Path,
                                                         server: FakeServer) -> None:
    """``Retry-After`` with the zone ``+99999999999999`` raised OverflowError in the request's
    task: the state got no verdict and the run exited 0 (or 70, when still in flight)."""
    markers = ["FAKE:429zonex1"] + [f"plain {i}" for i in range(5)]
    path = states(tmp_path, markers)
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out))
    assert [v["status"] for v in lines(out)] == ["pass"] * len(markers)
    assert report.requests.retried == {"http 429": 1} and report.exit_code == 0


def test_bodies_nested_past_the_parser_and_absurd_headers_are_unscored(
        tmp_path: Path, server: FakeServer) -> None:
    """A 200 or an error body nested 100,000 deep raised RecursionError in the task."""
    path = states(tmp_path, ["FAKE:deep", "FAKE:deeperror", "FAKE:hugeheader",
                             "FAKE:manyheaders", "FAKE:pass"])
    out = tmp_path / "v.jsonl"
    live.run(options(server, path, out, max_attempts=1))
    got = [(v["status"], (v.get("error") or {}).get("cause")) for v in lines(out)]
    assert got == [("unscored", "bad_response"), ("unscored", "http_error"),
                   ("unscored", "connection"), ("unscored", "connection"), ("pass", None)]


def test_an_exception_in_a_request_task_is_never_lost(tmp_path: Path, server: FakeServer,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a request's task raises ends the run with it, also when the task ends long
    before the last one (it was logged as "never retrieved", and the run exited 0 without
    that state's verdict)."""
    path = states(tmp_path, [f"n{i}" for i in range(40)])
    send = Transport.send
    calls = []

    async def failing_first(self: Transport, body: bytes, tokens: int):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a bug in one request")
        return await send(self, body, tokens)

    monkeypatch.setattr(Transport, "send", failing_first)
    with pytest.raises(RuntimeError, match="a bug in one request"):
        live.run(options(server, path, tmp_path / "v.jsonl", max_connections=2))
    assert len(calls) <= 3  # nothing sent after it but what was already in flight
    assert not (tmp_path / "v.jsonl").exists()


@pytest.mark.slow  # loads the tokenizer (~0.7 s)
def test_negative_usage_counts_nothing_and_max_cost_still_stops(tmp_path: Path,
                                                                server: FakeServer) -> None:
    """Negative token counts made the spend negative: --max-cost never stopped the run and
    the report showed a negative cost."""
    path = states(tmp_path, [f"FAKE:negusage {i}" for i in range(6)])
    out = tmp_path / "v.jsonl"
    # At 1 USD a token, one request's worst case is about 550 USD: 1,200 allows two.
    report = live.run(options(server, path, out, max_cost=1200.0, price_in=1e6, price_out=1e6,
                              max_connections=1))
    assert report.exit_code == 3 and report.stopped_by == "max-cost"
    assert report.cost_usd is not None and 0 < report.cost_usd <= 1200.0
    assert 0 < report.requests.sent < 6
    assert report.usage.input_tokens == report.usage.output_tokens == 0
    assert all(v["status"] == "pass" and v["usage"] is None for v in lines(out))
    assert report.warnings[-1].startswith("answers without usable token counts") and \
        report.warnings[-1].endswith(f": {report.requests.sent}")


def test_a_key_with_a_carriage_return_is_a_sentence(tmp_path: Path,
                                                    server: FakeServer) -> None:
    path = states(tmp_path, ["a"])
    opts = options(server, path, tmp_path / "v.jsonl")
    opts.environ["OPENAI_API_KEY"] = FAKE_KEY + "\r"
    with pytest.raises(UsageError, match=r"OPENAI_API_KEY holds a carriage return \(CR\) at "
                                         "its end"):
        live.run(opts)
    assert server.stats()["requests"] == 0


@pytest.mark.slow
def test_a_key_with_a_carriage_return_on_the_command_line(tmp_path: Path,
                                                          server: FakeServer) -> None:
    """It was exit 70 with a traceback, from inside the first request's task."""
    path = states(tmp_path, ["a", "b"])
    r = cli("judge", str(path), str(tmp_path / "v.jsonl"), "--model", "m", "--base-url",
            server.url, "--provider", "anthropic", env={"ANTHROPIC_API_KEY": FAKE_KEY + "\r"})
    assert r.returncode == 2, r.stderr
    assert "ANTHROPIC_API_KEY holds a carriage return (CR) at its end" in r.stderr
    assert "Traceback" not in r.stderr and FAKE_KEY not in r.stderr
