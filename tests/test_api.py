"""The public Python API, used as a notebook or a judge loop would: no CLI, files optional."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
import xxhash

import evalstream
from tests.helpers import ROOT, SAMPLES


def test_every_public_name_resolves_and_is_documented() -> None:
    for name in evalstream.__all__:
        value = getattr(evalstream, name)
        if callable(value) and not isinstance(value, type):
            assert value.__doc__, name
    with pytest.raises(AttributeError):
        evalstream.NoSuchThing  # noqa: B018


def test_import_is_cheap() -> None:
    # `python -m evalstream --help` imports the package: the API must not load its work.
    code = ("import sys, evalstream; heavy = {'msgspec', 'polars', 'rich', 'numpy', 'tiktoken'};"
            "print(sorted(heavy & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60, check=True).stdout
    assert out.strip() == "[]"


def test_read_cases_from_a_file_and_from_lines() -> None:
    items = list(evalstream.read_cases(SAMPLES / "bad.jsonl"))
    rejects = [i for i in items if isinstance(i, evalstream.Reject)]
    cases = [i for i in items if isinstance(i, evalstream.Case)]
    assert len(rejects) == 21 and len(cases) == 1
    assert rejects[0].line == 1 and rejects[0].path == "$"

    lines = ['{"id":"a","input":"i","output":"o"}', "", "nope\n",
             b'{"id":"a","input":"i","output":"o"}']
    got = list(evalstream.read_cases(lines))
    assert isinstance(got[0], evalstream.Case) and got[0].id == "a"
    assert [(r.line, r.path) for r in got[1:]] == [(3, "$"), (4, "$.id")]
    assert "already used on line 1" in got[2].error


def test_judge_states_match_what_build_writes(tmp_path: Path) -> None:
    cases = [json.loads(line) for line in (SAMPLES / "cases.jsonl").read_text().splitlines()]
    records = list(evalstream.judge_states(cases))
    written = (ROOT / "tests" / "golden" / "samples.states.jsonl").read_bytes().splitlines()
    assert [msgspec.json.encode(r) for r in records] == written
    judge = next(r for r in records if isinstance(r, evalstream.CheckRecord))
    assert xxhash.xxh3_128_hexdigest(bytes(judge.state)) == judge.state_hash
    assert set(msgspec.json.decode(judge.state)) == set(judge.exposure.shown)
    # Decoded cases give the same records as dicts.
    decoded = [c for c in evalstream.read_cases(SAMPLES / "cases.jsonl")]
    assert list(evalstream.judge_states(decoded)) == records


def test_judge_states_refuses_an_invalid_case_with_the_reject_sentence() -> None:
    with pytest.raises(evalstream.InvalidCaseError, match=r"`\$.input` must be a string"):
        list(evalstream.judge_states([{"id": "c1", "input": 5, "output": "o"}]))
    bad = {"id": "c2", "input": "i", "output": "o",
           "messages": [{"id": "m", "role": "user", "content": "a"},
                        {"id": "m", "role": "user", "content": "b"}]}
    with pytest.raises(evalstream.InvalidCaseError, match="repeats the message id") as caught:
        list(evalstream.judge_states([bad]))
    assert isinstance(caught.value, evalstream.EvalstreamError)
    assert caught.value.reject.path == "$.messages[1].id"


def test_load_rubrics_builtin_and_files() -> None:
    builtin = evalstream.load_rubrics()
    assert "claim-support" in builtin.ids
    mine = evalstream.load_rubrics([SAMPLES / "rubrics.toml"])
    assert mine.sources == (str(SAMPLES / "rubrics.toml"),)
    with pytest.raises(evalstream.RubricError):
        evalstream.load_rubrics([SAMPLES / "cases.jsonl"])
    records = list(evalstream.judge_states(
        [{"id": "c1", "input": "i", "output": "o", "context": [{"id": "p", "text": "t"}]}],
        mine, max_tokens=32_000))
    assert {r.rubric_id for r in records} <= set(mine.ids)


def test_build_validate_stats_agree_compare(tmp_path: Path) -> None:
    report = evalstream.build(SAMPLES / "cases.jsonl", tmp_path / "states.jsonl")
    assert report.counts.cases == 48 and report.exit_code == 0
    assert (tmp_path / "states.jsonl").read_bytes() == \
        (ROOT / "tests" / "golden" / "samples.states.jsonl").read_bytes()
    assert (tmp_path / "states.report.json").exists()

    checked = evalstream.validate(SAMPLES / "bad.jsonl")
    assert checked.counts.rejected == 21 and checked.exit_code == 1
    assert not list(tmp_path.glob("bad*"))  # validate writes nothing unless asked

    s = evalstream.stats(SAMPLES / "cases.jsonl", by="scenario,split")
    assert s.overview.cases == 48 and s.by == ["scenario", "split"]

    a = evalstream.agree(SAMPLES / "verdicts.jsonl", SAMPLES / "cases.jsonl", by="scenario")
    assert a.by == "scenario" and a.verdicts.verdicts == a.verdicts.lines == 111
    assert {r.rubric for r in a.rubrics} <= set(evalstream.load_rubrics().ids)
    assert all(r.by_group for r in a.rubrics)
    c = evalstream.compare(SAMPLES / "verdicts.jsonl", SAMPLES / "verdicts-b.jsonl")
    assert c.summary.paired > 0 and c.run_a.path.endswith("verdicts.jsonl")

    with pytest.raises(TypeError):
        evalstream.build(SAMPLES / "cases.jsonl", tmp_path / "x.jsonl", no_such_option=1)
    with pytest.raises(evalstream.UsageError):
        evalstream.build(SAMPLES / "cases.jsonl", SAMPLES / "cases.jsonl")


def test_batch_prepare_and_collect(tmp_path: Path) -> None:
    evalstream.build(SAMPLES / "cases.jsonl", tmp_path / "states.jsonl")
    prepared = evalstream.batch_prepare(tmp_path / "states.jsonl", tmp_path / "batch",
                                        "gpt-4.1-mini", max_requests_per_file=60)
    assert isinstance(prepared, evalstream.PrepareReport)
    assert (prepared.counts.judge_states, len(prepared.files), prepared.exit_code) == (101, 2, 0)
    # Results as the OpenAI Batch API writes them: every request answered `na`.
    answer = {"choices": [{"message": {"content": '{"status": "na", "reason": "n/a"}'},
                           "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 10, "completion_tokens": 2}}
    with open(tmp_path / "output.jsonl", "w") as out:
        for path in sorted((tmp_path / "batch").glob("requests-*.jsonl")):
            for line in path.read_text().splitlines():
                out.write(json.dumps({"custom_id": json.loads(line)["custom_id"], "response": {
                    "status_code": 200, "request_id": "req_1", "body": answer},
                    "error": None}) + "\n")
    collected = evalstream.batch_collect(tmp_path / "batch", tmp_path / "verdicts.jsonl",
                                         [tmp_path / "output.jsonl"], price_in=0.2,
                                         price_out=0.8)
    assert isinstance(collected, evalstream.CollectReport)
    assert collected.by_status["na"] == 101 and collected.counts.exact_verdicts == 11
    assert collected.cost_usd == round((1010 * 0.2 + 202 * 0.8) / 1e6, 6)
    a = evalstream.agree(tmp_path / "verdicts.jsonl", SAMPLES / "cases.jsonl")
    assert a.verdicts.verdicts == 112
    with pytest.raises(evalstream.UsageError):
        evalstream.batch_prepare(tmp_path / "states.jsonl", tmp_path / "batch", "m")


def test_export_view(tmp_path: Path) -> None:
    report = evalstream.export_view(SAMPLES / "verdicts.jsonl", SAMPLES / "cases.jsonl",
                                    tmp_path / "review", limit=5,
                                    compare=SAMPLES / "verdicts-b.jsonl")
    assert isinstance(report, evalstream.ExportReport) and report.exit_code == 0
    assert report.lists["disagreements"].entries == 7 and report.limit == 5
    assert (tmp_path / "review" / "index.html").is_file()
    assert len(list((tmp_path / "review" / "checks").iterdir())) == report.checks
    with pytest.raises(evalstream.UsageError, match="--limit must be 1 or more"):
        evalstream.export_view(SAMPLES / "verdicts.jsonl", SAMPLES / "cases.jsonl",
                               tmp_path / "other", limit=0)
    with pytest.raises(evalstream.RubricError):
        evalstream.export_view(SAMPLES / "verdicts.jsonl", SAMPLES / "cases.jsonl",
                               tmp_path / "other", rubric_files=[SAMPLES / "cases.jsonl"])
