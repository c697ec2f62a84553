"""agree's bias audit (issue 28): Wilson intervals against statsmodels, quintiles against
numpy, every figure against a plain reading of the files, and a fake judge whose position and
length biases are injected (a real process): the audit recovers them within its intervals,
and finds none in an unbiased judge."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from evalstream._api.reports import render_text
from evalstream._judge import live
from evalstream._render.agree import blocks
from evalstream._render.agree_html import agree_page
from evalstream._verdicts.agree import AgreeOptions, run
from evalstream._verdicts.bias import quintile_edges, share
from tests.judge.support import FAKE_KEY, FakeServer, options
from tests.judge.test_pairs import pair_states


@given(k=st.integers(0, 500), extra=st.integers(0, 500),
       confidence=st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_the_wilson_interval_is_statsmodels(k: int, extra: int, confidence: float) -> None:
    n = k + extra
    s = share(k, n, confidence)
    if n == 0:
        assert (s.share, s.low, s.high) == (None, None, None)
        return
    low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    assert s.share == pytest.approx(k / n)
    assert s.low == pytest.approx(max(low, 0.0), abs=1e-12)
    assert s.high == pytest.approx(min(high, 1.0), abs=1e-12)


@given(st.lists(st.integers(0, 60), min_size=1, max_size=200))
def test_quintile_edges_are_numpy_inverted_cdf(lengths: list[int]) -> None:
    edges = quintile_edges(lengths)
    assert edges == np.quantile(np.array(lengths), [0.2, 0.4, 0.6, 0.8],
                                method="inverted_cdf").astype(int).tolist()


# -- the audit against a plain reading of the files ------------------------------------------------
def _order(order: str, better: str | None) -> dict[str, Any]:
    return {"order": order, "better": better, "reason": "r", "usage": None, "request_id": None,
            "state_hash": "h"}


def _pair_verdict(case_id: str, ab: str | None, ba: str | None, chars: tuple[int, int],
                  ) -> dict[str, Any]:
    from evalstream._verdicts.pairwise import STATUS_OF, decide

    if ab is None or ba is None:
        decision, agreed, status = None, None, "unscored"
    else:
        decision, agreed = decide(ab, ba)
        status = STATUS_OF[decision]
    return {"case_id": case_id, "rubric_id": "better", "status": status,
            "pair": {"key": "k", "chars": list(chars), "decision": decision, "agreed": agreed,
                     "orders": [_order("ab", ab), _order("ba", ba)]}}


def _plain_pairwise(verdicts: list[dict[str, Any]], labels: dict[str, str]) -> dict[str, Any]:
    scored = [v for v in verdicts if v["pair"]["agreed"] is not None]
    apart = [v for v in scored if not v["pair"]["agreed"]]
    named = [v for v in apart if "tie" not in (o["better"] for o in v["pair"]["orders"])]
    label_of = {"pass": "a", "fail": "b"}
    labelled = [v for v in scored if labels.get(v["case_id"]) in label_of]

    def longer(v: dict[str, Any]) -> str | None:
        a, b = v["pair"]["chars"]
        return None if a == b else "a" if a > b else "b"

    decided = [v for v in scored if longer(v) and v["pair"]["decision"] != "tie"]
    uneven = [v for v in labelled if longer(v)]
    return {
        "consistency": (len(scored) - len(apart), len(scored)),
        "first_slot": (sum(v["pair"]["orders"][0]["better"] == "response_1" for v in named),
                       len(named)),
        "ties": (sum(v["pair"]["decision"] == "tie" for v in scored), len(scored)),
        "agreement_consistent": (
            sum(v["pair"]["decision"] == label_of[labels[v["case_id"]]]
                for v in labelled if v["pair"]["agreed"]),
            sum(1 for v in labelled if v["pair"]["agreed"])),
        "agreement_all": (sum(v["pair"]["decision"] == label_of[labels[v["case_id"]]]
                              for v in labelled), len(labelled)),
        "judge_longer": (sum(v["pair"]["decision"] == longer(v) for v in decided), len(decided)),
        "labels_longer": (sum(label_of[labels[v["case_id"]]] == longer(v) for v in uneven),
                          len(uneven))}


def test_the_pairwise_audit_is_a_plain_reading(tmp_path: Path) -> None:
    rng = random.Random(5)
    answers = ["response_1", "response_2", "tie", None]
    verdicts, cases, labels = [], [], {}
    for i in range(300):
        case_id = f"p{i}"
        ab, ba = rng.choice(answers), rng.choice(answers)
        verdicts.append(_pair_verdict(case_id, ab, ba, (rng.randrange(5), rng.randrange(5))))
        label = rng.choice(["pass", "fail", "na", None])
        case: dict[str, Any] = {"id": case_id, "input": "q", "output": "x"}
        if label is not None:
            case["expected"] = {"better": {"status": label, "source": "human"}}
            labels[case_id] = label
        cases.append(case)
    (tmp_path / "v.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    report = run(AgreeOptions(str(tmp_path / "v.jsonl"), str(tmp_path / "c.jsonl")))
    [audit] = report.bias
    assert audit.rubric == "better" and audit.length is None and audit.pairwise is not None
    p = audit.pairwise
    assert (p.pairs, p.scored) == (300, sum(v["pair"]["agreed"] is not None for v in verdicts))
    for name, (k, n) in _plain_pairwise(verdicts, labels).items():
        got = getattr(p, name)
        assert (got.k, got.n) == (k, n), name
        assert got == share(k, n, report.confidence)
    # Every style shows it; the page's text and figures escape nothing they should not.
    for style in ("table", "markdown"):
        assert b"Pairwise: position and length" in render_text(blocks(report), style)
    assert "Bias audit" in agree_page(report)


def test_a_pointwise_judge_that_follows_length_shows_in_the_quintiles(tmp_path: Path) -> None:
    rng = random.Random(9)
    cases, verdicts = [], []
    for i in range(250):
        length = rng.randrange(1, 400)
        label = rng.choice(["pass", "fail"])
        cases.append({"id": f"c{i}", "input": "q", "output": "x" * length,
                      "expected": {"helpful": {"status": label, "source": "human"}}})
        verdicts.append({"case_id": f"c{i}", "rubric_id": "helpful",
                         "status": "pass" if length > 200 else "fail"})
    verdicts.append({"case_id": "nowhere", "rubric_id": "helpful", "status": "pass"})
    (tmp_path / "v.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    report = run(AgreeOptions(str(tmp_path / "v.jsonl"), str(tmp_path / "c.jsonl")))
    [audit] = report.bias
    assert audit.pairwise is None and audit.length is not None
    lengths = np.array([len(c["output"]) for c in cases])
    edges = np.quantile(lengths, [0.2, 0.4, 0.6, 0.8], method="inverted_cdf")
    bins = np.searchsorted(edges, lengths, side="left")
    assert audit.length.verdicts == len(cases)  # the verdict of an unknown case left out
    for q in audit.length.quintiles:
        inside = [c for c, b in zip(cases, bins, strict=True) if b == q.bin - 1]
        passed = [c for c in inside if len(c["output"]) > 200]
        labelled_pass = [c for c in inside if c["expected"]["helpful"]["status"] == "pass"]
        agree = [c for c in inside if (len(c["output"]) > 200) ==
                 (c["expected"]["helpful"]["status"] == "pass")]
        assert (q.pass_rate.k, q.pass_rate.n) == (len(passed), len(inside))
        assert (q.label_pass_rate.k, q.label_pass_rate.n) == (len(labelled_pass), len(inside))
        assert (q.agreement.k, q.agreement.n) == (len(agree), len(inside))
        assert (q.chars_min, q.chars_max) == (min(len(c["output"]) for c in inside),
                                              max(len(c["output"]) for c in inside))
    first, last = audit.length.quintiles[0], audit.length.quintiles[-1]
    # At a glance: the judge's pass rate climbs from none to all, the labels' stays level.
    assert (first.pass_rate.share, last.pass_rate.share) == (0.0, 1.0)
    assert all(0.25 < (q.label_pass_rate.share or 0) < 0.75 for q in audit.length.quintiles)
    assert "pass rate by response length" in agree_page(report)


def test_the_length_audit_says_what_it_leaves_out_as_agree_does(tmp_path: Path) -> None:
    # Issue 25 met issue 28: the audit's figures leave stale verdicts out as agree's do, and
    # say what they left out (na, unscored, stale, cases not in the file) before them.
    import evalstream

    samples = Path(__file__).resolve().parents[2] / "data" / "samples"
    states = tmp_path / "states.jsonl"
    evalstream.build(samples / "cases.jsonl", states)
    records = [json.loads(x) for x in states.read_text().splitlines()]
    verdicts = [{"case_id": r["case_id"], "rubric_id": r["rubric_id"],
                 "status": ["pass", "fail", "na", "unscored"][i % 4],
                 "rubric_hash": r["rubric_hash"],
                 **({"state_hash": r["state_hash"]} if "state_hash" in r else {})}
                for i, r in enumerate(records)]
    verdicts.append({"case_id": "nowhere", "rubric_id": "escalation", "status": "fail"})
    (tmp_path / "v.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    cases = [json.loads(x) for x in (samples / "cases.jsonl").read_text().splitlines()]
    for c in cases[::2]:
        c["output"] = "I have replaced this answer."
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    report = run(AgreeOptions(str(tmp_path / "v.jsonl"), str(tmp_path / "c.jsonl")))
    assert report.stale is not None and report.stale.counts.stale > 0
    changed = {c["id"] for c in cases[::2]}
    for audit in report.bias:
        length = audit.length
        assert length is not None
        mine = [v for v in verdicts if v["rubric_id"] == audit.rubric]
        decided = [v for v in mine if v["status"] in ("pass", "fail")]
        # a judge rubric's state shows the response: a changed case's verdict is stale
        stale = [v for v in decided if "state_hash" in v and v["case_id"] in changed]
        assert (length.na, length.unscored) == (
            sum(v["status"] == "na" for v in mine), sum(v["status"] == "unscored" for v in mine))
        assert length.not_in_cases == sum(v["case_id"] == "nowhere" for v in decided)
        assert length.stale == len(stale)
        assert length.verdicts == len(decided) - len(stale) - length.not_in_cases
        assert sum(q.pass_rate.n for q in length.quintiles) == length.verdicts
        assert length.verdicts + length.left_out == len(mine)
    text = " ".join(render_text(blocks(report), "table").decode().split())
    assert "stale" in text and "of cases not in the cases file" in text


# -- a fake judge with known biases ----------------------------------------------------------------
N_PAIRS = 300


@pytest.fixture()
def fake() -> Iterator[Callable[..., FakeServer]]:
    """``fake(*args)``: the fake judge server (a real process) started with those arguments,
    stopped after the test."""
    started: list[FakeServer] = []

    def start(*args: str) -> FakeServer:
        started.append(FakeServer(*args))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def _specs() -> list[tuple[str, str]]:
    """Pairs whose better response (marked for the fake judge) is run A's in half of them,
    and the longer one in half of them, independently."""
    rng = random.Random(28)
    specs = []
    for i in range(N_PAIRS):
        a_better, better_longer = i % 2 == 0, (i // 2) % 2 == 0
        good = f"right answer {i} [better]" + " more" * rng.randrange(5, 9) * better_longer
        bad = f"wrong answer {i}" + " more" * rng.randrange(9, 14) * (not better_longer)
        specs.append((good, bad) if a_better else (bad, good))
    return specs


def _audit(tmp: Path, server: FakeServer) -> Any:
    src = pair_states(tmp / "in", _specs())
    cases_a = tmp / "in" / "a.jsonl"
    labelled = [dict(json.loads(line), expected={"better": {
        "status": "pass" if "[better]" in json.loads(line)["output"] else "fail",
        "source": "human"}}) for line in cases_a.read_text().splitlines()]
    cases_a.write_text("".join(json.dumps(c) + "\n" for c in labelled))
    out = tmp / "verdicts.jsonl"
    live.run(options(server, src, out, max_connections=32))
    report = run(AgreeOptions(str(out), str(cases_a)))
    [audit] = report.bias
    return audit.pairwise


def _within(s: Any, value: float) -> bool:
    return s.low is not None and s.low - 1e-12 <= value <= s.high + 1e-12


@pytest.mark.slow
def test_an_unbiased_judge_shows_no_bias(tmp_path: Path,
                                         fake: Callable[..., FakeServer]) -> None:
    p = _audit(tmp_path, fake("--key", FAKE_KEY))
    assert p.consistency.k == p.consistency.n == N_PAIRS
    assert p.first_slot.n == 0 and p.ties.k == 0
    assert p.agreement_all.k == p.agreement_all.n == N_PAIRS
    assert p.judge_longer.share == p.labels_longer.share == 0.5
    assert _within(p.judge_longer, 0.5) and _within(p.consistency, 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("bias", [0.2, 0.35])
def test_a_position_bias_is_recovered_within_its_interval(
        tmp_path: Path, fake: Callable[..., FakeServer], bias: float) -> None:
    p = _audit(tmp_path, fake("--key", FAKE_KEY, "--position-bias", str(bias)))
    assert _within(p.consistency, 1 - bias), p.consistency
    assert p.first_slot.k == p.first_slot.n > 0 and _within(p.first_slot, 1.0)
    # Every inconsistent pair named the first slot twice, and is a tie.
    assert p.ties.k == p.first_slot.n == p.consistency.n - p.consistency.k
    assert p.agreement_consistent.k == p.agreement_consistent.n  # the rest is right
    assert _within(p.agreement_all, 1 - bias)
    assert _within(p.labels_longer, 0.5) and _within(p.judge_longer, 0.5)


@pytest.mark.slow
def test_a_length_preference_is_recovered_within_its_interval(
        tmp_path: Path, fake: Callable[..., FakeServer]) -> None:
    bias = 0.4
    p = _audit(tmp_path, fake("--key", FAKE_KEY, "--length-bias", str(bias)))
    assert p.consistency.k == p.consistency.n  # a length preference is no position bias
    expected = bias + (1 - bias) * 0.5  # the biased pairs, and half of the others
    assert _within(p.judge_longer, expected), p.judge_longer
    assert not _within(p.judge_longer, 0.5)  # told apart from the labels' share
    assert p.labels_longer.share == 0.5
    assert _within(p.agreement_all, 1 - bias * 0.5)  # wrong where longer is the worse


def test_pairwise_states_and_verdicts_are_read_by_the_verdict_reader(tmp_path: Path) -> None:
    # build --pair-with's states (each with its `pair`) in a verdict file are judge states not
    # yet judged, never rejects; a pairwise verdict reads as any verdict (strict reader).
    src = pair_states(tmp_path / "in", [("one [better]", "two"), ("three", "four [better]")])
    states = src.read_text().splitlines()
    verdict = json.dumps(_pair_verdict("p000", "response_1", "response_2", (12, 3)))
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join([verdict, *states[2:]]) + "\n")
    report = run(AgreeOptions(str(mixed), str(tmp_path / "in" / "a.jsonl")))
    v = report.verdicts
    assert (v.verdicts, v.judge_states, v.rejected) == (1, 2, 0)


def test_pairwise_verdicts_are_never_stale_for_want_of_run_b(
        tmp_path: Path, fake: Callable[..., FakeServer]) -> None:
    # Issue 25 met issue 28: rebuilding the states from run A's cases alone (the pairwise
    # rubric file given) made no pairwise check, so every pairwise verdict read stale ("the
    # rubric no longer applies") and was left out of every figure. It is not checked then;
    # against build's output (--states) it is, on its first order, and found fresh.
    import evalstream

    server = fake("--key", FAKE_KEY)
    src = pair_states(tmp_path / "in", _specs()[:20])
    out = tmp_path / "verdicts.jsonl"
    live.run(options(server, src, out))
    cases_a, rubric = tmp_path / "in" / "a.jsonl", tmp_path / "in" / "pairwise.toml"
    rebuilt = evalstream.agree(out, cases_a, rubric_files=[rubric])
    assert rebuilt.stale is not None
    assert (rebuilt.stale.counts.stale, rebuilt.stale.counts.not_checked) == (0, 20)
    [audit] = rebuilt.bias
    assert audit.pairwise is not None and (audit.pairwise.pairs, audit.pairwise.stale) == (20, 0)
    against = evalstream.agree(out, cases_a, states=src)
    assert against.stale is not None and against.stale.counts.fresh == 20
    # A pair whose run B changed is stale against build's output, and the audit leaves it out.
    b = tmp_path / "in" / "b.jsonl"
    changed = [json.loads(x) for x in b.read_text().splitlines()]
    changed[0]["output"] += " (changed)"
    b.write_text("".join(json.dumps(c) + "\n" for c in changed))
    again = tmp_path / "again.jsonl"
    evalstream.build(cases_a, again, pair_with=b, rubric_files=[rubric])
    moved = evalstream.agree(out, cases_a, states=again)
    assert moved.stale is not None and moved.stale.counts.state == 1
    [audit] = moved.bias
    assert audit.pairwise is not None and (audit.pairwise.pairs, audit.pairwise.stale) == (19, 1)
    # view: the same (its own arrays, the same rule)
    index_report = evalstream.export_view(out, cases_a, tmp_path / "review",
                                          rubric_files=[rubric])
    assert index_report.exit_code == 0 and "verdicts" in index_report.lists
    assert "stale" not in index_report.lists  # shown only when there are some
