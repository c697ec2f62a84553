"""What third-party servers showed (issue 27), reproduced on the fake server: a gateway that
refuses every request the same way with a 400 or a 500 (the LiteLLM proxy's wrong model or
missing key), a real quota with honest ``Retry-After`` and rate-limit headers, and a 200
whose body is not JSON at all (a proxy's error page)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from evalstream._judge import live, transport
from evalstream._judge.limits import quota_said
from evalstream.errors import UsageError
from tests.judge.support import FakeServer, lines, options, states


@pytest.mark.parametrize("code", [400, 500])
def test_requests_all_refused_alike_stop_the_run_early(
        tmp_path: Path, fake: Callable[..., FakeServer], code: int) -> None:
    server = fake("--refuse", str(code))
    path = states(tmp_path, [f"n{i}" for i in range(60)])
    opts = options(server, path, tmp_path / "v.jsonl", max_connections=4)
    with pytest.raises(UsageError, match=(
            rf"refused every request the same way \(HTTP {code}: litellm.BadRequestError: "
            r"Invalid model name passed in model=fake-judge-1, for each of the first 8 "
            r"attempts, of \d+ requests, with no answer\), so the run stopped: \d+ requests "
            r"were sent and none answered")):
        live.run(opts)
    stats = server.stats()
    # 8 refusals alike, and what was in flight then: not 60 requests (x5 for a 500)
    assert stats["requests"] <= 8 + 4, stats
    assert not (tmp_path / "v.jsonl").exists()


def test_refusals_after_an_answer_do_not_stop_the_run(tmp_path: Path,
                                                      server: FakeServer) -> None:
    # Some states refused alike once answers are coming: those states' own problem.
    path = states(tmp_path, ["FAKE:pass"] + [f"FAKE:400 n{i}" for i in range(12)])
    report = live.run(options(server, path, tmp_path / "v.jsonl", max_connections=1))
    assert report.by_status["unscored"] == 12 and report.by_status["pass"] == 1


def test_a_429_that_says_when_to_come_back_is_not_a_failed_attempt(
        tmp_path: Path, server: FakeServer) -> None:
    # The server asks 0.1 s each time: 7 polite refusals, then the answer, with 3 attempts
    # allowed (before: unscored "after 3 attempts" though every wait was kept).
    path = states(tmp_path, ["FAKE:429x7", "FAKE:500x1"])
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out, max_attempts=3))
    assert [v["status"] for v in lines(out)] == ["pass", "pass"]
    assert report.requests.retried == {"http 429": 7, "http 500": 1}


def test_polite_waits_are_bounded_by_time(tmp_path: Path, server: FakeServer) -> None:
    path = states(tmp_path, ["FAKE:429"])
    out = tmp_path / "v.jsonl"
    started = time.monotonic()
    live.run(options(server, path, out, max_attempts=2, max_wait=0.35))
    (verdict,) = lines(out)
    assert verdict["error"]["cause"] == "http_error"
    assert "more than --max-wait 0.35" in verdict["error"]["detail"]
    assert time.monotonic() - started < 5


@pytest.mark.slow
def test_the_servers_rate_limit_headers_pace_the_requests(
        tmp_path: Path, fake: Callable[..., FakeServer]) -> None:
    # 4 requests a second, 4 at most at once: 16 states need 3 s, and the headers say so
    # before any 429 (before: 16 in flight met the wall, 429 after 429).
    server = fake("--quota", "4", "--quota-seconds", "1")
    path = states(tmp_path, [f"n{i}" for i in range(16)])
    out = tmp_path / "v.jsonl"
    started = time.monotonic()
    report = live.run(options(server, path, out))
    took = time.monotonic() - started
    stats = server.stats()
    assert [v["status"] for v in lines(out)] == ["pass"] * 16
    assert stats["by_status"].get("429", 0) <= 1, stats["by_status"]
    assert 2.5 <= took < 15 and report.requests.paced_seconds > 1


@pytest.mark.slow  # a server of its own (~1.3 s)
def test_isolated_429s_do_not_lower_the_concurrency(
        tmp_path: Path, fake: Callable[..., FakeServer]) -> None:
    # Issue 31: a third of the first attempts refused with Retry-After, some 500s. Every 429
    # halved the limit (to 1 here); now each such request waits as told without its slot,
    # and the server never sees more than --max-connections at once.
    server = fake("--first-429", "0.3", "--first-500", "0.05", "--retry-after", "0.1",
                  "--latency", "0.02")
    path = states(tmp_path, [f"n{i}" for i in range(60)])
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out, max_connections=4))
    stats = server.stats()
    assert [v["status"] for v in lines(out)] == ["pass"] * 60
    assert report.requests.rate_limited == stats["by_status"]["429"] >= 10, stats
    assert stats["by_status"]["500"] >= 1, stats
    assert report.requests.lowest_concurrency == 4
    assert stats["max_in_flight"] <= 4 and report.requests.max_in_flight <= 4


@pytest.mark.slow  # one backoff (0.375-0.5 s)
def test_an_isolated_500_gives_its_slot_up_while_it_backs_off(tmp_path: Path,
                                                               server: FakeServer) -> None:
    # Issue 31: one connection, one 500 among answers. Its backoff held the slot: the states
    # after it waited for its second attempt. Now they are sent meanwhile.
    path = states(tmp_path, [f"a{i}" for i in range(8)] + ["FAKE:500x1"] +
                  [f"b{i}" for i in range(4)])
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out, max_connections=1))
    stats = server.stats()
    assert [v["status"] for v in lines(out)] == ["pass"] * 13
    (failed,) = [body for body, n in stats["by_body"].items() if n == 2]
    order = stats["order"]
    assert len(order) == 14 and order[8] == failed and order[13] == failed, order
    assert report.requests.retried == {"http 500": 1}
    assert stats["max_in_flight"] == 1


@pytest.mark.slow  # one backoff (0.375-0.5 s)
def test_a_429_that_names_no_wait_backs_off_holding_its_slot(
        tmp_path: Path, fake: Callable[..., FakeServer]) -> None:
    # A 429 without Retry-After says the server is full (the limit halves): it is no failure
    # of its request alone, and its backoff keeps the slot, as before issue 31. The second
    # comes within the cooldown of the first cut, so its window was not cleared by a cut.
    server = fake("--retry-after", "")
    path = states(tmp_path, [f"a{i}" for i in range(8)] + ["FAKE:429x1 one"] +
                  [f"b{i}" for i in range(8)] + ["FAKE:429x1 two"] + [f"c{i}" for i in range(4)])
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out, max_connections=1))
    stats = server.stats()
    assert [v["status"] for v in lines(out)] == ["pass"] * 22
    order = stats["order"]
    for refused in [body for body, n in stats["by_body"].items() if n == 2]:
        first = order.index(refused)
        assert order[first + 1] == refused, order  # asked again before anything else
    assert report.requests.retried == {"http 429": 2}


def test_an_outage_backs_off_holding_the_slots(tmp_path: Path, server: FakeServer,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # Every request fails once answers have come: a failing server, not an isolated fault.
    # The failed requests back off holding their slots, so at most --max-connections
    # requests are using up their attempts at any time, not five times as many.
    monkeypatch.setattr(transport, "INITIAL_DELAY", 0.02)
    path = states(tmp_path, ["n0"] + [f"FAKE:500 f{i}" for i in range(6)])
    out = tmp_path / "v.jsonl"
    live.run(options(server, path, out, max_connections=2, max_attempts=3))
    stats = server.stats()
    verdicts = lines(out)
    assert [v["status"] for v in verdicts] == ["pass"] + ["unscored"] * 6
    assert all("after 3 attempts" in v["error"]["detail"] for v in verdicts[1:])
    assert sorted(stats["by_body"].values()) == [1] + [3] * 6
    named: dict[str, int] = {}
    order = [named.setdefault(body, len(named)) for body in stats["order"]]
    seen, last = [0] * len(named), [order.count(body) for body in range(len(named))]
    for body in order:  # bodies begun and not yet at their last attempt: at most 2
        seen[body] += 1
        assert sum(0 < n < m for n, m in zip(seen, last, strict=True)) <= 2, order
    assert stats["max_in_flight"] <= 2


def test_most_requests_refused_still_lowers_the_concurrency(tmp_path: Path,
                                                            server: FakeServer) -> None:
    # Every state refused three times running, each 429 naming its wait: the server is
    # full, not one request unlucky.
    path = states(tmp_path, [f"FAKE:429x3 n{i}" for i in range(24)])
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out, max_connections=8))
    assert [v["status"] for v in lines(out)] == ["pass"] * 24
    assert report.requests.rate_limited == 72
    assert report.requests.lowest_concurrency < 8


def test_the_rate_limit_headers_are_read_in_both_dialects() -> None:
    openai = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0",
              "x-ratelimit-reset-requests": "1m0s"}
    assert quota_said(openai, "requests") == (0.0, 1.0, 60.0)
    assert quota_said({**openai, "x-ratelimit-reset-requests": "1.5s"}, "requests") == (
        0, 0.025, 1.5)
    assert quota_said({**openai, "x-ratelimit-reset-requests": "20ms"}, "requests")[1] == \
        pytest.approx(0.02 / 60)  # type: ignore[index]
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 30))
    left, per, _ = quota_said({"anthropic-ratelimit-tokens-remaining": "900",  # type: ignore[misc]
                            "anthropic-ratelimit-tokens-limit": "1000",
                            "anthropic-ratelimit-tokens-reset": stamp}, "tokens")
    assert left == 900 and 0.25 < per <= 0.31
    for bad in ({"x-ratelimit-remaining-requests": "x", "x-ratelimit-reset-requests": "1s"},
                {"x-ratelimit-remaining-requests": "1", "x-ratelimit-reset-requests": "soon"},
                {"x-ratelimit-remaining-requests": "nan", "x-ratelimit-reset-requests": "1s"},
                {"x-ratelimit-remaining-requests": "1"}, {}):
        assert quota_said(bad, "requests") is None


def test_a_200_that_is_not_json_is_asked_again_and_never_stored(
        tmp_path: Path, server: FakeServer) -> None:
    path = states(tmp_path, ["FAKE:garbledx1", "FAKE:garbled", "FAKE:pass"])
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out, max_attempts=2))
    got = [(v["status"], (v.get("error") or {}).get("cause")) for v in lines(out)]
    assert got == [("pass", None), ("unscored", "garbled"), ("pass", None)]
    assert "HTTP 200 with a body that is not JSON: <html>" in lines(out)[1]["error"]["detail"]
    assert report.requests.retried == {"garbled": 2}
    server.reset()
    live.run(options(server, path, out, max_attempts=2))  # only the garbled one again
    assert server.stats()["requests"] == 2


def test_the_pace_is_forgotten_once_the_quota_is_whole_again() -> None:
    """A quota said once holds until its reset: later answers without headers (AIMock's
    200s) do not keep every request waiting on it."""
    import asyncio

    from evalstream._judge.limits import Pacer

    async def go() -> tuple[float, float]:
        pacer = Pacer()
        await pacer.before(0)  # the first request goes alone
        pacer.after({"x-ratelimit-remaining-requests": "0", "x-ratelimit-limit-requests": "2",
                     "x-ratelimit-reset-requests": "200ms"})
        await pacer.before(0)  # held: the server said none is left, one back in 0.1 s
        held = pacer.waited
        pacer.after(None)
        await asyncio.sleep(0.25)  # past the reset: whole again
        await pacer.before(0)
        return held, pacer.waited - held

    held, later = asyncio.run(go())
    assert 0.09 <= held <= 0.2 and later == 0
