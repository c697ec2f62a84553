"""agree's sureness section (issue 29) on files: the calibration, the corrected pass rates and
the checks to label, each against a plain join of the raw lines (dicts and loops) and the
plain formulas of ``plain.py``."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import evalstream
from evalstream.errors import UsageError
from tests.verdicts.plain import plain_ece, plain_ppi_mean


def write(tmp_path: Path, seed: int = 3, n: int = 400) -> tuple[Path, Path, list[dict[str, Any]],
                                                                 list[dict[str, Any]]]:
    """Cases in two groups and two rubrics, a third labelled; verdicts of a biased judge with
    a confidence on most (some unscored, some na, a few without confidence)."""
    r = random.Random(seed)
    cases, verdicts = [], []
    for i in range(n):
        group = "a" if i % 3 else "b"
        expected = {}
        for rubric in ("r1", "r2"):
            truth = r.random() < (0.7 if group == "a" else 0.4)
            said = truth if r.random() > 0.2 else not truth
            status = "pass" if said else "fail"
            if r.random() < 0.05:
                status = r.choice(["unscored", "na"])
            if r.random() < 0.35:
                expected[rubric] = {"status": "pass" if truth else r.choice(["fail", "fail",
                                                                             "na"]),
                                    "source": r.choice(["human", "synthetic"])}
            v: dict[str, Any] = {"case_id": f"c{i}", "rubric_id": rubric, "status": status}
            if status == "unscored":
                v["error"] = {"cause": "bad_answer", "detail": "x"}
            elif r.random() < 0.9:
                p = r.uniform(0.5, 1.0)
                rest = 1 - p
                probs = {"pass": 0.0, "fail": 0.0, "na": 0.0}
                probs[status] = p
                other = [s for s in probs if s != status]
                probs[other[0]], probs[other[1]] = rest * 0.75, rest * 0.25
                v["confidence"] = {**probs, "source": "logprobs"}
            verdicts.append(v)
        case = {"id": f"c{i}", "input": "q", "output": "a", "metadata": {"slice": group}}
        if expected:
            case["expected"] = expected
        cases.append(case)
    vpath, cpath = tmp_path / "verdicts.jsonl", tmp_path / "cases.jsonl"
    vpath.write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    cpath.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return vpath, cpath, verdicts, cases


def plain_rows(verdicts: list[dict[str, Any]], cases: list[dict[str, Any]],
               ) -> list[tuple[str, str, str | None, str | None, dict[str, Any]]]:
    """(rubric, group, label status, label source, verdict) for every verdict."""
    by_id = {c["id"]: c for c in cases}
    rows = []
    for v in verdicts:
        case = by_id[v["case_id"]]
        label = (case.get("expected") or {}).get(v["rubric_id"])
        rows.append((v["rubric_id"], case["metadata"]["slice"],
                     label and label["status"], label and label["source"], v))
    return rows


def test_estimates_are_the_formula_over_a_plain_join(tmp_path: Path) -> None:
    vpath, cpath, verdicts, cases = write(tmp_path)
    report = evalstream.agree(vpath, cpath, by="slice", estimate=True, target_width=0.1)
    rows = plain_rows(verdicts, cases)
    found = {r.rubric: r for r in report.sureness.estimates}  # type: ignore[attr-defined]
    assert sorted(found) == ["r1", "r2"]
    for rubric in ("r1", "r2"):
        for group in (None, "a", "b"):
            mine = [(lab, v["status"]) for rb, g, lab, _, v in rows
                    if rb == rubric and (group is None or g == group)
                    and v["status"] in ("pass", "fail")]
            y = [lab == "pass" for lab, s in mine if lab in ("pass", "fail")]
            f = [s == "pass" for lab, s in mine if lab in ("pass", "fail")]
            fu = [s == "pass" for lab, s in mine if lab is None]
            theta, low, high, lam = plain_ppi_mean(y, f, fu)
            r = found[rubric]
            e = r.all if group is None else next(g.estimate for g in r.by_group
                                                 if g.group == group)
            assert (e.labelled, e.unlabelled) == (len(y), len(fu))
            assert e.estimate == pytest.approx(theta) and e.power_tuning == pytest.approx(lam)
            assert (e.low, e.high) == (pytest.approx(low), pytest.approx(high))
            assert e.judge_rate == pytest.approx((sum(f) + sum(fu)) / (len(f) + len(fu)))
            assert e.target_width == 0.1


def test_calibration_is_the_plain_ece_per_rubric_and_source(tmp_path: Path) -> None:
    vpath, cpath, verdicts, cases = write(tmp_path, seed=5)
    report = evalstream.agree(vpath, cpath)
    sure = report.sureness  # type: ignore[attr-defined]
    assert sure.estimates is None and sure.to_label is None
    assert sure.with_confidence == sum("confidence" in v for v in verdicts)
    for r in sure.calibration:
        for source in (None, "human", "synthetic"):
            pairs = [(v["confidence"][v["status"]], lab == v["status"])
                     for rb, _, lab, src, v in plain_rows(verdicts, cases)
                     if rb == r.rubric and (source is None or src == source)
                     and lab in ("pass", "fail") and v["status"] in ("pass", "fail")
                     and "confidence" in v]
            ece, table = plain_ece([c for c, _ in pairs], [a for _, a in pairs])
            rel = r.all if source is None else r.by_source[source]
            assert rel.pairs == len(pairs) and rel.ece == pytest.approx(ece)
            assert [b.pairs for b in rel.bins] == [t[0] for t in table]


def test_no_confidence_and_nothing_asked_leaves_agree_as_it_was(tmp_path: Path) -> None:
    vpath, cpath, verdicts, _ = write(tmp_path)
    for v in verdicts:
        v.pop("confidence", None)
    vpath.write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    report = evalstream.agree(vpath, cpath)
    assert not hasattr(report, "sureness")
    assert type(report).__name__ == "AgreeReport"


def test_to_label_spreads_over_groups_takes_the_most_doubtful_and_writes_cases(
        tmp_path: Path) -> None:
    vpath, cpath, verdicts, cases = write(tmp_path, seed=11)
    out = tmp_path / "to-label.jsonl"
    report = evalstream.agree(vpath, cpath, by="slice", to_label=12, to_label_output=out)
    t = report.sureness.to_label  # type: ignore[attr-defined]
    assert t.chosen == 12 and t.output == str(out)
    # Four strata (2 rubrics x 2 groups), three turns each: none starved.
    assert sorted((s.rubric, s.group, s.chosen) for s in t.strata) == [
        ("r1", "a", 3), ("r1", "b", 3), ("r2", "a", 3), ("r2", "b", 3)]
    rows = plain_rows(verdicts, cases)

    def doubt(v: dict[str, Any]) -> float:
        if v["status"] == "unscored":
            return 1.0
        return 1 - v["confidence"][v["status"]] if "confidence" in v else 0.0

    chosen = {(c.case_id, c.rubric) for c in t.first}
    for rubric in ("r1", "r2"):
        for group in ("a", "b"):
            pool = sorted((-doubt(v), int(v["case_id"][1:]), v["case_id"])
                          for rb, g, lab, _, v in rows if rb == rubric and g == group
                          and lab is None)
            assert {(cid, rubric) for _, _, cid in pool[:3]} <= chosen
    written = [json.loads(x) for x in out.read_text().splitlines()]
    assert sum(len(c["metadata"]["to_label"]) for c in written) == 12
    assert [c["id"] for c in written] == sorted((c["id"] for c in written),
                                                key=lambda x: int(x[1:]))
    by_id = {c["id"]: c for c in cases}
    for case in written:
        for item in case["metadata"]["to_label"]:
            assert item["rubric"] not in (case.get("expected") or {})
            assert "labelled" in item["why"]
        plain = dict(case)
        plain["metadata"] = {k: v for k, v in case["metadata"].items() if k != "to_label"}
        assert plain == by_id[case["id"]]
    assert list(evalstream.read_cases(str(out)))  # cases a labelling tool (and build) can take


def test_to_label_over_several_case_files_writes_what_one_file_gives(tmp_path: Path) -> None:
    # Issue 29 met issue 30: the chosen cases are read back from every case file, in order,
    # so cases cut into three files give the bytes one file gives.
    vpath, cpath, _, _ = write(tmp_path, seed=11)
    lines = cpath.read_text().splitlines(keepends=True)
    third = len(lines) // 3
    parts = [tmp_path / f"part-{i}.jsonl" for i in range(3)]
    for i, part in enumerate(parts):
        part.write_text("".join(lines[i * third:(i + 1) * third if i < 2 else None]))
    one, several = tmp_path / "one.jsonl", tmp_path / "several.jsonl"
    evalstream.agree(vpath, cpath, by="slice", to_label=12, to_label_output=one)
    evalstream.agree(vpath, parts, by="slice", to_label=12, to_label_output=several)
    assert several.read_bytes() == one.read_bytes() and one.stat().st_size > 0
    with pytest.raises(UsageError, match="stdin"):
        evalstream.agree(vpath, [str(parts[0]), "-"], to_label=3,
                         to_label_output=tmp_path / "t.jsonl")


@pytest.mark.parametrize(("given", "error"), [
    ({"to_label": 5}, "--to-label N and --to-label-output FILE go together"),
    ({"to_label_output": "x.jsonl"}, "--to-label N and --to-label-output FILE go together"),
    ({"to_label": 0, "to_label_output": "x.jsonl"}, "--to-label"),
    ({"estimate": True, "target_width": 1.5}, "--target-width"),
])
def test_wrong_options_are_sentences(tmp_path: Path, given: dict[str, Any], error: str) -> None:
    vpath, cpath, _, _ = write(tmp_path, n=20)
    with pytest.raises(UsageError, match=error):
        evalstream.agree(vpath, cpath, **given)


def test_to_label_with_cases_on_stdin_is_refused(tmp_path: Path) -> None:
    from evalstream._cli import main

    vpath, _, _, _ = write(tmp_path, n=20)
    assert main(["agree", str(vpath), "-", "--to-label", "3", "--to-label-output",
                 str(tmp_path / "t.jsonl")]) == 2
    assert not (tmp_path / "t.jsonl").exists()


def test_to_label_output_on_stdout_with_the_report_names_the_option(tmp_path: Path,
                                                                    capsys: Any) -> None:
    from evalstream._cli import main

    vpath, cpath, _, _ = write(tmp_path, n=20)
    assert main(["agree", str(vpath), str(cpath), "--to-label", "3", "--to-label-output",
                 "-"]) == 2
    assert ("the output and the --to-label-output cannot both go to stdout (-)"
            in capsys.readouterr().err)


def test_the_command_line_and_the_page(tmp_path: Path, capsys: Any) -> None:
    from evalstream._cli import main

    vpath, cpath, _, _ = write(tmp_path)
    page, out = tmp_path / "agree.html", tmp_path / "agree.md"
    assert main(["agree", str(vpath), str(cpath), "--estimate", "--by", "slice", "--html",
                 str(page), "-o", str(out), "--format", "markdown"]) == 0
    text = out.read_text()
    assert "Corrected pass rates" in text and "slice = a" in text
    assert "How sure the judge was: calibration" in text
    html = page.read_text()
    assert html.count('class="chart chart-reliability"') == 2
    assert main(["agree", str(vpath), str(cpath), "--format", "json", "-o",
                 str(tmp_path / "a.json")]) == 0
    saved = json.loads((tmp_path / "a.json").read_text())
    assert saved["sureness"]["calibration"][0]["all"]["ece"] is not None


# -- issue 29 met issues 25 and 28 (the merge) ---------------------------------------------------
SAMPLES = Path(__file__).parents[2] / "data" / "samples"


def rounded(value: Any) -> Any:
    """A report section as builtins, its floats rounded to 9 places."""
    import msgspec

    def walk(x: Any) -> Any:
        if isinstance(x, float):
            return round(x, 9)
        if isinstance(x, list):
            return [walk(y) for y in x]
        if isinstance(x, dict):
            return {k: walk(y) for k, y in x.items()}
        return x
    return walk(msgspec.to_builtins(value))


def test_stale_verdicts_are_left_out_of_all_three_and_counted(tmp_path: Path) -> None:
    """Stale verdicts (judged on another state than build makes of the cases today) are left
    out of the calibration, the estimates and the checks to label, as agree's own figures
    leave them out: each section is that of the file without them, and says how many it
    left out (coverage first)."""
    records = [json.loads(x) for x in (SAMPLES / "verdicts.jsonl").read_text().splitlines()]
    for i, r in enumerate(records):
        if r["status"] in ("pass", "fail", "na"):
            p = 0.5 + (i % 10) / 20
            others = [s for s in ("pass", "fail", "na") if s != r["status"]]
            r["confidence"] = {r["status"]: p, others[0]: (1 - p) * 0.75,
                               others[1]: (1 - p) * 0.25, "source": "logprobs"}
    judged = [i for i, r in enumerate(records) if r["status"] in ("pass", "fail")
              and r.get("kind") != "exact" and r.get("state_hash")]
    stale = set(judged[::5])
    marked, without = tmp_path / "stale.jsonl", tmp_path / "without.jsonl"
    marked.write_text("".join(json.dumps({**r, "state_hash": "1" * 32} if i in stale else r)
                              + "\n" for i, r in enumerate(records)))
    without.write_text("".join(json.dumps(r) + "\n" for i, r in enumerate(records)
                               if i not in stale))
    cases = SAMPLES / "cases.jsonl"
    a, b = (evalstream.agree(f, cases, estimate=True, to_label=8,
                             to_label_output=tmp_path / f"{f.stem}.to-label.jsonl")
            for f in (marked, without))
    assert a.stale is not None and a.stale.counts.stale == len(stale)
    sa, sb = a.sureness, b.sureness  # type: ignore[attr-defined]
    # Equal but for the order floats were added in (the rows join in another order).
    assert rounded(sa.calibration) == rounded(sb.calibration) and sa.calibration
    assert rounded(sa.estimates) == rounded(sb.estimates)
    assert sa.to_label.first == sb.to_label.first and sa.to_label.strata == sb.to_label.strata
    assert (sa.left_out.stale, sb.left_out.stale) == (len(stale), 0)
    assert sa.left_out.verdicts == sb.left_out.verdicts + len(stale)
    assert (sa.left_out.unscored, sa.left_out.na) == (sb.left_out.unscored, sb.left_out.na)
    from evalstream._render.sureness import left_out_sentence

    assert f"{len(stale)} stale" in left_out_sentence(sa)


def test_pairwise_verdicts_are_out_of_the_estimates_and_inconsistent_pairs_labelled_first(
        tmp_path: Path) -> None:
    """A pair's verdict (a pairwise rubric, issue 28) carries no confidence and its pass is
    run A's win, not a pass rate: it is left out of the calibration and the estimates, and
    counted; ``--to-label`` may choose it, the inconsistent pairs (orders that disagreed)
    first."""
    vpath, cpath, verdicts, cases = write(tmp_path, seed=7)
    inconsistent = set()
    for i, v in enumerate(verdicts):
        if v["rubric_id"] != "r2":
            continue
        if v["status"] == "unscored":  # every pair scored: the inconsistent ones lead
            v["status"] = "pass"
            del v["error"]
        v.pop("confidence", None)
        if i % 4 == 1:  # the two orders disagreed: a tie
            v["status"] = "na"
            inconsistent.add(v["case_id"])
            v["pair"] = {"key": f"k{i}", "chars": [10, 12], "decision": "tie", "agreed": False,
                         "orders": [{"order": "ab", "better": "response_1"},
                                    {"order": "ba", "better": "response_1"}]}
        else:
            decision = {"pass": "a", "fail": "b", "na": "tie"}[v["status"]]
            v["pair"] = {"key": f"k{i}", "chars": [10, 12], "decision": decision,
                         "agreed": True, "orders": []}
    vpath.write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    out = tmp_path / "to-label.jsonl"
    report = evalstream.agree(vpath, cpath, by="slice", estimate=True, to_label=8,
                              to_label_output=out)
    sure = report.sureness  # type: ignore[attr-defined]
    assert [r.rubric for r in sure.estimates] == ["r1"]
    assert [r.rubric for r in sure.calibration] == ["r1"]
    assert sure.left_out.pairwise == sum(1 for v in verdicts if "pair" in v
                                         and v["status"] in ("pass", "fail"))
    # r2's chosen: per group, the inconsistent pairs (doubt 0.5) before any consistent pair
    # (0), in file order; two turns a group.
    chosen = [c for c in sure.to_label.first if c.rubric == "r2"]
    assert len(chosen) == 4  # two groups, two turns each: none starved
    rows = plain_rows(verdicts, cases)
    for group in ("a", "b"):
        pool = sorted((-(0.5 if v["case_id"] in inconsistent else 0.0),
                       int(v["case_id"][1:]), v["case_id"])
                      for rb, g, lab, _, v in rows if rb == "r2" and g == group and lab is None)
        assert [c.case_id for c in chosen if c.group == group] == [x[2] for x in pool[:2]]
    assert all(c.case_id in inconsistent for c in chosen)
    assert all("the pair's two orders disagreed" in c.why for c in chosen)
