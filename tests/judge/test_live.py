"""The live runner against the fake server: one verdict per judge state, statuses as the
server said, every fault unscored with its cause, nothing stored twice, limits kept."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import msgspec
import pytest

from evalstream._judge import live
from evalstream._judge.providers import REGISTRY
from evalstream._judge.request import build
from evalstream._judge.store import Store
from evalstream._verdicts.records import Codes, RejectSink, read_verdicts
from evalstream.errors import InputError, OutputError, UsageError
from tests.helpers import SAMPLES
from tests.judge.support import FAKE_KEY, FakeServer, lines, options, states

# marker -> (status, cause) of the verdict; faults with xN happen on the first N attempts only.
FAULTS = {
    "FAKE:pass": ("pass", None),
    "FAKE:fail": ("fail", None),
    "FAKE:na": ("na", None),
    "FAKE:429x2": ("pass", None),
    "FAKE:500x1": ("pass", None),
    "FAKE:503": ("unscored", "http_error"),
    "FAKE:cutx1": ("pass", None),
    "FAKE:cut": ("unscored", "connection"),
    "FAKE:slow": ("unscored", "timeout"),
    "FAKE:notjson": ("unscored", "not_json"),
    "FAKE:wrongshape": ("unscored", "wrong_shape"),
    "FAKE:refusal": ("unscored", "refusal"),
    "FAKE:length": ("unscored", "truncated"),
    "FAKE:400": ("unscored", "http_error"),
    "FAKE:echokey": ("unscored", "http_error"),
}
NO_ANSWER = {"FAKE:503", "FAKE:cut", "FAKE:slow", "FAKE:400", "FAKE:echokey"}


def body_sha(opts: live.Options, state: dict) -> str:
    return hashlib.sha256(build(opts.config, state["question"],
                                json.dumps(state["state"], ensure_ascii=False,
                                           separators=(",", ":"))).body).hexdigest()


def test_sample_states_one_verdict_each_in_order(tmp_path: Path, server: FakeServer) -> None:
    from evalstream._build.run import Options as BuildOptions
    from evalstream._build.run import run as build_run

    states_path = tmp_path / "states.jsonl"
    build_run(BuildOptions(input=str(SAMPLES / "cases.jsonl"), output=str(states_path)))
    out = tmp_path / "verdicts.jsonl"
    report = live.run(options(server, states_path, out))
    inputs = states_path.read_bytes().splitlines()
    outputs = out.read_bytes().splitlines()
    assert len(outputs) == len(inputs)  # every line is a verdict or an exact verdict
    for src, dst in zip(inputs, outputs, strict=True):
        record, verdict = json.loads(src), json.loads(dst)
        if record.get("kind") == "exact":
            assert dst == src  # passed through byte for byte
            continue
        assert (verdict["case_id"], verdict["rubric_id"]) == (record["case_id"],
                                                               record["rubric_id"])
        assert verdict["status"] == "pass"
        for copied in ("rubric_hash", "state_hash", "exposure"):
            assert verdict[copied] == record[copied]
        assert verdict["judge"] == {"model": "fake-judge-1", "provider": "openai",
                                    "base_url": f"127.0.0.1:{server.port}", "temperature": 0.0,
                                    "config_hash": report.judge.config_hash}
        assert verdict["request_id"].startswith("req_")
        assert verdict["usage"]["input_tokens"] > 0
    c = report.counts
    assert c.lines == c.blank + c.judge_states + c.exact_verdicts + c.rejected
    assert c.judge_states == c.verdicts + c.not_judged == report.requests.sent
    assert report.exit_code == 0
    # The strict verdict reader (agree, compare) reads every line.
    read = read_verdicts(str(out), Codes(), RejectSink(None))
    assert (read.summary.rejected, read.summary.verdicts) == (0, len(inputs))
    assert server.stats()["requests"] == c.judge_states


@pytest.mark.slow
def test_every_fault_is_its_status_and_cause(tmp_path: Path, server: FakeServer) -> None:
    markers = list(FAULTS)
    path = states(tmp_path, markers)
    out = tmp_path / "v.jsonl"
    # No limit on the unscored rate: most of these verdicts are unscored on purpose.
    report = live.run(options(server, path, out, max_attempts=3, timeout=0.5,
                              max_unscored_rate=None))
    got = {m: (v["status"], (v.get("error") or {}).get("cause"))
           for m, v in zip(markers, lines(out), strict=True)}
    assert got == FAULTS
    for m, v in zip(markers, lines(out), strict=True):
        if v["status"] == "unscored":
            assert v["rationale"] is None and v["error"]["detail"]
        else:
            assert "error" not in v and v["rationale"].startswith(f"fake {v['status']}")
        if m in NO_ANSWER:
            assert v["usage"] is None and v["request_id"] is None
    assert report.by_cause == {"connection": 1, "http_error": 3, "not_json": 1, "refusal": 1,
                               "timeout": 1, "truncated": 1, "wrong_shape": 1}
    assert report.exit_code == 0  # unscored verdicts are verdicts, below every one of them
    r = report.requests
    # 429x2: 2 retries; 500x1, cutx1: 1 each; 503, cut, slow: 2 each (3 attempts); 400: none.
    assert r.retried == {"connection": 3, "http 429": 2, "http 500": 1, "http 503": 2,
                         "timeout": 2}
    assert r.attempts == len(markers) + r.retries
    assert r.rate_limited == 2
    echoed = next(v for m, v in zip(markers, lines(out), strict=True) if m == "FAKE:echokey")
    assert FAKE_KEY not in echoed["error"]["detail"] and "[redacted]" in echoed["error"]["detail"]


@pytest.mark.slow  # three runs, each waiting out timeouts and backoffs (~9 s)
def test_rerun_asks_only_what_got_no_answer(tmp_path: Path, server: FakeServer) -> None:
    markers = list(FAULTS)
    path = states(tmp_path, markers)
    out = tmp_path / "v.jsonl"
    opts = options(server, path, out, max_attempts=3, timeout=0.5)
    shas = [body_sha(opts, s) for s in lines(path)]

    def asked_since(before: dict) -> set[str]:
        now = server.stats()["by_body"]
        return {m for m, sha in zip(markers, shas, strict=True)
                if now.get(sha, 0) > before["by_body"].get(sha, 0)}

    live.run(opts)
    before = server.stats()
    report = live.run(opts)
    assert asked_since(before) == NO_ANSWER
    assert report.requests.reused == len(markers) - len(NO_ANSWER)
    assert report.requests.sent == len(NO_ANSWER)
    # --retry-unscored asks again where the stored answer is unscored too.
    before = server.stats()
    opts.retry_unscored = True
    report = live.run(opts)
    unscored_answers = {m for m, (s, _) in FAULTS.items() if s == "unscored"} - NO_ANSWER
    assert asked_since(before) == NO_ANSWER | unscored_answers
    assert report.requests.retried_unscored == len(unscored_answers)


@pytest.mark.slow
def test_max_connections_is_never_exceeded(tmp_path: Path, fake) -> None:  # type: ignore[no-untyped-def]
    server = fake("--key", FAKE_KEY, "--latency", "0.05")
    path = states(tmp_path, [f"n{i}" for i in range(40)])
    report = live.run(options(server, path, tmp_path / "v.jsonl", max_connections=3))
    assert server.stats()["max_in_flight"] == 3
    assert report.requests.max_in_flight == 3


def test_duplicate_states_are_asked_once(tmp_path: Path, server: FakeServer) -> None:
    path = states(tmp_path, ["same", "same", "other", "same"])
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out))
    assert server.stats()["requests"] == 2
    assert [v["case_id"] for v in lines(out)] == ["c000", "c001", "c002", "c003"]
    assert report.counts.verdicts == 4


def test_anthropic(tmp_path: Path, server: FakeServer) -> None:
    markers = ["FAKE:pass", "FAKE:fail", "FAKE:na", "FAKE:refusal", "FAKE:length",
               "FAKE:notjson", "FAKE:429x1"]
    path = states(tmp_path, markers)
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out, provider="anthropic"))
    got = [(v["status"], (v.get("error") or {}).get("cause")) for v in lines(out)]
    assert got == [("pass", None), ("fail", None), ("na", None), ("unscored", "refusal"),
                   ("unscored", "truncated"), ("unscored", "not_json"), ("pass", None)]
    assert report.judge.provider == "anthropic"
    assert all(v["request_id"].startswith("req_") for v in lines(out))


def test_max_requests_stops_and_a_rerun_continues(tmp_path: Path, server: FakeServer) -> None:
    path = states(tmp_path, [f"n{i}" for i in range(10)])
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out, max_requests=4, max_connections=2))
    assert report.exit_code == 3 and report.stopped_by == "max-requests"
    assert len(lines(out)) == 4 and report.counts.not_judged == 6
    assert [n.case_id for n in report.not_judged] == [f"c{i:03d}" for i in range(4, 10)]
    report = live.run(options(server, path, out))
    assert report.exit_code == 0 and len(lines(out)) == 10
    assert server.stats()["requests"] == 10  # 4 + 6: nothing paid twice


def test_max_cost_stops_before_passing_it(tmp_path: Path, server: FakeServer) -> None:
    path = states(tmp_path, [f"n{i}" for i in range(12)])
    out = tmp_path / "v.jsonl"
    # ~300 input tokens + 256 output tokens at 1 USD per token: about 550 USD a request.
    report = live.run(options(server, path, out, max_cost=2000.0, price_in=1e6, price_out=1e6,
                              max_connections=1))
    assert report.exit_code == 3 and report.stopped_by == "max-cost"
    assert report.cost_usd is not None and 0 < report.cost_usd <= 2000.0
    assert report.tokenizer == "o200k_base" and report.warnings == [
        "token counts for --tpm/--max-cost: the tokenizer of fake-judge-1 is not known "
        "offline; counted with o200k_base (the default), an estimate"]
    assert 0 < report.requests.sent < 12 and report.counts.verdicts == report.requests.sent


def test_max_cost_without_prices_is_a_usage_error(tmp_path: Path, server: FakeServer) -> None:
    path = states(tmp_path, ["a"])
    with pytest.raises(UsageError, match="--max-cost needs --price-in and --price-out"):
        live.run(options(server, path, tmp_path / "v.jsonl", max_cost=1.0))


def test_max_unscored_rate(tmp_path: Path, server: FakeServer) -> None:
    path = states(tmp_path, ["FAKE:notjson", "FAKE:pass", "FAKE:pass", "FAKE:pass"])
    out = tmp_path / "v.jsonl"
    assert live.run(options(server, path, out, max_unscored_rate=0.25)).exit_code == 0
    report = live.run(options(server, path, out, max_unscored_rate=0.2))
    assert report.exit_code == 1 and report.unscored_rate == 0.25


@pytest.mark.parametrize("provider", REGISTRY)
def test_na_where_the_rubric_does_not_allow_it_is_unscored(tmp_path: Path, server: FakeServer,
                                                           provider: str) -> None:
    # Issue 25: a rubric whose question says it always applies took `na` as a verdict.
    from evalstream._checks.state import ANSWER_INSTRUCTION_NO_NA
    from evalstream._judge import inputs
    from tests.judge.support import RUBRIC

    path = states(tmp_path / "no", ["FAKE:na", "FAKE:pass"], RUBRIC + "allows_na = false\n")
    assert [r["allows_na"] for r in lines(path)] == [False, False]
    out = tmp_path / "v.jsonl"
    opts = options(server, path, out, provider=provider)
    live.run(opts)
    first, second = lines(out)
    assert (first["status"], first["rationale"], first["error"]["cause"]) == (
        "unscored", None, "na_not_allowed")
    assert "allows_na = false" in first["error"]["detail"] and second["status"] == "pass"
    # What was asked: pass or fail only, in the instruction and in the schema.
    for state in inputs.read(str(path)):
        assert isinstance(state, inputs.JudgeState) and not state.allows_na
        body = build(opts.config, state.question, state.state, state.allows_na).body
        assert body.count(b'"enum":["pass","fail"]') == 1 and b'"na"]' not in body
        assert msgspec.json.encode(ANSWER_INSTRUCTION_NO_NA)[1:-1] in body
    # The same answer to a rubric that allows `na` is a verdict.
    path = states(tmp_path / "yes", ["FAKE:na"])
    live.run(options(server, path, tmp_path / "w.jsonl", provider=provider))
    assert lines(tmp_path / "w.jsonl")[0]["status"] == "na"


def test_more_than_half_unscored_exits_1_by_default(tmp_path: Path, server: FakeServer) -> None:
    # Issue 25: without --max-unscored-rate, 3 unusable answers of 4 were a clean run.
    out = tmp_path / "v.jsonl"
    two = states(tmp_path / "two", ["FAKE:notjson", "FAKE:notjson", "FAKE:pass", "FAKE:pass"])
    assert live.run(options(server, two, out)).exit_code == 0  # half: not above 0.5
    three = states(tmp_path / "three", ["FAKE:notjson", "FAKE:400", "FAKE:notjson", "FAKE:pass"])
    report = live.run(options(server, three, out))
    assert report.exit_code == 1 and report.max_unscored_rate == 0.5
    assert live.run(options(server, three, out, max_unscored_rate=None)).exit_code == 0


def test_a_judge_that_answered_nothing_never_exits_0(tmp_path: Path, server: FakeServer) -> None:
    # Issue 25: every request refused, or nothing listening, was exit 0 with every verdict
    # unscored. Where the first requests all fail the same way (SAME_REFUSALS attempts of
    # two requests or more, before any answer) the run stops early: exit 2, one sentence with
    # the server's own message and how many requests were sent, nothing written. A run too
    # short to be stopped so is held by the unscored rate: exit 1, never 0.
    import socket

    from evalstream._judge.transport import SAME_REFUSALS
    from tests.judge.support import cli

    few = states(tmp_path / "few", [f"FAKE:400 ({n})" for n in range(3)])
    many = states(tmp_path / "many", [f"FAKE:400 ({n})" for n in range(3 * SAME_REFUSALS)])
    # Every request refused (as by a server that does not take response_format), each once:
    # three attempts are too few to stop early, so exit 1, whatever the limit.
    for limit in ([], ["--max-unscored-rate", "1"]):
        server.reset()
        out = tmp_path / f"v{len(limit)}.jsonl"
        r = cli("judge", str(few), str(out), "--model", "m", "--base-url", server.url, "-q",
                "--max-attempts", "1", *limit)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert server.stats()["requests"] == 3
        assert {v["error"]["cause"] for v in lines(out)} == {"http_error"}
    # Enough of them refused alike: stopped early, exit 2, the server's message said.
    server.reset()
    out = tmp_path / "stopped.jsonl"
    r = cli("judge", str(many), str(out), "--model", "m", "--base-url", server.url,
            "--max-attempts", "1", "--max-connections", "2")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    sent = server.stats()["requests"]
    assert SAME_REFUSALS <= sent <= SAME_REFUSALS + 2 < 3 * SAME_REFUSALS  # not the rest
    assert "refused every request the same way (HTTP 400: fake 400" in r.stderr
    assert f"{sent} requests were sent and none answered (nothing paid)" in r.stderr
    assert not out.exists()
    # Nothing listening on the port: every verdict unscored (connection), exit 1, when too
    # few attempts were made to stop early; stopped early (exit 2) otherwise.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    nobody = f"http://127.0.0.1:{port}/v1"
    out = tmp_path / "nobody.jsonl"
    r = cli("judge", str(few), str(out), "--model", "m", "--base-url", nobody,
            "--max-attempts", "1", "--max-unscored-rate", "1")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert {v["error"]["cause"] for v in lines(out)} == {"connection"}
    assert "every verdict is unscored (3 of 3): no usable verdict (exit 1)" in r.stderr
    out = tmp_path / "nobody-stopped.jsonl"
    r = cli("judge", str(many), str(out), "--model", "m", "--base-url", nobody,
            "--max-attempts", "1")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "no request reached the server: every attempt failed the same way (" in r.stderr
    assert f"127.0.0.1:{port}" in r.stderr and "none answered (nothing paid)" in r.stderr
    assert not out.exists()


def test_the_rejects_file_is_written_only_when_a_line_is_rejected(tmp_path: Path,
                                                                  server: FakeServer) -> None:
    # Issue 25: judge wrote an empty v.rejects.jsonl beside every output, unasked.
    path = states(tmp_path / "in", ["a", "b"])
    report = live.run(options(server, path, tmp_path / "v.jsonl"))
    assert report.rejects is None and not (tmp_path / "v.rejects.jsonl").exists()
    named = tmp_path / "named.rejects.jsonl"
    report = live.run(options(server, path, tmp_path / "w.jsonl", rejects=str(named)))
    assert report.rejects == str(named) and named.read_bytes() == b""  # asked for: written
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(path.read_bytes() + b"not json\n")
    report = live.run(options(server, broken, tmp_path / "x.jsonl"))
    assert report.rejects == str(tmp_path / "x.rejects.jsonl") and report.exit_code == 1
    assert len(lines(tmp_path / "x.rejects.jsonl")) == 1


def test_wrong_key_stops_the_run_and_writes_nothing(tmp_path: Path, server: FakeServer) -> None:
    path = states(tmp_path, [f"n{i}" for i in range(5)])
    opts = options(server, path, tmp_path / "v.jsonl")
    opts.environ["OPENAI_API_KEY"] = "sk-wrong"
    with pytest.raises(UsageError, match=r"server refused the request \(HTTP 401"):
        live.run(opts)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("v.")
                and p.name != "v.judge.sqlite"]


def test_a_target_that_cannot_be_created_leaves_no_temporary(tmp_path: Path,
                                                              server: FakeServer) -> None:
    # The verdicts and rejects were opened (and their temporaries made) before the report
    # failed: all three are the run's transaction, aborted together.
    path = states(tmp_path / "in", ["a", "b"])
    opts = options(server, path, tmp_path / "v.jsonl", report=str(tmp_path / "gone" / "r.json"))
    with pytest.raises(OutputError, match="cannot create .*gone/r.json"):
        live.run(opts)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "v.judge.sqlite"]


def test_missing_key_for_the_public_endpoint(tmp_path: Path, server: FakeServer) -> None:
    from evalstream._judge.request import JudgeConfig

    path = states(tmp_path, ["a"])
    opts = live.Options(input=str(path), output=str(tmp_path / "v.jsonl"),
                        config=JudgeConfig(model="gpt-4.1-mini"), environ={})
    with pytest.raises(UsageError, match="set OPENAI_API_KEY in the environment"):
        live.run(opts)


def test_rejects_are_written_and_counted(tmp_path: Path, server: FakeServer) -> None:
    path = states(tmp_path, ["a", "b"])
    good = path.read_bytes().splitlines()
    edited = good[1].replace(b"Please help.", b"Please help!")
    bad = [b'{"case_id":"x1","rubric_id":"r","status":"pass"}', b"not json", b"", edited]
    path.write_bytes(b"\n".join([good[0], *bad]) + b"\n")
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out))
    assert report.exit_code == 1
    assert (report.counts.lines, report.counts.judge_states, report.counts.rejected,
            report.counts.blank) == (5, 1, 3, 1)
    rejects = lines(tmp_path / "v.rejects.jsonl")
    assert [(r["line"], r["path"]) for r in rejects] == [(2, "$.status"), (3, "$"),
                                                        (5, "$.state_hash")]
    assert "already a verdict" in rejects[0]["error"]
    assert "state was changed after build wrote it" in rejects[2]["error"]
    assert len(lines(out)) == 1


def test_store_holds_answers_not_keys(tmp_path: Path, server: FakeServer) -> None:
    path = states(tmp_path, ["FAKE:pass", "FAKE:notjson", "FAKE:503"])
    opts = options(server, path, tmp_path / "v.jsonl", max_attempts=1)
    live.run(opts)
    store = Store(str(tmp_path / "v.judge.sqlite"))
    try:
        assert store.count() == 2  # the 503 got no answer: not stored
    finally:
        store.close()


@pytest.mark.slow
def test_rpm_and_tpm_pace_the_requests(tmp_path: Path, server: FakeServer) -> None:
    import time

    path = states(tmp_path, [f"n{i}" for i in range(230)])
    started = time.monotonic()
    # 1,200 a minute: 20 a second, 200 at once; the 30 after them take 1.5 s.
    report = live.run(options(server, path, tmp_path / "v.jsonl", rpm=1200.0,
                              max_connections=32))
    elapsed = time.monotonic() - started
    assert report.counts.verdicts == 230 and 1.2 <= elapsed < 10
    path = states(tmp_path / "t", [f"t{i}" for i in range(80)])
    opts = options(server, path, tmp_path / "t.jsonl", tpm=120_000.0, max_output_tokens=16,
                   max_connections=32)
    started = time.monotonic()
    report = live.run(opts)
    elapsed = time.monotonic() - started
    # Each request counts its exact input tokens and its 16 output tokens: 20,000 tokens go
    # at once, the rest at 2,000 a second.
    from evalstream._judge import tokens
    from evalstream._judge.request import system_text

    costs = [tokens.request_tokens(system_text(s["question"]), json.dumps(
        s["state"], ensure_ascii=False, separators=(",", ":")), "o200k_base") + 16
        for s in lines(path)]
    assert report.tokenizer == "o200k_base"  # fake-judge-1's family is unknown: the default
    expected = max(0.0, sum(costs) - 20_000) / 2_000
    assert report.counts.verdicts == 80 and expected > 1.0
    assert expected * 0.8 <= elapsed < expected + 8


def test_a_store_that_fails_stops_the_run(tmp_path: Path, server: FakeServer,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from evalstream.errors import OutputError

    path = states(tmp_path, [f"n{i}" for i in range(50)])
    calls = []

    def put(self: Store, *args: object) -> None:
        calls.append(1)
        raise OutputError("cannot write the answer store: disk full")

    monkeypatch.setattr(Store, "put", put)
    with pytest.raises(OutputError, match="disk full"):
        live.run(options(server, path, tmp_path / "v.jsonl", max_connections=2))
    assert server.stats()["requests"] <= 4  # not 50 answers paid for and lost
    assert not (tmp_path / "v.jsonl").exists()


def test_the_python_api(tmp_path: Path, server: FakeServer,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    import evalstream

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    path = states(tmp_path, ["FAKE:fail", "FAKE:na"])
    report = evalstream.judge_verdicts(path, tmp_path / "v.jsonl", "fake-judge-1",
                                       base_url=server.url, max_connections=2)
    assert isinstance(report, evalstream.JudgeReport)
    assert report.by_status == {"pass": 0, "fail": 1, "na": 1, "unscored": 0}
    first = msgspec.json.decode((tmp_path / "v.jsonl").read_bytes().splitlines()[0],
                                type=evalstream.JudgeVerdict)
    assert first.status == "fail" and first.judge.model == "fake-judge-1"


@pytest.mark.parametrize("provider", REGISTRY)
def test_an_answer_the_store_cannot_take_as_sent_is_stored_and_never_paid_again(
        tmp_path: Path, server: FakeServer, provider: str) -> None:
    """usage 2**63 (SQLite's INTEGER overflowed) and a request id header that is not UTF-8
    crashed the run (exit 70) after the answer was paid for and before it was stored, so
    every re-run paid again (issue 23)."""
    path = states(tmp_path, ["FAKE:bigusage", "FAKE:latin1id", "FAKE:pass"])
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out, provider=provider))
    assert report.exit_code == 0 and report.requests.answered == 3
    got = lines(out)
    assert [v["status"] for v in got] == ["pass", "pass", "pass"]
    assert got[0]["usage"]["input_tokens"] == 2**63  # as the server said, in the verdict
    assert got[1]["request_id"] == "caf\\xe9"  # the byte kept, as an escape
    store = Store(str(tmp_path / "v.judge.sqlite"))
    assert store.count() == 3
    assert store.get(build(options(server, path, out, provider=provider).config,
                           *_question_and_state(path, 0)).key).input_tokens is None  # type: ignore[union-attr]
    store.close()
    before, written = server.stats()["requests"], out.read_bytes()
    again = live.run(options(server, path, out, provider=provider))
    assert server.stats()["requests"] == before and again.requests.reused == 3
    assert out.read_bytes() == written


def _question_and_state(path: Path, n: int) -> tuple[str, str]:
    from evalstream._judge import inputs

    item = [x for x in inputs.read(str(path)) if isinstance(x, inputs.JudgeState)][n]
    return item.question, item.state


def test_a_states_file_replaced_between_passes_is_not_read_in_its_place(
        tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new build renamed over the input during the run: pass 2 read the other file and
    wrote no verdict for any state asked about, exit 0 (issue 23). Both passes now read the
    file the run opened."""
    path = states(tmp_path / "a", [f"a{i}" for i in range(6)])
    other = states(tmp_path / "b", [f"b{i}" for i in range(6)])
    ask = live._ask_all

    def ask_then_replace(*args: object) -> None:
        ask(*args)  # type: ignore[arg-type]
        other.replace(path)  # as `build` commits: a rename into place

    monkeypatch.setattr(live, "_ask_all", ask_then_replace)
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, path, out))
    assert (report.counts.verdicts, report.counts.not_judged, report.exit_code) == (6, 0, 0)
    assert [v["status"] for v in lines(out)] == ["pass"] * 6
    assert server.stats()["requests"] == 6


@pytest.mark.parametrize("when", ["between passes", "during pass 2"])
def test_a_states_file_changed_in_place_stops_the_run(
        tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    path = states(tmp_path / "a", [f"a{i}" for i in range(6)])
    other = states(tmp_path / "b", [f"b{i}" for i in range(7)]).read_bytes()
    if when == "between passes":
        ask = live._ask_all

        def ask_then_rewrite(*args: object) -> None:
            ask(*args)  # type: ignore[arg-type]
            path.write_bytes(other)  # `cat new > states.jsonl`: the same file, other bytes

        monkeypatch.setattr(live, "_ask_all", ask_then_rewrite)
    else:
        write = live.Writer.write

        def write_then_append(self: live.Writer, *args: object) -> None:
            write(self, *args)  # type: ignore[arg-type]
            with open(path, "ab") as f:
                f.write(other[:100])

        monkeypatch.setattr(live.Writer, "write", write_then_append)
    out = tmp_path / "v.jsonl"
    with pytest.raises(InputError, match=f"{path} changed while it was read .* rename it into "
                       "place instead"):
        live.run(options(server, path, out))
    assert not out.exists()
    store = Store(str(tmp_path / "v.judge.sqlite"))
    assert store.count() == 6  # answers received are kept
    store.close()


def test_a_store_that_fails_to_renew_claims_stops_the_run(
        tmp_path: Path, fake, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from evalstream.errors import OutputError

    server = fake("--key", FAKE_KEY, "--latency", "0.05")
    path = states(tmp_path, [f"n{i}" for i in range(20)])

    def renew(self: Store) -> None:
        raise OutputError("cannot write the answer store: disk full")

    monkeypatch.setattr(live, "LEASE", 0.02)  # renewed every 5 ms
    monkeypatch.setattr(Store, "renew", renew)
    with pytest.raises(OutputError, match="disk full"):
        live.run(options(server, path, tmp_path / "v.jsonl", max_connections=2))
    assert server.stats()["requests"] <= 4


def test_states_left_without_a_verdict_never_exit_0(
        tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pass 1 asked nothing and no limit stopped it: every state is listed as not judged and
    the run exits 3, as a run --max-requests stopped does, never 0 with nothing judged."""
    path = states(tmp_path, [f"c{i}" for i in range(3)])
    monkeypatch.setattr(live, "_ask_all", lambda *args: None)
    report = live.run(options(server, path, tmp_path / "v.jsonl"))
    assert (report.counts.verdicts, report.counts.not_judged, report.exit_code) == (0, 3, 3)
    assert report.stopped_by is None and len(report.not_judged) == 3
