"""``judge --confidence`` (issue 29): the status token's probabilities, read by position
against the fake server's OpenAI log probabilities (with and without the status token among
the top ones, split over tokens, after a quote, escaped, next to a reason that says "pass"),
stored with the answer, counted in the report; a panel's share of votes; none from a provider
without log probabilities, said so."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import evalstream
from evalstream._judge.answer import read_text, status_at
from evalstream._judge.logprobs import Token, read
from tests.judge.fake_server import status_probability
from tests.judge.support import KEYS, FakeServer, cli, lines, states


def judge(server: FakeServer, src: Path, out: Path, **options: Any) -> Any:
    return evalstream.judge(src, out, options.pop("model", "fake-judge-1"),
                            base_url=server.url, environ=KEYS, **options)


def expected(status: str, p: float) -> dict[str, float]:
    """The fake's distribution: the status p, the other two the rest 3:1 (pass, fail, na)."""
    others = [s for s in ("pass", "fail", "na") if s != status]
    return {status: p, others[0]: (1 - p) * 0.75, others[1]: (1 - p) * 0.25}


CASES = [  # marker, status, how it is read, the confidence (None: the fake's function)
    ("FAKE:pass", "pass", "read", None),
    ("FAKE:fail", "fail", "read", None),
    ("FAKE:na", "na", "read", None),
    ("FAKE:lpsplit", "pass", "split", None),
    ("FAKE:lpquote", "pass", "read", None),
    ("FAKE:lptrap", "fail", "read", None),
    ("FAKE:fenced", "pass", "read", None),
    ("FAKE:think", "pass", "read", None),
    ("FAKE:lpabsent", "pass", "own_logprob", {"pass": 0.1, "fail": 0.6, "na": 0.3}),
    ("FAKE:lponly", "pass", "alone", {"pass": 1.0, "fail": 0.0, "na": 0.0}),
    ("FAKE:lpescaped", "pass", "unaligned", "none"),
    ("FAKE:lpnone", "pass", "none", "none"),
]


def test_each_answer_is_read_by_position_and_counted(tmp_path: Path,
                                                     server: FakeServer) -> None:
    src = states(tmp_path, [m for m, _, _, _ in CASES])
    out = tmp_path / "verdicts.jsonl"
    report = judge(server, src, out, confidence=True)
    verdicts = {v["case_id"]: v for v in lines(out)}
    for i, (_, status, _, want) in enumerate(CASES):
        v = verdicts[f"c{i:03d}"]
        assert v["status"] == status, v
        if want == "none":
            assert "confidence" not in v, v
            continue
        probs = want or expected(status, status_probability(v["request_id"]))
        c = v["confidence"]
        assert c["source"] == "logprobs"
        assert {s: c[s] for s in ("pass", "fail", "na")} == pytest.approx(probs)
        assert math.isclose(c["pass"] + c["fail"] + c["na"], 1.0)
    # lptrap: the reason's "pass" (0.99 sure) is never the token read.
    assert verdicts["c005"]["confidence"]["fail"] > 0.5
    readings: dict[str, int] = {}
    for _, _, how, _ in CASES:
        readings[how] = readings.get(how, 0) + 1
    assert report.confidence is not None and report.confidence.source == "logprobs"
    assert {k: v for k, v in report.confidence.by_reading.items() if v} == readings
    assert report.confidence.verdicts == len(CASES) - 2
    assert "without log probabilities" in (report.confidence.note or "")
    # The request asked for them: logprobs and top_logprobs in every body.
    body = json.loads(evalstream.judge_request("c000", "helpful", src, tmp_path / "x.jsonl",
                                               "fake-judge-1", base_url=server.url,
                                               confidence=True).body)
    assert body["logprobs"] is True and body["top_logprobs"] == 10


def test_a_rerun_reads_the_store_and_without_the_flag_nothing_changes(
        tmp_path: Path, server: FakeServer) -> None:
    src = states(tmp_path, ["FAKE:pass", "FAKE:fail"])
    plain_out, first, again = (tmp_path / n for n in ("plain.jsonl", "a.jsonl", "b.jsonl"))
    plain = judge(server, src, plain_out)
    assert plain.confidence is None and all("confidence" not in v for v in lines(plain_out))
    asked = server.stats()["requests"]
    judge(server, src, first, confidence=True, store=tmp_path / "a.judge.sqlite")
    assert server.stats()["requests"] == asked + 2  # other requests: other store keys
    judge(server, src, again, confidence=True, store=tmp_path / "a.judge.sqlite")
    assert server.stats()["requests"] == asked + 2  # paid nothing
    assert first.read_bytes() == again.read_bytes()
    # Without the flag, the request bytes (so the keys) are those before issue 29.
    body = evalstream.judge_request("c000", "helpful", src, tmp_path / "x.jsonl",
                                    "fake-judge-1", base_url=server.url).body
    assert b"logprobs" not in body


def test_a_panel_gives_the_share_of_its_votes(tmp_path: Path, server: FakeServer) -> None:
    src = states(tmp_path, ["FAKE@*:pass/fail/pass", "FAKE@*:pass/500/500"])
    out = tmp_path / "v.jsonl"
    report = judge(server, src, out, samples=3, confidence=True, temperature=0.7,
                   max_attempts=1)
    first, second = lines(out)
    assert first["confidence"] == {"pass": pytest.approx(2 / 3), "fail": pytest.approx(1 / 3),
                                   "na": 0.0, "source": "samples"}
    assert second["status"] == "unscored" and "confidence" not in second  # no quorum
    assert report.confidence.source == "samples" and report.confidence.verdicts == 1


def test_anthropic_has_none_and_says_so(tmp_path: Path, server: FakeServer) -> None:
    src = states(tmp_path, ["FAKE:pass"])
    out = tmp_path / "v.jsonl"
    report = evalstream.judge(src, out, "claude-fake", provider="anthropic",
                              base_url=server.url, environ=KEYS, confidence=True)
    assert "confidence" not in lines(out)[0]
    assert report.confidence.source is None and report.confidence.verdicts == 0
    assert "anthropic gives no log probabilities" in report.confidence.note
    assert "--samples" in report.confidence.note


@pytest.mark.slow
def test_the_command_line_flag(tmp_path: Path, server: FakeServer) -> None:
    src = states(tmp_path, ["FAKE:fail"])
    out = tmp_path / "v.jsonl"
    done = cli("judge", str(src), str(out), "--model", "fake-judge-1", "--base-url", server.url,
               "--confidence", "--quiet")
    assert done.returncode == 0, done.stderr
    assert lines(out)[0]["confidence"]["source"] == "logprobs"


@pytest.mark.parametrize("content", [
    '{"reason": "says \\"status\\": \\"pass\\"", "status": "fail"}',
    '{ "status" :\n "na" , "reason": "x"}',
    '{"reason": "a", "st\\u0061tus": "pass"}',
    '```json\n{"reason": "pass", "status": "fail"}\n```',
    '<think>{"status": "pass"}</think>\n {"reason": "r", "status": "fail"}',
])
def test_the_status_is_found_by_the_answers_structure(content: str) -> None:
    parsed = read_text(content, None, None)
    assert parsed.at is not None
    at = parsed.at + (status_at(content[parsed.at:]) or 0)
    assert content[at:].startswith(parsed.status + '"')
    assert content[at - 1] == '"'


def test_tokens_that_do_not_spell_the_answer_are_not_read() -> None:
    content = '{"reason": "r", "status": "pass"}'
    parsed = read_text(content, None, None)
    tokens = [Token(content[:-7], -0.1), Token("pass", -0.1, None, []), Token('"}', -0.1)]
    assert read(parsed, content, tokens).confidence_read == "unaligned"
    wrong = [Token(content[:-6], -0.1), Token('pass"}\n', -0.1)]  # one byte too many
    assert read(parsed, content, wrong).confidence is None
    right = [Token(content[:-6], -0.1), Token('pass"}', -0.1)]
    assert read(parsed, content, right).confidence is not None


def test_batch_files_ask_for_them_and_collect_reads_them(
        tmp_path: Path, fake: Any) -> None:
    """batch prepare --confidence: the request lines ask for log probabilities, and the
    collected verdicts carry the confidence the live judge's would (the same parser)."""
    from evalstream._judge.batch import remote
    from tests.judge.batch.support import collected
    from tests.judge.support import FAKE_KEY

    server = fake("--key", FAKE_KEY, "--batch-polls", "2")
    src = states(tmp_path, ["FAKE:pass", "FAKE:lpsplit", "FAKE:fail"])
    folder = tmp_path / "batch"
    evalstream.batch_prepare(src, folder, "fake-judge-1", base_url=server.url, confidence=True)
    sent = [json.loads(x) for p in sorted(folder.glob("requests-*.jsonl"))
            for x in p.read_text().splitlines()]
    assert all(line["body"]["logprobs"] is True for line in sent)
    assert remote.submit(remote.Options(folder=str(folder), environ=KEYS, poll=0.02)
                         ).exit_code == 0
    assert remote.status(remote.Options(folder=str(folder), environ=KEYS, poll=0.02,
                                        wait=True)).exit_code == 0
    out = tmp_path / "collected.jsonl"
    assert collected(folder, out, []).exit_code == 0
    verdicts = lines(out)
    assert [v["status"] for v in verdicts] == ["pass", "pass", "fail"]
    for v in verdicts:
        c = v["confidence"]
        assert c["source"] == "logprobs" and c[v["status"]] >= 0.55
        assert math.isclose(c["pass"] + c["fail"] + c["na"], 1.0)


# -- issue 29 met issues 25 and 28 (the merge) ---------------------------------------------------
def test_where_na_is_not_allowed_the_confidence_is_over_pass_and_fail(
        tmp_path: Path, server: FakeServer) -> None:
    """A rubric with ``allows_na = false``: the na token's probability is dropped and pass and
    fail renormalised to sum to 1 (``answer.allowed``); an na answered all the same is
    unscored (na_not_allowed) and carries no confidence."""
    from tests.judge.support import RUBRIC

    src = states(tmp_path, ["FAKE:pass", "FAKE:fail", "FAKE:na"], RUBRIC + "allows_na = false\n")
    out = tmp_path / "v.jsonl"
    report = judge(server, src, out, confidence=True)
    passed, failed, na = lines(out)
    for v, status in ((passed, "pass"), (failed, "fail")):
        raw = expected(status, status_probability(v["request_id"]))
        kept = raw["pass"] + raw["fail"]
        assert v["status"] == status
        assert {s: v["confidence"][s] for s in ("pass", "fail", "na")} == pytest.approx(
            {"pass": raw["pass"] / kept, "fail": raw["fail"] / kept, "na": 0.0})
    assert na["status"] == "unscored" and na["error"]["cause"] == "na_not_allowed"
    assert "confidence" not in na
    assert report.confidence.verdicts == 2


def test_a_pair_asks_no_log_probabilities_and_says_so(tmp_path: Path,
                                                      server: FakeServer) -> None:
    """A pairwise state's preference has no pass/fail/na token: with --confidence its
    requests are the bytes (so the store keys) asked without it, its verdict carries none,
    and the report says why."""
    from tests.judge.test_pairs import SPECS, pair_states

    src = pair_states(tmp_path / "in", SPECS[:3])
    store = tmp_path / "pairs.judge.sqlite"
    plain = tmp_path / "plain.jsonl"
    judge(server, src, plain, store=store)
    asked = server.stats()["requests"]
    out = tmp_path / "v.jsonl"
    report = judge(server, src, out, confidence=True, store=store)
    assert server.stats()["requests"] == asked  # the same keys: nothing asked again
    assert out.read_bytes() == plain.read_bytes()
    assert all("confidence" not in v for v in lines(out))
    assert report.confidence.verdicts == 0
    assert "3 pairwise verdicts carry none" in (report.confidence.note or "")
    body = evalstream.judge_request("p000", "better", src, tmp_path / "x.jsonl",
                                    "fake-judge-1", base_url=server.url, confidence=True).body
    assert b"logprobs" not in body
