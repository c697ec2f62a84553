"""agree end to end: every count against a plain-Python join, kappa against statsmodels, the
identities that make counts add up, rejects, duplicate keys, goldens for every style."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statsmodels.stats.inter_rater import cohens_kappa

from evalstream._api.reports import render_text as render
from evalstream._cli import main
from evalstream._render.agree import blocks, unscored_line
from evalstream._verdicts.agree import AgreeOptions, AgreeReport, Cell, encode, run
from evalstream._verdicts.records import DuplicateKeyError
from evalstream.errors import UsageError
from tests.helpers import CORPUS, SAMPLES, golden
from tests.verdicts.plain import PlainCell, plain_agree

AGREE_GOLDEN = Path(__file__).resolve().parent / "golden"

VERDICTS = SAMPLES / "verdicts.jsonl"
CASES = SAMPLES / "cases.jsonl"



def check_cell(cell: Cell, plain: PlainCell) -> None:
    """A cell's counts equal the plain join's, and its statistics statsmodels' on them."""
    c, p = cell.confusion, plain.confusion
    assert (c.pass_pass, c.pass_fail, c.fail_pass, c.fail_fail) == (
        p[("pass", "pass")], p[("pass", "fail")], p[("fail", "pass")], p[("fail", "fail")])
    assert (cell.unscored, cell.na_verdicts, cell.labels_without_verdict, cell.na_labels,
            cell.na_with_verdict, cell.verdicts_without_label, cell.unknown_case) == (
        plain.unscored, plain.na_verdicts, plain.labels_without_verdict, plain.na_labels,
        plain.na_with_verdict, plain.verdicts_without_label, plain.unknown_case)
    assert c.pass_unscored + c.fail_unscored == cell.unscored
    assert c.pass_no_verdict + c.fail_no_verdict == cell.labels_without_verdict
    n = sum(p.values())
    assert cell.pairs == n
    table = np.array([[c.pass_pass, c.pass_fail], [c.fail_pass, c.fail_fail]], dtype=float)
    if n == 0:
        assert cell.accuracy is None and cell.kappa is None
        return
    assert cell.accuracy == pytest.approx((c.pass_pass + c.fail_fail) / n)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = cohens_kappa(table)
    if np.isnan(ref["kappa"]):
        assert cell.kappa is None
    else:
        assert cell.kappa is not None
        assert cell.kappa.value == pytest.approx(ref["kappa"], abs=1e-9)
        if not np.isnan(ref["std_kappa"]):
            assert cell.kappa.se == pytest.approx(ref["std_kappa"], abs=1e-9)
    said_fail, are_fail = c.pass_fail + c.fail_fail, c.fail_pass + c.fail_fail
    assert cell.fail_precision == (c.fail_fail / said_fail if said_fail else None)
    assert cell.fail_recall == (c.fail_fail / are_fail if are_fail else None)


def check_report(report: AgreeReport, verdicts: str, cases: str, by: str | None) -> None:
    plain = plain_agree(verdicts, cases, by)
    assert [r.rubric for r in report.rubrics] == sorted(plain)
    for r in report.rubrics:
        p = plain[r.rubric]
        check_cell(r.all, p.all)
        assert set(r.by_source) == {s for s, cell in p.by_source.items()}
        for source, cell in r.by_source.items():
            check_cell(cell, p.by_source[source])
        if by is None:
            assert r.by_group == []
        else:
            assert [g.group for g in r.by_group] == sorted(
                p.by_group, key=lambda g: (g is None, g or ""))
            for g in r.by_group:
                check_cell(g, p.by_group[g.group])
        n = report.max_ids
        ex = r.examples
        assert ex.missed == p.missed[:n]
        assert ex.false_alarms == p.false_alarms[:n]
        assert ex.unscored == p.unscored[:n]
        assert ex.labels_without_verdict == p.labels_without_verdict[:n]
        assert ex.verdicts_without_label == p.verdicts_without_label[:n]
        check_identities(r)


def check_identities(r: Any) -> None:
    """labels = pairs + unscored + no verdict + na; verdicts = pairs + unscored + na with a
    verdict + no label; and the parts add up to the rubric's whole."""
    c = r.all
    assert sum(r.labels.values()) == (c.pairs + c.unscored + c.na_verdicts + c.stale
                                      + c.labels_without_verdict + c.na_labels)
    assert sum(r.verdicts.values()) == (c.pairs + c.unscored + c.na_verdicts + c.stale
                                        + c.na_with_verdict + c.verdicts_without_label)
    # Coverage first: every pass/fail label is scored or left out for one named reason.
    assert c.coverage is not None
    assert c.coverage.labels == r.labels["pass"] + r.labels["fail"] == c.pairs + sum(
        c.coverage.left_out.values())
    m = c.confusion
    assert c.coverage.agreed == m.pass_pass + m.fail_fail
    assert (m.pass_na + m.fail_na, m.pass_stale + m.fail_stale) == (c.na_verdicts, c.stale)
    assert r.labels["na"] == c.na_labels
    assert r.verdicts["unscored"] >= c.unscored
    for field in ("pairs", "unscored", "na_verdicts", "labels_without_verdict", "na_labels"):
        assert sum(getattr(s, field) for s in r.by_source.values()) == getattr(c, field)
        if r.by_group:
            assert sum(getattr(g, field) for g in r.by_group) == getattr(c, field)
    if r.by_group:
        assert sum(g.verdicts_without_label for g in r.by_group) == c.verdicts_without_label


# -- the sample ----------------------------------------------------------------------------------
@pytest.mark.parametrize("by", [None, "scenario", "source.kind"])
def test_sample_against_plain_join(by: str | None) -> None:
    report = run(AgreeOptions(str(VERDICTS), str(CASES), by=by, max_ids=3))
    check_report(report, VERDICTS.read_text(), CASES.read_text(), by)
    assert report.exit_code == 0


def test_sample_known_facts() -> None:
    """What generate.py planted, read off the report."""
    report = run(AgreeOptions(str(VERDICTS), str(CASES)))
    r = {x.rubric: x for x in report.rubrics}
    assert r["tool-backed-claims"].examples.missed == ["case-02", "case-04"]
    assert r["tool-backed-claims"].examples.false_alarms == ["case-20"]
    assert r["claim-support"].examples.unscored == ["case-11"]
    # case-08: the judge answered na, which policy-compliance does not allow (issue 25)
    assert r["policy-compliance"].examples.unscored == ["case-08", "case-26"]
    assert r["escalation"].examples.labels_without_verdict == ["case-39"]
    assert r["claim-support"].all.unknown_case == 1  # case-99
    assert "case-99" in r["claim-support"].examples.verdicts_without_label
    # na labels are left out even when the judge gave a verdict: escalation has 5 na labels.
    assert (r["escalation"].all.na_labels, r["escalation"].all.na_with_verdict) == (5, 5)
    # build's exact verdicts are verdicts: booking-succeeded agrees with its synthetic labels.
    assert r["booking-succeeded"].all.accuracy == 1.0
    statuses = [json.loads(x)["status"] for x in VERDICTS.read_text().splitlines()]
    assert report.verdicts.by_status == {s: statuses.count(s) for s in ("pass", "fail",
                                                                        "unscored", "na")}


def test_sample_goldens() -> None:
    report = run(AgreeOptions(str(VERDICTS), str(CASES), by="scenario", max_ids=5))
    report.verdicts.path, report.cases.path = "verdicts.jsonl", "cases.jsonl"
    golden("agree.json", encode(report), AGREE_GOLDEN)
    golden("agree.md", render(blocks(report), "markdown"), AGREE_GOLDEN)
    golden("agree.txt", render(blocks(report), "table"), AGREE_GOLDEN)


def test_json_round_trips_into_the_report_type() -> None:
    report = run(AgreeOptions(str(VERDICTS), str(CASES), by="scenario"))
    assert msgspec.json.decode(encode(report), type=AgreeReport) == report


# -- generated files -----------------------------------------------------------------------------
key = st.tuples(st.sampled_from([f"c{i}" for i in range(8)]),
                st.sampled_from(["r1", "r2", "r3"]))


@pytest.mark.slow
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(labels=st.dictionaries(key, st.tuples(st.sampled_from(["pass", "fail", "na"]),
                                             st.sampled_from(["synthetic", "human",
                                                              "imported"]))),
       verdicts=st.dictionaries(key, st.sampled_from(["pass", "fail", "unscored", "na"])),
       cases=st.sets(st.sampled_from([f"c{i}" for i in range(8)])),
       groups=st.dictionaries(st.sampled_from([f"c{i}" for i in range(8)]),
                              st.sampled_from(["g1", "g2", 3, True])),
       max_ids=st.integers(0, 3))
def test_any_files_against_plain_join(tmp_path: Path, labels: dict[tuple[str, str], Any],
                                      verdicts: dict[tuple[str, str], str], cases: set[str],
                                      groups: dict[str, Any], max_ids: int) -> None:
    case_ids = sorted(cases | {c for c, _ in labels})
    case_lines = []
    for cid in case_ids:
        expected = {r: {"status": s, "source": src} for (c, r), (s, src) in labels.items()
                    if c == cid}
        metadata = {"team": groups[cid]} if cid in groups else {}
        case_lines.append(json.dumps({"id": cid, "input": "i", "output": "o",
                                      "metadata": metadata, "expected": expected}))
    verdict_lines = [json.dumps({"case_id": c, "rubric_id": r, "status": s})
                     for (c, r), s in verdicts.items()]
    vpath, cpath = tmp_path / "v.jsonl", tmp_path / "c.jsonl"
    vpath.write_text("".join(x + "\n" for x in verdict_lines))
    cpath.write_text("".join(x + "\n" for x in case_lines))
    report = run(AgreeOptions(str(vpath), str(cpath), by="team", max_ids=max_ids))
    check_report(report, vpath.read_text(), cpath.read_text(), "team")


@pytest.mark.skipif(not (CORPUS / "faithbench.jsonl").exists(), reason="corpus not present")
def test_corpus_file_with_a_simulated_judge(tmp_path: Path) -> None:
    """750 real cases with human labels; a judge that errs on every 7th case."""
    cases = (CORPUS / "faithbench.jsonl").read_text()
    lines = []
    for i, raw in enumerate(cases.splitlines()):
        case = json.loads(raw)
        for rubric, label in (case.get("expected") or {}).items():
            status = label["status"] if label["status"] != "na" else "pass"
            if i % 7 == 0:
                status = "fail" if status == "pass" else "pass"
            lines.append(json.dumps({"case_id": case["id"], "rubric_id": rubric,
                                     "status": "unscored" if i % 50 == 0 else status}))
    vpath = tmp_path / "v.jsonl"
    vpath.write_text("\n".join(lines) + "\n")
    report = run(AgreeOptions(str(vpath), str(CORPUS / "faithbench.jsonl"), by="batch"))
    check_report(report, vpath.read_text(), cases, "batch")
    (r,) = report.rubrics
    assert r.all.pairs + r.all.unscored == 750


# -- rejects, duplicates, exit codes -------------------------------------------------------------
def test_rejects_in_both_files_are_counted_and_written(tmp_path: Path) -> None:
    vpath = tmp_path / "v.jsonl"
    vpath.write_bytes(VERDICTS.read_bytes() + b'{"case_id":"x","rubric_id":"r","status":"ok"}\n')
    cpath = tmp_path / "c.jsonl"
    cpath.write_bytes(CASES.read_bytes() + b'{"id":"case-01","input":"","output":""}\n{"id":1}\n')
    rejects = tmp_path / "rejects.jsonl"
    report = run(AgreeOptions(str(vpath), str(cpath), rejects=str(rejects)))
    assert report.exit_code == 1
    assert (report.verdicts.rejected, report.cases.rejected) == (1, 2)
    records = [json.loads(x) for x in rejects.read_text().splitlines()]
    assert [(r["file"], r["line"]) for r in records] == [
        (str(vpath), 112), (str(cpath), 49), (str(cpath), 50)]
    assert "already used on line 1" in records[1]["error"]  # build's duplicate-id rule
    v, c = report.verdicts, report.cases
    assert v.lines == v.blank + v.verdicts + v.judge_states + v.rejected
    assert c.lines == c.blank + c.cases + c.rejected
    check_report(report, VERDICTS.read_text(), CASES.read_text(), None)  # rejects change nothing


def test_duplicate_verdict_is_exit_2_and_writes_nothing(tmp_path: Path, capsys: Any) -> None:
    vpath = tmp_path / "v.jsonl"
    lines = VERDICTS.read_text().splitlines()
    vpath.write_text("\n".join([*lines, lines[3]]) + "\n")
    with pytest.raises(DuplicateKeyError, match=r"lines 4 and 112 are both verdicts"):
        run(AgreeOptions(str(vpath), str(CASES)))
    out = tmp_path / "out.json"
    code = main(["agree", str(vpath), str(CASES), "--format", "json", "-o", str(out),
                 "--rejects", str(tmp_path / "r.jsonl"), "--html", str(tmp_path / "a.html")])
    assert code == 2
    assert "lines 4 and 112 are both verdicts for case" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.jsonl"]


@pytest.mark.parametrize(("args", "message"), [
    (["{tmp}/missing.jsonl", "{cases}"], "cannot read"),
    (["-", "-"], "only one of the verdicts and the cases can be read from stdin"),
    (["{verdicts}", "{cases}", "-o", "{verdicts}"], "the verdicts and output paths are the same"),
    (["{verdicts}", "{cases}", "--html", "-"], "the output and the html cannot both go to stdout"),
    (["{verdicts}", "{cases}", "--confidence", "1.5"], "must be between 0 and 1"),
    (["{verdicts}", "{cases}", "--max-ids", "-1"], "must be 0 or more"),
    (["{verdicts}", "{cases}", "--by", "scenario,split"], "--by takes one metadata key"),
])
def test_usage_errors_exit_2(tmp_path: Path, capsys: Any, args: list[str], message: str) -> None:
    args = [a.format(tmp=tmp_path, cases=CASES, verdicts=VERDICTS) for a in args]
    try:
        code = main(["agree", *args])
    except SystemExit as exc:  # argparse rejects bad option values itself
        code = int(exc.code or 0)
    assert code == 2
    assert message in capsys.readouterr().err


def test_cli_styles(tmp_path: Path, capsys: Any) -> None:
    assert main(["agree", str(VERDICTS), str(CASES), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["command"] == "agree"
    assert {r["rubric"] for r in data["rubrics"]} == {
        "tool-backed-claims", "booking-succeeded", "claim-support", "escalation", "policy-compliance"}
    assert main(["agree", str(VERDICTS), str(CASES), "--format", "markdown", "-o",
                 str(tmp_path / "a.md"), "--html", str(tmp_path / "a.html")]) == 0
    assert (tmp_path / "a.md").read_text().startswith("# evalstream agree\n")
    assert (tmp_path / "a.html").read_text().startswith("<!doctype html>")
    assert main(["agree", str(VERDICTS), str(CASES)]) == 0
    assert "Agreement per rubric" in capsys.readouterr().out


def test_verdicts_from_stdin(monkeypatch: Any, capsys: Any) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(VERDICTS.read_bytes())))
    assert main(["agree", "-", str(CASES), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdicts"]["verdicts"] == 111


def test_build_output_counts_judge_states_and_uses_exact_verdicts(tmp_path: Path) -> None:
    from evalstream._build.run import Options
    from evalstream._build.run import run as build

    states = tmp_path / "states.jsonl"
    build(Options(input=str(CASES), output=str(states)))
    records = [json.loads(x) for x in states.read_text().splitlines()]
    report = run(AgreeOptions(str(states), str(CASES)))
    exact = [r for r in records if r.get("kind") == "exact"]
    assert (report.verdicts.verdicts, report.verdicts.judge_states, report.verdicts.rejected) == (
        len(exact), len(records) - len(exact), 0)
    check_report(report, states.read_text(), CASES.read_text(), None)
    judged = {r.rubric: r.all.pairs for r in report.rubrics}
    assert judged["booking-succeeded"] > 0
    assert judged["tool-backed-claims"] == 0  # judge states are checks without a verdict yet


def test_empty_files(tmp_path: Path, capsys: Any) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    report = run(AgreeOptions(str(empty), str(empty)))
    # Nothing was judged: an honest report, and never a green run (exit 1).
    assert (report.rubrics, report.exit_code) == ([], 1)
    assert main(["agree", str(empty), str(empty), "--format", "markdown"]) == 1
    out = capsys.readouterr().out
    assert "nothing to compare" in out
    assert "empty.jsonl: no verdict: nothing was judged to measure (exit 1)." in out


def test_a_verdict_file_with_nothing_scored_exits_1_whatever_the_limit(
        tmp_path: Path, capsys: Any) -> None:
    # A judge that answered nothing usable, or states never judged: agree, several runs side
    # by side and compare all measure nothing, and say so (as judge exits 1 on it).
    unscored = tmp_path / "unscored.jsonl"
    states = tmp_path / "states.jsonl"
    lines = [json.loads(x) for x in VERDICTS.read_text().splitlines()]
    for v in lines:
        v.update(status="unscored", rationale=None, error={"cause": "not_json", "detail": "x"})
    unscored.write_text("".join(json.dumps(v) + "\n" for v in lines))
    states.write_text("".join(json.dumps({"case_id": v["case_id"], "rubric_id": v["rubric_id"],
                                          "question": "q", "state": {}}) + "\n"
                              for v in lines))
    for path, held in ((unscored, f"{len(lines):,} verdicts, every one unscored"),
                       (states, "no verdict")):
        assert run(AgreeOptions(str(path), str(CASES))).exit_code == 1
        assert main(["agree", str(path), str(CASES), "--format", "markdown"]) == 1
        assert f"{path.name}: {held}: nothing was judged to measure (exit 1)." in \
            capsys.readouterr().out
        assert main(["compare", str(VERDICTS), str(path), "--format", "markdown"]) == 1
        capsys.readouterr()
    assert main(["agree", str(VERDICTS), str(unscored), "--cases", str(CASES),
                 "--format", "markdown"]) == 1
    assert "unscored.jsonl: 111 verdicts, every one unscored: nothing was judged to measure " \
        "(exit 1)." in capsys.readouterr().out
    # One scored verdict is something measured: the rate then decides, as before.
    lines[0].update(status="pass", rationale="r", error=None)
    unscored.write_text("".join(json.dumps(v) + "\n" for v in lines))
    assert run(AgreeOptions(str(unscored), str(CASES))).exit_code == 0


def test_unscored_rate_and_its_limit() -> None:
    report = run(AgreeOptions(str(VERDICTS), str(CASES)))
    statuses = [json.loads(x)["status"] for x in VERDICTS.read_text().splitlines()]
    rate = statuses.count("unscored") / len(statuses)
    assert report.verdicts.unscored_rate == rate and 0 < rate < 0.03
    assert report.exit_code == 0 and report.max_unscored_rate is None
    assert run(AgreeOptions(str(VERDICTS), str(CASES), max_unscored_rate=0.03)).exit_code == 0
    assert run(AgreeOptions(str(VERDICTS), str(CASES), max_unscored_rate=0.01)).exit_code == 1
    by_rubric = {r.rubric: r.unscored_rate for r in report.rubrics}
    assert by_rubric["claim-support"] == 1 / 11 and by_rubric["tool-backed-claims"] == 0
    above = run(AgreeOptions(str(VERDICTS), str(CASES), max_unscored_rate=0.01))
    assert unscored_line(above.verdicts, 0.01) == (
        f"{VERDICTS}: 3 of 111 verdicts unscored (2.7%), above --max-unscored-rate 0.01 "
        "(exit 1).")
    assert unscored_line(above.verdicts, 0.01) in " ".join(
        render(blocks(above), "markdown").decode().split())
    with pytest.raises(UsageError, match="--max-unscored-rate must be between 0 and 1"):
        run(AgreeOptions(str(VERDICTS), str(CASES), max_unscored_rate=2.0))


def test_na_verdicts_on_scored_labels_are_left_out(tmp_path: Path) -> None:
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps({"id": "c1", "input": "i", "output": "o", "expected": {
        "r": {"status": "pass", "source": "human"}}}) + "\n" + json.dumps(
        {"id": "c2", "input": "i", "output": "o", "expected": {
            "r": {"status": "na", "source": "human"}}}) + "\n")
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text('{"case_id":"c1","rubric_id":"r","status":"na"}\n'
                        '{"case_id":"c2","rubric_id":"r","status":"na"}\n')
    (r,) = run(AgreeOptions(str(verdicts), str(cases))).rubrics
    assert (r.all.pairs, r.all.na_verdicts, r.all.na_labels, r.all.na_with_verdict) == (0, 1, 1, 1)
    assert r.verdicts["na"] == 2


def _split_cases(folder: Path, parts: int = 3) -> list[Path]:
    """The sample cases cut into ``parts`` files, in order."""
    lines = CASES.read_text().splitlines(keepends=True)
    size = -(-len(lines) // parts)
    paths = []
    for i in range(parts):
        path = folder / f"shard-{i}.jsonl"
        path.write_text("".join(lines[i * size:(i + 1) * size]))
        paths.append(path)
    return paths


def _without_path(report: AgreeReport) -> dict[str, Any]:
    data = json.loads(encode(report))
    data["cases"].pop("path")
    return data


def test_cases_from_several_files_or_a_glob_read_as_one(tmp_path: Path, capsys: Any) -> None:
    # Issue 30: agree took one cases file (the corpus's six had to be joined with `cat`).
    # Several files, a glob, or both read in order as one, as build reads them.
    import evalstream

    shards = _split_cases(tmp_path)
    whole = _without_path(evalstream.agree(VERDICTS, CASES))
    assert _without_path(evalstream.agree(VERDICTS, shards)) == whole
    glob = str(tmp_path / "shard-*.jsonl")
    report = evalstream.agree(VERDICTS, glob)
    assert _without_path(report) == whole and report.cases.path == glob
    out = tmp_path / "cli.json"
    assert main(["agree", str(VERDICTS), *map(str, shards), "--format", "json", "-o",
                 str(out)]) == 0
    shown = json.loads(out.read_text())
    assert shown["cases"]["path"] == " ".join(map(str, shards))
    shown["cases"].pop("path")
    assert shown == whole


def test_an_id_repeated_in_another_case_file_is_rejected_as_build_rejects_it(
        tmp_path: Path) -> None:
    # The rule of build's several inputs: one id index over all the files, so a case id an
    # earlier file used is a reject at its line (numbered on from file to file), the same
    # sentence build writes for the same files.
    import evalstream

    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    lines = CASES.read_text().splitlines(keepends=True)
    first.write_text("".join(lines[:10]))
    second.write_text(lines[3] + "".join(lines[10:]))  # case-04 again, then the rest
    rejects = tmp_path / "rejects.jsonl"
    report = evalstream.agree(VERDICTS, [first, second], rejects=rejects)
    assert (report.cases.cases, report.cases.rejected, report.exit_code) == (48, 1, 1)
    (rej,) = [json.loads(x) for x in rejects.read_text().splitlines()]
    assert (rej["line"], rej["id"]) == (11, "case-04")
    built = evalstream.build([first, second], tmp_path / "s.jsonl")
    (same,) = [json.loads(x) for x in (tmp_path / "s.rejects.jsonl").read_text().splitlines()]
    assert (same["line"], same["error"]) == (rej["line"], rej["error"])
    assert built.counts.rejected == 1
