"""compare end to end: flips, comparability, pass rates and McNemar against a plain-Python
pairing and statsmodels; --include-incomparable; goldens; exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from evalstream._api.reports import render_text as render
from evalstream._cli import main
from evalstream._render.compare import blocks
from evalstream._verdicts.compare import CompareOptions, CompareReport, encode, run
from evalstream._verdicts.records import STATUSES
from tests.helpers import SAMPLES, golden
from tests.verdicts.plain import plain_compare

AGREE_GOLDEN = Path(__file__).resolve().parent / "golden"

RUN_A, RUN_B = SAMPLES / "verdicts.jsonl", SAMPLES / "verdicts-b.jsonl"



def check_report(report: CompareReport, a_text: str, b_text: str, force: bool) -> None:
    plain = plain_compare(a_text, b_text, force)
    assert [r.rubric for r in report.rubrics] == sorted(plain)
    n = report.max_ids
    for r in report.rubrics:
        p = plain[r.rubric]
        c = r.counts
        assert (c.only_a, c.only_b) == (len(p.only_a), len(p.only_b))
        assert c.not_comparable == len(p.not_comparable)
        assert c.differs == {h: p.differs[h] for h in ("rubric_hash", "state_hash", "exposure")}
        assert c.transitions == {f"{a}->{b}": p.transitions[(a, b)]
                                 for a in STATUSES for b in STATUSES}
        assert c.compared == sum(p.transitions.values())
        assert c.forced == (c.not_comparable if force else 0)
        # keys = only_a + only_b + paired; paired = comparable + not comparable
        assert c.keys == c.only_a + c.only_b + c.paired
        assert c.paired == c.comparable + c.not_comparable
        assert c.compared == c.comparable + c.forced
        pp, pf = p.transitions[("pass", "pass")], p.transitions[("pass", "fail")]
        fp, ff = p.transitions[("fail", "pass")], p.transitions[("fail", "fail")]
        scored = pp + pf + fp + ff
        assert c.scored == scored
        if scored:
            assert r.pass_rate_a == pytest.approx((pp + pf) / scored)
            assert r.pass_rate_b == pytest.approx((pp + fp) / scored)
            assert r.difference == pytest.approx((fp - pf) / scored)
            assert r.mcnemar is not None
            exact = pf + fp < 25
            ref = sm_mcnemar(np.array([[pp, pf], [fp, ff]]), exact=exact, correction=True)
            assert r.mcnemar.p_value == pytest.approx(float(ref.pvalue), rel=1e-9, abs=1e-15)
            assert (r.mcnemar.b, r.mcnemar.c) == (pf, fp)
        else:
            assert r.pass_rate_a is None and r.mcnemar is None
        ex = r.examples
        assert ex.pass_to_fail == p.pass_to_fail[:n]
        assert ex.fail_to_pass == p.fail_to_pass[:n]
        assert ex.not_comparable == p.not_comparable[:n]
        assert ex.only_a == p.only_a[:n]
        assert ex.only_b == p.only_b[:n]
    s = report.summary
    assert s.compared == sum(r.counts.compared for r in report.rubrics)
    assert s.not_comparable == sum(r.counts.not_comparable for r in report.rubrics)


@pytest.mark.parametrize("force", [False, True])
def test_sample_runs_against_plain_pairing(force: bool) -> None:
    report = run(CompareOptions(str(RUN_A), str(RUN_B), include_incomparable=force))
    check_report(report, RUN_A.read_text(), RUN_B.read_text(), force)
    assert report.exit_code == 0


def test_sample_known_facts() -> None:
    """What generate.py planted, read off the report."""
    report = run(CompareOptions(str(RUN_A), str(RUN_B)))
    r = {x.rubric: x for x in report.rubrics}
    s = report.summary
    assert (s.not_comparable, s.differs) == (3, {"rubric_hash": 1, "state_hash": 1,
                                                 "exposure": 1})
    assert r["claim-support"].examples.not_comparable == ["case-12"]  # state_hash
    assert r["escalation"].examples.not_comparable == ["case-22", "case-25"]  # rubric, exposure
    assert r["policy-compliance"].examples.only_a == ["case-23"]
    assert r["escalation"].examples.only_b == ["case-44"]
    assert r["tool-backed-claims"].examples.pass_to_fail == ["case-01", "case-02", "case-03"]
    assert r["tool-backed-claims"].examples.fail_to_pass == ["case-20"]
    t = r["claim-support"].counts.transitions
    assert (t["unscored->pass"], t["pass->unscored"]) == (1, 1)
    # build's exact verdicts carry no state_hash: compared on rubric_hash and exposure alone.
    assert r["booking-succeeded"].counts.absent_on_both["state_hash"] == 11
    # case-12 flipped fail (B) after pass (A) but is not comparable: not a flip unless forced.
    assert "case-12" not in r["claim-support"].examples.fail_to_pass
    forced = run(CompareOptions(str(RUN_A), str(RUN_B), include_incomparable=True))
    fr = {x.rubric: x for x in forced.rubrics}
    assert fr["claim-support"].examples.pass_to_fail == ["case-12"]
    assert fr["claim-support"].examples.not_comparable == ["case-12"]  # still reported
    assert forced.summary.forced == 3


def test_sample_goldens() -> None:
    report = run(CompareOptions(str(RUN_A), str(RUN_B), max_ids=5))
    report.run_a.path, report.run_b.path = "verdicts.jsonl", "verdicts-b.jsonl"
    golden("compare.json", encode(report), AGREE_GOLDEN)
    golden("compare.md", render(blocks(report), "markdown"), AGREE_GOLDEN)
    golden("compare.txt", render(blocks(report), "table"), AGREE_GOLDEN)


def test_exposure_compares_the_shown_set_only(tmp_path: Path) -> None:
    base = {"case_id": "c1", "rubric_id": "r", "status": "pass", "rubric_hash": "h",
            "state_hash": "s", "exposure": {"shown": ["user_input", "policy"], "withheld": [],
                                            "never_shown": ["metadata"]}}
    other = json.loads(json.dumps(base))
    other["exposure"] = {"shown": ["policy", "user_input"], "withheld": ["tool_events"],
                         "never_shown": [], "tokens": {"budget": 8000}}
    other["status"] = "fail"
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps(base) + "\n")
    b.write_text(json.dumps(other) + "\n")
    (r,) = run(CompareOptions(str(a), str(b))).rubrics
    assert (r.counts.not_comparable, r.counts.transitions["pass->fail"]) == (0, 1)
    del other["state_hash"]  # absent on one side only: not comparable
    b.write_text(json.dumps(other) + "\n")
    (r,) = run(CompareOptions(str(a), str(b))).rubrics
    assert r.counts.differs["state_hash"] == 1


status = st.sampled_from(STATUSES)
maybe_hash = st.sampled_from([None, "h1", "h2"])


@pytest.mark.slow
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(a=st.dictionaries(st.tuples(st.sampled_from([f"c{i}" for i in range(6)]),
                                   st.sampled_from(["r1", "r2"])),
                         st.tuples(status, maybe_hash, maybe_hash,
                                   st.sampled_from([None, ["a"], ["a", "b"]]))),
       b_changes=st.lists(st.tuples(st.integers(0, 20), status, maybe_hash, maybe_hash)),
       drop=st.sets(st.integers(0, 20)), extra=st.sets(st.sampled_from(["c8", "c9"])),
       force=st.booleans(), max_ids=st.integers(0, 3))
def test_any_runs_against_plain_pairing(tmp_path: Path, a: dict[Any, Any], b_changes: list[Any],
                                        drop: set[int], extra: set[str], force: bool,
                                        max_ids: int) -> None:
    def record(key: tuple[str, str], st_: str, rh: Any, sh: Any, shown: Any) -> str:
        v: dict[str, Any] = {"case_id": key[0], "rubric_id": key[1], "status": st_}
        if rh is not None:
            v["rubric_hash"] = rh
        if sh is not None:
            v["state_hash"] = sh
        if shown is not None:
            v["exposure"] = {"shown": shown}
        return json.dumps(v)

    keys = list(a)
    b = {k: list(v) for k, v in a.items()}
    for index, st_, rh, sh in b_changes:
        if keys and index < len(keys):
            b[keys[index % len(keys)]][:3] = [st_, rh, sh]
    a_lines = [record(k, *v) for k, v in a.items()]
    b_lines = [record(k, *v) for i, (k, v) in enumerate(b.items()) if i not in drop]
    b_lines += [record((c, "r1"), "pass", None, None, None) for c in sorted(extra)]
    pa, pb = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    pa.write_text("".join(x + "\n" for x in a_lines))
    pb.write_text("".join(x + "\n" for x in b_lines))
    report = run(CompareOptions(str(pa), str(pb), include_incomparable=force, max_ids=max_ids))
    check_report(report, pa.read_text(), pb.read_text(), force)


def test_duplicate_in_run_b_is_exit_2(tmp_path: Path, capsys: Any) -> None:
    b = tmp_path / "b.jsonl"
    lines = RUN_B.read_text().splitlines()
    b.write_text("\n".join([*lines, lines[0]]) + "\n")
    assert main(["compare", str(RUN_A), str(b), "--format", "json"]) == 2
    captured = capsys.readouterr()
    assert f"{b}: lines 1 and 112 are both verdicts" in captured.err
    assert captured.out == ""


def test_rejects_exit_1_and_the_rest_is_compared(tmp_path: Path, capsys: Any) -> None:
    b = tmp_path / "b.jsonl"
    b.write_bytes(RUN_B.read_bytes() + b"{oops}\n")
    rejects = tmp_path / "r.jsonl"
    assert main(["compare", str(RUN_A), str(b), "--format", "json", "--rejects",
                 str(rejects)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["run_b"]["rejected"] == 1
    (rej,) = [json.loads(x) for x in rejects.read_text().splitlines()]
    assert (rej["file"], rej["line"]) == (str(b), 112)
    check_report(run(CompareOptions(str(RUN_A), str(b))), RUN_A.read_text(), RUN_B.read_text(),
                 False)


def test_cli_table_and_html(tmp_path: Path, capsys: Any) -> None:
    assert main(["compare", str(RUN_A), str(RUN_B), "--html", str(tmp_path / "c.html")]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the terminal width wraps lines
    assert "3 of 110 pairs are not comparable" in out
    assert "use --include-incomparable" in out
    assert (tmp_path / "c.html").read_text().count('class="flip pass-to-fail"') == 5


def test_empty_runs(tmp_path: Path, capsys: Any) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    # A run with no verdict measures nothing: said, and exit 1 (never a green run).
    assert main(["compare", str(empty), str(RUN_B), "--format", "markdown"]) == 1
    out = capsys.readouterr().out
    assert "No key is in both runs" in out
    assert "empty.jsonl: no verdict: nothing was judged to measure (exit 1)." in out
    report = run(CompareOptions(str(empty), str(empty)))
    assert (report.rubrics, report.summary.keys, report.run_a.blank) == ([], 0, 1)
    assert report.exit_code == 1


def test_max_unscored_rate_applies_to_either_run() -> None:
    a, b = SAMPLES / "verdicts.jsonl", SAMPLES / "verdicts-b.jsonl"
    report = run(CompareOptions(str(a), str(b)))
    assert report.run_a.unscored_rate and report.run_b.unscored_rate
    worst = max(report.run_a.unscored_rate, report.run_b.unscored_rate)
    assert run(CompareOptions(str(a), str(b), max_unscored_rate=worst)).exit_code == 0
    assert run(CompareOptions(str(a), str(b), max_unscored_rate=worst - 1e-9)).exit_code == 1
