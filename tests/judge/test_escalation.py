"""The escalation rule (issue 29): a first judge everywhere, a stronger second only where the
first is unsure (its status's probability below the threshold or not read, its samples split,
no scored vote), the second then deciding; asked in two stages against the fake server, read
again from the store, counted and priced in the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import evalstream
from evalstream._judge.jury import parse
from evalstream.errors import JuryError
from tests.judge.support import KEYS, FakeServer, lines, states
from tests.judge.test_jury import jury_file

# (the first judge's fault, the second's), whether the second is asked, the decision
STATES = [("pass", "fail", False, "pass"),  # sure (0.55 or more, above 0.5): trusted
          ("lpabsent", "fail", True, "fail"),  # its pass had 0.1
          ("notjson", "na", True, "na"),  # no scored vote
          ("lponly", "fail", False, "pass"),  # its pass had 1.0
          ("lpescaped", "pass", True, "pass")]  # no probability read: never trusted
JURORS = [{"name": "small", "model": "small", "price_in": 1.0, "price_out": 1.0},
          {"name": "strong", "model": "strong", "price_in": 10.0, "price_out": 30.0}]


def judge(src: Path, out: Path, jury: Path, **options: Any) -> Any:
    return evalstream.judge(src, out, jury=jury, environ=KEYS, max_attempts=1, **options)


def test_the_second_judge_is_asked_only_where_the_first_is_unsure(
        tmp_path: Path, server: FakeServer) -> None:
    src = states(tmp_path / "in", [f"FAKE@small:{a} FAKE@strong:{b}" for a, b, _, _ in STATES])
    jury = jury_file(tmp_path, server.url, "escalate", JURORS, threshold=0.5)
    out = tmp_path / "v.jsonl"
    report = judge(src, out, jury)
    asked = server.stats()["by_model"]
    assert asked == {"small": len(STATES), "strong": sum(e for _, _, e, _ in STATES)}
    verdicts = lines(out)
    for v, (_, _, escalated, status) in zip(verdicts, STATES, strict=True):
        assert v["status"] == status, v
        assert [x["judge"] for x in v["votes"]] == (["small", "strong"] if escalated
                                                    else ["small"])
        assert v["panel"]["rule"] == "escalate"
    esc = report.jury.escalation
    assert (esc.threshold, esc.states, esc.escalated) == (0.5, 5, 3)
    strong_votes = [x for v in verdicts for x in v["votes"] if x["judge"] == "strong"]
    cost = sum(x["usage"]["input_tokens"] * 10 + x["usage"]["output_tokens"] * 30
               for x in strong_votes) / 1e6
    assert esc.second_cost_usd == pytest.approx(cost, abs=1e-6)
    assert esc.all_second_cost_usd == pytest.approx(cost / 3 * 5, abs=1e-6)
    # Again: everything is in the store, nothing is asked, the same bytes.
    server.reset()
    again = tmp_path / "again.jsonl"
    judge(src, again, jury, store=tmp_path / "v.judge.sqlite")
    assert server.stats()["requests"] == 0
    assert again.read_bytes() == out.read_bytes()


def test_split_samples_escalate(tmp_path: Path, server: FakeServer) -> None:
    src = states(tmp_path / "in", ["FAKE@small:pass/pass/pass FAKE@strong:fail",
                                   "FAKE@small:pass/fail/pass FAKE@strong:fail"])
    jurors = [{**JURORS[0], "samples": 3, "temperature": 0.7}, JURORS[1]]
    report = judge(src, tmp_path / "v.jsonl", jury_file(tmp_path, server.url, "escalate",
                                                        jurors))
    first, second = lines(tmp_path / "v.jsonl")
    assert first["status"] == "pass" and len(first["votes"]) == 3
    assert second["status"] == "fail" and second["votes"][-1]["judge"] == "strong"
    assert report.jury.escalation.escalated == 1


@pytest.mark.parametrize(("text", "error"), [
    ('rule = "escalate"\n[[judge]]\nmodel = "a"\n', "takes two \\[\\[judge\\]\\] tables"),
    ('rule = "escalate"\nthreshold = 1.5\n[[judge]]\nmodel = "a"\n[[judge]]\nmodel = "b"\n',
     "`threshold` must be a number between 0 and 1"),
    ('rule = "majority"\nthreshold = 0.5\n[[judge]]\nmodel = "a"\n',
     "rule 'majority' takes none"),
])
def test_the_files_sentences(text: str, error: str) -> None:
    with pytest.raises(JuryError, match=error):
        parse(text, "cascade.toml")


def test_the_first_judge_is_asked_for_log_probabilities_and_the_threshold_is_hashed() -> None:
    two = '[[judge]]\nmodel = "a"\n[[judge]]\nmodel = "b"\n'
    jury = parse('rule = "escalate"\n' + two, "c.toml")
    assert jury.threshold == 0.8
    assert jury.jurors[0].config.confidence and not jury.jurors[1].config.confidence
    assert jury.hash != parse('rule = "escalate"\nthreshold = 0.7\n' + two, "c.toml").hash


def test_where_na_is_not_allowed_an_na_escalates_and_the_probability_is_over_pass_and_fail(
        tmp_path: Path, server: FakeServer) -> None:
    """A rubric with ``allows_na = false`` (issue 25): the first judge's na is an unscored
    vote, so the state is escalated; its pass is judged sure on its probability over pass and
    fail only (the na token's share dropped, as on the verdict)."""
    from tests.judge.support import RUBRIC

    src = states(tmp_path / "in", ["FAKE@small:na FAKE@strong:fail",
                                   "FAKE@small:pass FAKE@strong:fail"],
                 RUBRIC + "allows_na = false\n")
    out = tmp_path / "v.jsonl"
    report = judge(src, out, jury_file(tmp_path, server.url, "escalate", JURORS,
                                       threshold=0.5), confidence=True)
    first, second = lines(out)
    assert [x["status"] for x in first["votes"]] == ["unscored", "fail"]
    assert first["votes"][0]["error"]["cause"] == "na_not_allowed"
    assert first["status"] == "fail"
    assert second["status"] == "pass" and len(second["votes"]) == 1
    assert server.stats()["by_model"] == {"small": 2, "strong": 1}
    assert report.jury.escalation.escalated == 1
