"""Stale verdicts (issue 25): after every case's output was replaced, agree gave identical
statistics without a word, although each verdict carries the state_hash of what its judge saw.
agree, compare and view now rebuild the states (or read build's output), and count, list and
say the verdicts whose state_hash or rubric_hash no longer matches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import evalstream
from evalstream._render.agree import blocks
from evalstream._render.tables import Paragraph
from tests.helpers import SAMPLES


def verdicts_of(states: Path) -> list[dict[str, Any]]:
    """A pass for every check build wrote, with the hashes of what it wrote."""
    out = []
    for line in states.read_text().splitlines():
        r = json.loads(line)
        out.append({"case_id": r["case_id"], "rubric_id": r["rubric_id"], "status": "pass",
                    "judge": {"model": "m"}, "rubric_hash": r["rubric_hash"],
                    **({"state_hash": r["state_hash"]} if "state_hash" in r else {}),
                    "exposure": r["exposure"]})
    return out


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, list[dict]]:
    """The sample judged (a pass everywhere), and the sample with every output replaced."""
    folder = tmp_path_factory.mktemp("stale")
    states = folder / "states.jsonl"
    evalstream.build(SAMPLES / "cases.jsonl", states)
    verdicts = write(folder / "verdicts.jsonl", verdicts_of(states))
    changed = folder / "changed.jsonl"
    cases = [json.loads(x) for x in (SAMPLES / "cases.jsonl").read_text().splitlines()]
    for c in cases:
        c["output"] = "I have replaced this answer."
    write(changed, cases)
    return states, verdicts, changed, [json.loads(x) for x in verdicts.read_text().splitlines()]


def test_verdicts_over_changed_cases_are_stale_counted_listed_and_left_out(
        judged: tuple[Path, Path, Path, list[dict]]) -> None:
    states, verdicts, changed, records = judged
    fresh = evalstream.agree(verdicts, SAMPLES / "cases.jsonl")
    assert fresh.stale is not None and fresh.stale.counts.stale == 0
    assert fresh.stale.counts.fresh == len(records)
    stale = evalstream.agree(verdicts, changed)
    judge_verdicts = [v for v in records if "state_hash" in v]  # every judge rubric shows it
    assert stale.stale is not None
    assert (stale.stale.counts.state, stale.stale.counts.rubric) == (len(judge_verdicts), 0)
    # Exact verdicts carry no state: checked on their rubric alone, fresh.
    assert stale.stale.counts.fresh == len(records) - len(judge_verdicts)
    for r in stale.rubrics:
        fresh_r = next(x for x in fresh.rubrics if x.rubric == r.rubric)
        assert r.stale is not None
        if r.rubric == "booking-succeeded":
            assert r.all == fresh_r.all  # an exact rubric: nothing is stale
            continue
        # Left out of every figure: the labels are about the cases as they are now.
        assert r.all.pairs == 0 and r.all.stale == fresh_r.all.pairs
        assert r.all.coverage is not None and r.all.coverage.left_out["stale"] == r.all.stale
        assert r.all.confusion.pass_stale + r.all.confusion.fail_stale == r.all.stale
        assert len(r.examples.stale) == min(20, r.all.stale)
    # Said first on the screen, and --fail-on-stale makes it exit 1.
    paragraphs = [b.text for b in blocks(stale) if isinstance(b, Paragraph)]
    line = next(p for p in paragraphs if "are stale" in p)
    assert paragraphs.index(line) < next(i for i, p in enumerate(paragraphs)
                                         if p.startswith(str(verdicts)))
    assert f"{len(judge_verdicts)} of {len(records)} verdicts of {verdicts} are stale: " \
           f"{len(judge_verdicts)} judged another state than build makes of the case today" in line
    assert stale.exit_code == 0
    assert evalstream.agree(verdicts, changed, fail_on_stale=True).exit_code == 1
    assert evalstream.agree(verdicts, SAMPLES / "cases.jsonl", fail_on_stale=True).exit_code == 0


def test_build_s_output_says_the_same(judged: tuple[Path, Path, Path, list[dict]],
                                      tmp_path: Path) -> None:
    _, verdicts, changed, _ = judged
    states = tmp_path / "changed-states.jsonl"
    evalstream.build(changed, states)
    rebuilt = evalstream.agree(verdicts, changed)
    read = evalstream.agree(verdicts, changed, states=states)
    assert read.stale is not None and rebuilt.stale is not None
    assert read.stale.counts == rebuilt.stale.counts
    assert read.stale.against == f"build's output {states}"
    assert [r.all for r in read.rubrics] == [r.all for r in rebuilt.rubrics]
    with pytest.raises(evalstream.UsageError, match="give --states .* or --rubrics"):
        evalstream.agree(verdicts, changed, states=states, rubric_files=["builtin"])
    # The states file is an input: no report may replace it.
    with pytest.raises(evalstream.UsageError, match="the states and output paths are the same"):
        evalstream.agree(verdicts, changed, states=states, output=states)
    before = states.read_bytes()
    with pytest.raises(evalstream.UsageError, match="the cases and output paths are the same"):
        evalstream.compare(verdicts, verdicts, cases=changed, output=changed)
    assert states.read_bytes() == before


def test_another_rubric_and_a_check_no_longer_made(judged: tuple[Path, Path, Path, list[dict]],
                                                  tmp_path: Path) -> None:
    _, verdicts, _, records = judged
    # The rubric set with claim-support reworded: its verdicts were judged under another one.
    from evalstream._checks.rubrics import builtin_text

    text = builtin_text()
    edited = tmp_path / "rubrics.toml"
    edited.write_text(text.replace("Is every factual claim", "Is each factual claim"))
    report = evalstream.agree(verdicts, SAMPLES / "cases.jsonl", rubric_files=[edited])
    by = {r.rubric: r.stale for r in report.rubrics}
    claims = sum(1 for v in records if v["rubric_id"] == "claim-support")
    assert by["claim-support"] is not None and by["claim-support"].rubric == claims
    assert report.stale is not None and report.stale.counts.rubric == claims
    assert "give the --rubrics they were judged with" in " ".join(
        b.text for b in blocks(report) if isinstance(b, Paragraph))
    # A case that lost its tool events: build makes no tool-backed-claims check of it today.
    cases = [json.loads(x) for x in (SAMPLES / "cases.jsonl").read_text().splitlines()]
    first = next(c for c in cases if c.get("toolEvents"))
    del first["toolEvents"]
    write(tmp_path / "cases.jsonl", cases)
    report = evalstream.agree(verdicts, tmp_path / "cases.jsonl")
    gone = {r.rubric: r.examples.stale for r in report.rubrics}
    assert first["id"] in gone["tool-backed-claims"]
    # A verdict without hashes (another tool's) cannot be checked; nor one for a rubric the
    # set does not hold.
    bare = write(tmp_path / "bare.jsonl", [
        {"case_id": records[0]["case_id"], "rubric_id": records[0]["rubric_id"],
         "status": "pass"},
        {"case_id": records[0]["case_id"], "rubric_id": "not-a-rubric", "status": "pass",
         "rubric_hash": "a" * 32}])
    report = evalstream.agree(bare, SAMPLES / "cases.jsonl")
    assert report.stale is not None
    assert (report.stale.counts.not_checked, report.stale.counts.stale) == (2, 0)


def test_compare_counts_each_run_s_stale_verdicts(judged: tuple[Path, Path, Path, list[dict]],
                                                 ) -> None:
    _, verdicts, changed, records = judged
    report = evalstream.compare(verdicts, verdicts)
    assert report.stale_a is None  # nothing to check against: said, not guessed
    report = evalstream.compare(verdicts, verdicts, cases=changed)
    judge_verdicts = sum(1 for v in records if "state_hash" in v)
    assert report.stale_a is not None and report.stale_b is not None
    assert report.stale_a.counts.state == report.stale_b.counts.state == judge_verdicts
    assert report.summary.stale == judge_verdicts
    assert report.summary.compared == len(records)  # compared all the same: both saw the same
    assert evalstream.compare(verdicts, verdicts, cases=changed,
                              fail_on_stale=True).exit_code == 1
    assert evalstream.compare(verdicts, verdicts, cases=SAMPLES / "cases.jsonl",
                              fail_on_stale=True).exit_code == 0
    with pytest.raises(evalstream.UsageError, match="give --cases CASES with it"):
        evalstream.compare(verdicts, verdicts, rubric_files=["builtin"])


def test_view_lists_and_warns_about_stale_verdicts(judged: tuple[Path, Path, Path, list[dict]],
                                                  tmp_path: Path) -> None:
    from evalstream._view.index import Options, build
    from evalstream._view.lists import STATE_CHANGED, Lists

    _, verdicts, changed, records = judged
    judge_verdicts = sum(1 for v in records if "state_hash" in v)
    for states in (None, tmp_path / "changed-states.jsonl"):
        if states is not None:
            evalstream.build(changed, states)
        lists = Lists(build(Options(verdicts=str(verdicts), cases=str(changed),
                                    states=None if states is None else str(states))))
        assert "stale" in lists.available()
        assert dict(lists["stale"].counts(lists.index, "kind")) == {STATE_CHANGED: judge_verdicts}
    fresh = Lists(build(Options(verdicts=str(verdicts), cases=str(SAMPLES / "cases.jsonl"))))
    assert "stale" not in fresh.available() and len(fresh["stale"]) == 0
    from evalstream._view.coverage import warnings

    assert any(f"{judge_verdicts:,} of {len(records):,} verdicts are stale" in w
               for w in warnings(lists.index))


# -- issue 25 met issue 30 (the merge): the cases from several files ---------------------------
def test_stale_verdicts_from_several_case_files_are_those_of_one(
        judged: tuple[Path, Path, Path, list[dict]], tmp_path: Path) -> None:
    """The states agree, several runs side by side and view rebuild are made from the very
    records read across the case files, in order: the sample cut in three, the middle part's
    outputs replaced, gives the stale verdicts of the same cases in one file, no more, no
    fewer, and build's output of the parts says the same."""
    from evalstream._view.index import Options, build

    _, verdicts, changed, records = judged
    ours = (SAMPLES / "cases.jsonl").read_text().splitlines(keepends=True)
    replaced = changed.read_text().splitlines(keepends=True)
    cut = [(0, 16), (16, 32), (32, len(ours))]
    shards = []
    for i, (lo, hi) in enumerate(cut):
        shard = tmp_path / f"shard-{i}.jsonl"
        shard.write_text("".join((replaced if i == 1 else ours)[lo:hi]))
        shards.append(shard)
    whole = write(tmp_path / "whole.jsonl", [json.loads(x) for s in shards
                                             for x in s.read_text().splitlines()])
    one = evalstream.agree(verdicts, whole)
    several = evalstream.agree(verdicts, shards)
    glob = evalstream.agree(verdicts, str(tmp_path / "shard-*.jsonl"))
    assert one.stale is not None and several.stale is not None and glob.stale is not None
    middle = {json.loads(x)["id"] for x in replaced[16:32]}
    expected = sum(1 for v in records if "state_hash" in v and v["case_id"] in middle)
    assert 0 < expected < len(records)
    assert one.stale.counts.stale == several.stale.counts.stale == glob.stale.counts.stale \
        == expected
    assert [(r.rubric, r.all, sorted(r.examples.stale)) for r in several.rubrics] == \
        [(r.rubric, r.all, sorted(r.examples.stale)) for r in one.rubrics]
    assert {i for r in several.rubrics for i in r.examples.stale} <= middle
    # build's output of the parts, read instead of rebuilding: the same verdicts are stale.
    states = tmp_path / "states.jsonl"
    evalstream.build([str(s) for s in shards], states)
    read = evalstream.agree(verdicts, shards, states=states)
    assert read.stale is not None and read.stale.counts == several.stale.counts
    # Several runs side by side: each run's stale verdicts as agree finds them.
    side = evalstream.agree_judges([verdicts, verdicts], shards)
    assert [c.counts.stale for c in side.stale] == [expected, expected]
    # view: the stale codes of the index built from the parts are those of the one file.
    parts = build(Options(verdicts=str(verdicts), cases=" ".join(map(str, shards)),
                          case_inputs=list(map(str, shards))))
    single = build(Options(verdicts=str(verdicts), cases=str(whole)))
    assert parts.run.stale is not None and single.run.stale is not None
    assert list(parts.run.stale) == list(single.run.stale)
    assert sum(1 for code in parts.run.stale if code) == expected
