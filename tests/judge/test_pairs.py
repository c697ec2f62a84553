"""Judging pairwise states (issue 28): both orders asked in the pairwise form, one verdict a
pair, lone orders rejected, live and batch alike. The fake judge (a real process) names the
response holding ``[better]``, or a tie."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from evalstream._build.run import Options as BuildOptions
from evalstream._build.run import run as build_run
from evalstream._judge import answer, inputs, live, pairs, verdict
from evalstream._judge.providers import REGISTRY
from evalstream._judge.request import PAIR_ANSWER_INSTRUCTION, JudgeConfig, build
from evalstream._judge.store import Failure, Stored
from evalstream._verdicts.pairwise import decide
from evalstream._verdicts.records import JudgeInfo, decoder
from evalstream.errors import UsageError
from tests.judge.batch.support import collected, prepared, results, write_split
from tests.judge.support import FAKE_KEY, FakeServer, lines, options

RUBRIC = """
[[rubric]]
id = "better"
kind = "pairwise"
question = "Which response answers user_input better?"
shows = ["user_input", "assistant_response"]
"""


def pair_states(folder: Path, specs: list[tuple[str, str]]) -> Path:
    """A build --pair-with output: pair i's run A and run B responses are ``specs[i]``."""
    folder.mkdir(parents=True, exist_ok=True)
    a = [{"id": f"p{i:03d}", "input": f"question {i}", "output": x} for i, (x, _) in
         enumerate(specs)]
    b = [{"id": f"p{i:03d}", "input": f"question {i}", "output": y} for i, (_, y) in
         enumerate(specs)]
    for name, cases in (("a", a), ("b", b)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "pairwise.toml").write_text(RUBRIC)
    out = folder / "pairs.jsonl"
    build_run(BuildOptions(input=str(folder / "a.jsonl"), output=str(out),
                           pair_with=str(folder / "b.jsonl"),
                           rubric_files=[str(folder / "pairwise.toml")]))
    return out


def test_the_decision_of_every_two_answers() -> None:
    table = {("response_1", "response_2"): ("a", True), ("response_2", "response_1"): ("b", True),
             ("tie", "tie"): ("tie", True), ("response_1", "response_1"): ("tie", False),
             ("response_2", "response_2"): ("tie", False), ("tie", "response_1"): ("tie", False),
             ("response_1", "tie"): ("tie", False), ("tie", "response_2"): ("tie", False),
             ("response_2", "tie"): ("tie", False)}
    for (first, second), expected in table.items():
        assert decide(first, second) == expected, (first, second)


@pytest.mark.parametrize(("data", "status", "cause"), [
    (b'{"reason": "the first quotes it", "better": "response_1"}', "response_1", None),
    (b'{"better": "tie", "reason": "both"}', "tie", None),
    (b'{"status": "pass", "reason": "a verdict"}', "unscored", "wrong_shape"),
    (b'{"reason": "x", "better": "response_3"}', "unscored", "wrong_shape"),
    (b'{"reason": "x", "better": "response_1", "better": "response_2"}', "unscored",
     "ambiguous"),
    (b"response_1", "unscored", "not_json"),
])
def test_a_pairwise_answer_is_read_in_its_own_form_only(data: bytes, status: str,
                                                        cause: str | None) -> None:
    parsed = answer.read_json(data, None, None, answer.PREFERENCE)
    assert (parsed.status, parsed.cause) == (status, cause)
    # ... and a preference where a verdict was asked for is never a status either
    assert answer.read_json(b'{"reason": "x", "better": "tie"}', None, None).cause == \
        "wrong_shape"


@pytest.mark.parametrize("provider", REGISTRY)
def test_a_pairwise_request_asks_for_the_reason_first(provider: str) -> None:
    config = JudgeConfig(model="m", provider=provider, base_url="http://127.0.0.1:9/v1")
    pointwise = config.body("Q?", "{}")
    pairwise = config.pairwise.body("Q?", "{}")
    assert b'"better"' in pairwise and b'"better"' not in pointwise
    assert pairwise.index(b'"reason"') < pairwise.index(b'"better"')  # in the schema too
    assert json.dumps(PAIR_ANSWER_INSTRUCTION)[1:-1].encode() in pairwise
    assert config.pairwise.hash != config.hash
    assert config.pairwise.pairwise.hash == config.pairwise.hash


def _state(order: str, key: str = "k", case_id: str = "c", line: int = 1,
           state_hash: str = "h") -> inputs.JudgeState:
    return inputs.JudgeState(line, case_id, "better", "Q", "{}", msgspec.Raw(b'{"shown":[]}'),
                             "rh", state_hash, 0, allows_na=False,
                             pair=inputs.Pair(key, order, (3, 4)))  # type: ignore[arg-type]


def test_a_lone_order_is_a_reject_with_a_sentence() -> None:
    from evalstream._checks.state import pair_key

    good = pair_key("h1", "h2")
    items = [_state("ab", good, line=1, state_hash="h1"), _state("ba", good, line=2,
                                                                  state_hash="h2"),
             _state("ba", good, line=3, state_hash="h2"),  # no order ab before it
             _state("ab", good, line=4, state_hash="h1"),  # then a key that does not tie
             _state("ba", "other", line=5, state_hash="h2"),
             _state("ab", good, line=6, state_hash="h1")]  # the last line
    orders = pairs.Orders()
    out = list(orders.items(items))
    assert isinstance(out[0], pairs.Pair) and (out[0].first.line, out[0].second.line) == (1, 2)
    rejected = out[1:]
    assert [r.line for r in rejected] == [3, 4, 5, 6]  # type: ignore[union-attr]
    assert all(r.path == "$.pair" for r in rejected)  # type: ignore[union-attr]
    assert "the line before it is not its order ab" in rejected[0].error  # type: ignore[union-attr]
    assert "does not tie it" in rejected[1].error  # type: ignore[union-attr]
    assert "its order ba is missing" in rejected[3].error  # type: ignore[union-attr]
    assert orders.rejected == 4 and orders.rejected_by_kind == {pairs.UNPAIRED: 4}


def _stored(better: str) -> Stored:
    body = json.dumps({"id": "x", "choices": [{"message": {"content": json.dumps(
        {"reason": f"says {better}", "better": better})}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2}}).encode()
    return Stored(body, "rid", 10, 2)


@pytest.mark.parametrize(("first", "second", "status", "agreed"), [
    ("response_1", "response_2", "pass", True), ("response_2", "response_1", "fail", True),
    ("tie", "tie", "na", True), ("response_1", "response_1", "na", False)])
def test_a_pair_verdict_from_its_two_answers(first: str, second: str, status: str,
                                             agreed: bool) -> None:
    config = JudgeConfig(model="m", base_url="http://127.0.0.1:9/v1")
    info = JudgeInfo("m", "openai", "h", 0.0, config.pairwise.hash)
    ab, ba = _state("ab", state_hash="h1"), _state("ba", state_hash="h2")
    v = verdict.pair_answered(info, config.pairwise, ab, ba, _stored(first), _stored(second))
    assert (v.status, v.pair.agreed if v.pair else None) == (status, agreed)
    assert v.usage is not None and (v.usage.input_tokens, v.usage.output_tokens) == (20, 4)
    assert v.rationale == f"A first ({first}): says {first}\nB first ({second}): says {second}"
    line = msgspec.json.encode(v)
    decoder().decode(line)  # what judge writes, the verdict reader reads
    failed = verdict.pair_answered(info, config.pairwise, ab, ba, _stored(first),
                                   Failure("timeout", "no answer"))
    assert failed.status == "unscored" and failed.error is not None
    assert (failed.error.cause, failed.error.detail) == ("timeout", "B first: no answer")
    assert failed.pair is not None and (failed.pair.decision, failed.pair.agreed) == (None, None)
    wrong = Stored(_stored("tie").body.replace(b"better", b"status"), None, 1, 1)
    assert verdict.pair_answered(info, config.pairwise, ab, ba, wrong, _stored("tie")).status \
        == "unscored"


SPECS = [("A is right [better]", "B is wrong"), ("A is wrong", "B is right [better]"),
         ("same", "same"), ("A [better]", "B"), ("A", "B [better] and longer"),
         ("A FAKE:notjson", "B")]


@pytest.mark.parametrize("provider", REGISTRY)
def test_judge_asks_both_orders_and_writes_one_verdict_a_pair(
        tmp_path: Path, fake: Callable[..., FakeServer], provider: str) -> None:
    server = fake("--key", FAKE_KEY)
    src = pair_states(tmp_path / "in", SPECS)
    out = tmp_path / "verdicts.jsonl"
    report = live.run(options(server, src, out, provider))
    c = report.counts
    assert c.judge_states == 2 * len(SPECS) and c.verdicts == c.pairs == len(SPECS)
    assert c.judge_states == c.verdicts + c.not_judged + c.pairs
    assert c.lines == c.blank + c.judge_states + c.exact_verdicts + c.rejected
    # Both orders were sent (but "same": its two orders are one request), in the pairwise form.
    assert server.stats()["requests"] == 2 * len(SPECS) - 1
    found = lines(out)
    assert [v["status"] for v in found] == ["pass", "fail", "na", "pass", "fail", "unscored"]
    assert [v["pair"]["agreed"] for v in found][:5] == [True] * 5  # "same": a tie, twice
    assert found[5]["error"]["cause"] == "not_json"
    assert all(v["judge"]["config_hash"] == options(server, src, out, provider).config
               .pairwise.hash for v in found)
    again = tmp_path / "again.jsonl"
    live.run(options(server, src, again, provider, store=str(tmp_path / "verdicts.judge.sqlite")))
    assert again.read_bytes() == out.read_bytes()
    assert server.stats()["requests"] == 2 * len(SPECS) - 1  # nothing asked twice


def test_a_lone_order_in_the_input_is_rejected_and_never_sent(
        tmp_path: Path, fake: Callable[..., FakeServer]) -> None:
    server = fake("--key", FAKE_KEY)
    src = pair_states(tmp_path / "in", SPECS[:3])
    kept = src.read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(kept[:3] + kept[4:]) + "\n")  # the second pair's order ba gone
    report = live.run(options(server, cut, tmp_path / "v.jsonl"))
    assert (report.counts.verdicts, report.counts.rejected) == (2, 1)
    assert report.rejected_by_kind == {pairs.UNPAIRED: 1}
    assert server.stats()["requests"] == 3  # two pairs, one of them one request
    rejects = lines(tmp_path / "v.rejects.jsonl")
    assert [(r["line"], r["path"]) for r in rejects] == [(3, "$.pair")]


def test_dry_run_and_show_request_know_the_pairwise_form(tmp_path: Path) -> None:
    from evalstream._judge.dryrun import dry_run

    src = pair_states(tmp_path / "in", SPECS[:2])
    opts = live.Options(input=str(src), output=str(tmp_path / "v.jsonl"),
                        config=JudgeConfig(model="gpt-4.1-mini"))
    d = dry_run(opts)
    assert (d.judge_states, d.to_send) == (4, 4)
    first = next(s for s in inputs.read(str(src)) if isinstance(s, inputs.JudgeState))
    assert b'"better"' in live.request_of(opts.config, first).body
    assert live.request_of(opts.config, first) == build(opts.config.pairwise, first.question,
                                                        first.state)


_USAGE_AND_ID = re.compile(rb'"usage":(null|\{[^{}]*\}),"request_id":(null|"[^"]*")')


# The providers whose batch form evalstream speaks (gemini and bedrock: judge live only).
BATCHED = [name for name, p in REGISTRY.items() if not p.batch_none]


@pytest.mark.parametrize("provider", BATCHED)
def test_a_batch_pair_verdict_is_the_live_one_but_for_usage_and_request_ids(
        tmp_path: Path, fake: Callable[..., FakeServer], provider: str) -> None:
    server = fake("--key", FAKE_KEY)
    src = pair_states(tmp_path / "in", SPECS)
    live_out = tmp_path / "live.jsonl"
    live.run(options(server, src, live_out, provider))
    folder = tmp_path / "batch"
    prep = prepared(src, folder, provider, server.url)
    assert prep.counts.judge_states == 2 * len(SPECS) and prep.counts.requests == 11
    files = write_split([r for _, r in results(folder)], tmp_path / "results", 2)
    out = tmp_path / "batch.jsonl"
    done = collected(folder, out, files)
    assert (done.counts.verdicts, done.counts.pairs, done.counts.missing) == (6, 6, 0)
    assert done.counts.judge_states == done.counts.verdicts + done.counts.missing + \
        done.counts.pairs
    for a, b in zip(live_out.read_bytes().splitlines(), out.read_bytes().splitlines(),
                    strict=True):
        assert _USAGE_AND_ID.sub(b"", a) == _USAGE_AND_ID.sub(b"", b)
    # One order without a result: the pair is missing (both its states listed), never judged.
    short = [r for _, r in results(folder)][1:]
    alone = collected(folder, tmp_path / "short.jsonl",
                      write_split(short, tmp_path / "short", 1), store=str(tmp_path / "s.db"))
    assert alone.counts.missing == 2 and alone.counts.verdicts == len(SPECS) - 1
    assert {m.reason for m in alone.missing} == {"no result", "its other order has no verdict"}


def _decoded(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_unscored_threshold_and_the_early_stop_hold_for_pairs(
        tmp_path: Path, fake: Callable[..., FakeServer]) -> None:
    # Issue 25 and 27 met issue 28: a pair is one verdict, so the default unscored threshold
    # (exit 1 above half) counts pairs; a server refusing every request alike stops a
    # pairwise run early as any other (exit 2 from the CLI: UsageError), nothing written.
    server = fake("--key", FAKE_KEY)
    specs = [("A FAKE:notjson", "B"), ("A [better]", "B FAKE:notjson"), ("A [better]", "B")]
    src = pair_states(tmp_path / "in", specs)
    out = tmp_path / "v.jsonl"
    report = live.run(options(server, src, out))
    assert (report.by_status["unscored"], report.by_status["pass"]) == (2, 1)
    assert report.counts.verdicts == report.counts.pairs == 3
    assert report.exit_code == 1 and report.max_unscored_rate == 0.5
    assert live.run(options(server, src, out, max_unscored_rate=None)).exit_code == 0
    refusing = fake("--refuse", "400")
    many = pair_states(tmp_path / "many", [(f"A{i}", f"B{i}") for i in range(30)])
    with pytest.raises(UsageError, match=r"refused every request the same way \(HTTP 400"):
        live.run(options(refusing, many, tmp_path / "w.jsonl", max_connections=4))
    assert refusing.stats()["requests"] <= 8 + 4  # not 60 requests: both orders of 30 pairs
    assert not (tmp_path / "w.jsonl").exists()
