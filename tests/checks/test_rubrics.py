"""Rubric files: loading, every error at load, applicability, hashes."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._cases.rejects import Reject
from evalstream._checks import rubrics
from evalstream._checks.rubrics import RubricError
from evalstream._checks.state import PREAMBLE, question_text
from tests.helpers import ROOT, SAMPLES

JUDGE = '''
[[rubric]]
id = "r1"
question = "Is it good?"
shows = ["assistant_response", "user_input"]
'''


def load_text(tmp_path: Path, text: str) -> rubrics.RubricSet:
    path = tmp_path / "r.toml"
    path.write_text(text)
    return rubrics.load([str(path)])


def test_builtin_set() -> None:
    builtin = rubrics.builtin()
    assert builtin.ids == ["tool-backed-claims", "booking-succeeded", "claim-support",
                           "policy-compliance", "escalation", "task-success", "booking-claim",
                           "faithfulness", "instruction-following"]
    by_id = {r.id: r for r in builtin.rubrics}
    assert by_id["claim-support"].requires == ("reference_material",)
    assert by_id["faithfulness"].requires == ("reference_material",)
    assert by_id["booking-claim"].requires == ("tool_events",)
    assert by_id["task-success"].requires == by_id["instruction-following"].requires == ()
    assert by_id["policy-compliance"].requires == ("policy",)
    assert by_id["escalation"].requires == ("policy",)
    assert by_id["booking-succeeded"].kind == "exact"
    for r in builtin.rubrics:
        if r.kind == "judge":
            assert len(r.question) > 400  # real questions, not placeholders


@pytest.mark.parametrize("rubric", [r for r in rubrics.builtin().rubrics if r.kind == "judge"],
                         ids=lambda r: r.id)
def test_builtin_questions_open_alike_and_say_when_na_applies(rubric: rubrics.Rubric) -> None:
    # Every built-in question (the starter rubrics of issue 30 too) reaches the judge after
    # the untrusted-data preamble, which judge checks on every state it reads; opens with
    # the one question it asks; says when each status applies, `na` included (either when
    # it is allowed or that it is not); and ends by saying what the reason should quote.
    asked = question_text(rubric.question)
    assert asked.startswith(PREAMBLE + "\n\n") and PREAMBLE not in rubric.question
    first, *body = rubric.question.split("\n")
    assert first.endswith("?") and first.count("?") == 1 and body
    answer = next(line for line in body if line.startswith('Answer status "'))
    assert '"pass" if' in answer and '"fail" if' in answer
    assert ('do not answer "na"' in answer) != bool(re.search(r'"na" (only )?if ', answer))
    assert re.search(r"In reason, [^\n]+\.$", rubric.question)


def test_shows_are_kept_in_the_fixed_order(tmp_path: Path) -> None:
    (r,) = load_text(tmp_path, JUDGE).rubrics
    assert r.shows == ("user_input", "assistant_response")


def test_sample_rubric_file_loads() -> None:
    loaded = rubrics.load([str(SAMPLES / "rubrics.toml")])
    assert {r.kind for r in loaded.rubrics} == {"judge", "exact"}


@pytest.mark.parametrize(("text", "message"), [
    ("[[rubric]\nid = 1", r"r\.toml: not valid TOML"),
    ("[[rubric]]\nid = 'a b'\nquestion='q'\nshows=['policy']", r"rubric 1: the id 'a b' is not a valid rubric id; rubric ids must be non-empty, at most 512 characters, without whitespace or `/`"),
    (JUDGE + "colour = 'red'\n", r"rubric 1 \(`r1`\): unknown key\(s\) `colour`; a judge rubric takes"),
    (JUDGE.replace('"user_input"', '"user-input"'), r"names `user-input` \(did you mean `user_input`\?\), not a judge-state name; allowed: user_input, assistant_response"),
    (JUDGE + "requires = ['expected']\n", r"`requires` names `expected`, not a judge-state name"),
    (JUDGE.replace('shows = ["assistant_response", "user_input"]', 'shows = ["metadata"]'), r"`metadata`, not a judge-state name"),
    (JUDGE + JUDGE, r"rubric 2: id `r1` is defined twice"),
    (JUDGE.replace('"Is it good?"', '"   "'), r"`question` must be a non-empty string"),
    (JUDGE.replace('shows = ["assistant_response", "user_input"]', ""), r"`shows` is required"),
    (JUDGE.replace('shows = ["assistant_response", "user_input"]', "shows = []"), r"`shows` is empty"),
    (JUDGE + "kind = 'llm'\n", r"`kind` is 'llm'; allowed: \"judge\" \(default\), \"exact\""),
    (JUDGE + "when = { scenario = [] }\n", r"`when.scenario` must be a value or a non-empty list"),
    ("title = 'x'\n" + JUDGE, r"unknown top-level key\(s\) `title`"),
    ("", r"no \[\[rubric\]\] tables found"),
    ("[[rubric]]\nid='e'\nkind='exact'\n", r"an exact rubric needs a `check` condition"),
    ("[[rubric]]\nid='e'\nkind='exact'\ncheck={ called = 'x', status = 'y' }\n", r"`check` has keys \['called', 'status'\]"),
    ("[[rubric]]\nid='e'\nkind='exact'\ncheck={ last_call = 'x', field = 'result', equals = 1 }\n", r"`check.field` must start with input, output or error"),
    ("[[rubric]]\nid='e'\nkind='exact'\ncheck={ last_call = 'x', field = 'error', matches = '(' }\n", r"`check.matches` is not a valid regular expression"),
    ("[[rubric]]\nid='e'\nkind='exact'\ncheck={ all = [] }\n", r"`check.all` must be a non-empty list of conditions"),
    ("[[rubric]]\nid='e'\nkind='exact'\nquestion='q'\ncheck={ called = 'x' }\n", r"unknown key\(s\) `question`; an exact rubric takes"),
    (JUDGE + "allows_na = 'no'\n", r"rubric 1 \(`r1`\): `allows_na` is 'no'; it takes true \(the default: the judge may answer na\) or false \(pass or fail only\)"),
    ("[[rubric]]\nid='e'\nkind='exact'\nallows_na=false\ncheck={ called = 'x' }\n", r"unknown key\(s\) `allows_na`; an exact rubric takes"),
])
def test_errors_at_load(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(RubricError, match=message):
        load_text(tmp_path, text)


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text(JUDGE)
    (tmp_path / "b.toml").write_text(JUDGE)
    with pytest.raises(RubricError, match="rubric id `r1` is defined twice"):
        rubrics.load([str(tmp_path / "a.toml"), str(tmp_path / "b.toml")])


def test_missing_file() -> None:
    with pytest.raises(RubricError, match="nope.toml: cannot read the rubric file"):
        rubrics.load(["nope.toml"])


def test_applicability(tmp_path: Path) -> None:
    text = JUDGE + 'requires = ["policy"]\nwhen = { scenario = ["a", "b"], "x.y" = 3 }\n'
    (r,) = load_text(tmp_path, text).rubrics
    present = frozenset({"user_input", "assistant_response", "policy"})
    assert r.skip_reason(frozenset({"user_input"}), {}) == "requires policy"
    assert r.skip_reason(present, None) == "when scenario"
    assert r.skip_reason(present, {"scenario": "c", "x": {"y": 3}}) == "when scenario"
    assert r.skip_reason(present, {"scenario": "a", "x": {"y": 4}}) == "when x.y"
    assert r.skip_reason(present, {"scenario": "a", "x": {"y": True}}) == "when x.y"
    assert r.skip_reason(present, {"scenario": "a", "x": {"y": 3}}) is None


def test_nested_toml_keys_become_dotted_rules(tmp_path: Path) -> None:
    (r,) = load_text(tmp_path, JUDGE + "when = { source.kind = 'prod' }\n").rubrics
    assert [(k, path) for k, path, _ in r.when] == [("source.kind", ("source", "kind"))]


def test_hashes_change_with_what_the_judge_is_asked(tmp_path: Path) -> None:
    a = load_text(tmp_path, JUDGE)
    b = load_text(tmp_path, JUDGE.replace("good?", "good."))
    c = load_text(tmp_path, JUDGE + "# a comment\n")
    assert a.rubrics[0].hash != b.rubrics[0].hash
    assert a.rubrics[0].hash == c.rubrics[0].hash and a.hash == c.hash


def test_allows_na_is_read_and_changes_the_hash_only_when_false(tmp_path: Path) -> None:
    # Issue 25: a rubric says whether `na` is an answer; verdicts judged under the other
    # setting are stale (another rubric hash). Stated true, it is the default: same hash.
    plain, = load_text(tmp_path, JUDGE).rubrics
    said, = load_text(tmp_path, JUDGE + "allows_na = true\n").rubrics
    without, = load_text(tmp_path, JUDGE + "allows_na = false\n").rubrics
    assert plain.allows_na and said.allows_na and not without.allows_na
    assert plain.hash == said.hash != without.hash


def test_builtin_rubrics_that_always_apply_do_not_allow_na() -> None:
    # The questions of tool-backed-claims and policy-compliance say "do not answer na";
    # claim-support and escalation say when na applies, as the starter rubrics (issue 30) do.
    by_id = {r.id: r for r in rubrics.builtin().rubrics if r.kind == "judge"}
    assert {rid: r.allows_na for rid, r in by_id.items()} == {
        "tool-backed-claims": False, "claim-support": True, "policy-compliance": False,
        "escalation": True, "task-success": True, "booking-claim": True, "faithfulness": True,
        "instruction-following": True}
    for r in by_id.values():
        assert ('do not answer "na"' in r.question) == (not r.allows_na)


def test_starter_rubrics_state_allows_na_in_the_file() -> None:
    # The merge of issue 30 with issue 25: each starter rubric says in the TOML whether its
    # judge may answer na (true: its question says when), rather than leaving it to the default.
    import tomllib

    tables = {t["id"]: t for t in tomllib.loads(rubrics.builtin_text())["rubric"]}
    starters = ("task-success", "booking-claim", "faithfulness", "instruction-following")
    assert {rid: tables[rid].get("allows_na") for rid in starters} == dict.fromkeys(starters, True)


# Ids at and past every edge of the id rule: length, whitespace of every kind (a line or
# paragraph separator, NBSP, the ASCII separators str.isspace knows), `/`, controls, text
# that is not ASCII, and the 600-character id of issue 23 (item 18).
EDGE_IDS = ["r" * 512, "r" * 513, "r" * 600, "é" * 512, "é" * 513, "a b", "a\tb", "a\nb",
            "a\u2028b", "a\u00a0b", "a\x1cb", "a\u3000b", "a/b", "/", "a\x00b", "a\x1bb",
            "claim-support", "ünïcödé", "a.b:c"]


def _judge_reads(rid: str) -> bool:
    """Whether ``judge`` (and so ``batch prepare``, through the same reader) reads a judge
    state of this rubric id, as build writes it, without a reject."""
    from evalstream._build.states import judge_states
    from evalstream._judge.inputs import Reader

    valid = rubrics.load([_write(JUDGE)])
    (record,) = judge_states([{"id": "c1", "input": "i", "output": "o"}], valid)
    line = msgspec.json.encode(record).replace(b'"rubric_id":"r1"',
                                               b'"rubric_id":' + msgspec.json.encode(rid))
    (item,) = Reader().read_lines([line])
    return not isinstance(item, Reject)


def _write(text: str) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    return f.name


def _loads(rid: str) -> bool:
    # A TOML basic string: JSON's escapes, but astral characters raw (TOML refuses escaped
    # surrogate pairs) and DEL escaped (TOML refuses it raw).
    quoted = json.dumps(rid, ensure_ascii=False).replace("\x7f", "\\u007f")
    path = _write(JUDGE.replace('"r1"', quoted))
    try:
        loaded = rubrics.load([path])
    except RubricError as exc:
        assert "rubric ids must be non-empty, at most 512 characters, without whitespace " \
               "or `/`" in str(exc)
        return False
    finally:
        os.unlink(path)
    assert loaded.ids == [rid]
    return True


@pytest.mark.parametrize("rid", EDGE_IDS)
def test_a_rubric_id_loads_exactly_when_judge_reads_its_states(rid: str) -> None:
    assert _loads(rid) == _judge_reads(rid)


@settings(max_examples=150, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=8).map(lambda s: "r" + s)
       | st.integers(500, 530).map(lambda n: "x" * n))
def test_any_rubric_id_loads_exactly_when_judge_reads_its_states(rid: str) -> None:
    assert _loads(rid) == _judge_reads(rid)


BENCH = next((p for p in (ROOT.parent / "shared" / "bench" / "gen_cases.py",
                          Path("/work/shared/bench/gen_cases.py")) if p.exists()), None)


@pytest.mark.skipif(BENCH is None, reason="no ../shared/bench/gen_cases.py")
def test_the_seeds_labels_each_have_a_builtin_check(tmp_path: Path) -> None:
    # Issue 30: the benchmark generator's case-000017 carries expected.booking-claim, and
    # judge_states on it gave no booking-claim check. Every label of its first cases now
    # names a built-in rubric, and case 17 gets a booking-claim state.
    import subprocess
    import sys

    import evalstream

    out = tmp_path / "seed.jsonl"
    subprocess.run([sys.executable, str(BENCH), "--count", "40", "--out", str(out)], check=True,
                   capture_output=True)
    cases = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    seventeen = next(c for c in cases if c["id"] == "case-000017")
    assert "booking-claim" in seventeen["expected"]
    checks = {r.rubric_id for r in evalstream.judge_states([seventeen])}
    assert "booking-claim" in checks
    ids = set(rubrics.builtin().ids)
    assert {rid for c in cases for rid in c.get("expected", {})} <= ids
